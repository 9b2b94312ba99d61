//! Real traffic across the routed testbed: UDP probes between host pairs, the ECMP
//! spread of many flows over a leaf's uplinks, and a rate blast across shaped links.

use super::*;

/// Outcome of one all-pairs probe round.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeRound {
    pub family: Family,
    /// Pairs probed.
    pub pairs: usize,
    /// Datagrams sent (first tries and retries).
    pub sent: usize,
    /// Pairs whose probe arrived.
    pub received: usize,
    /// Pairs whose probe never arrived (src, dst host names, plane).
    pub missing: Vec<(String, String, u16)>,
    /// Per plane that had pairs: (plane, pairs, received).
    pub per_plane: Vec<(u16, usize, usize)>,
    /// From the first send to the last arrival (or the timeout).
    pub elapsed_s: f64,
}

impl ProbeRound {
    pub fn ok(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Per-uplink transmit counts of one leaf during a spread test.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Spread {
    pub family: Family,
    pub src: String,
    pub dst: String,
    pub leaf: String,
    /// Whether `topo` says `src` reaches `dst` (else no flow is expected to arrive).
    pub reachable: bool,
    /// Flows (distinct source ports) sent, and how many arrived.
    pub flows: usize,
    pub delivered: usize,
    /// (interface, peer switch, tx packets during the test, link up).
    pub uplinks: Vec<(String, String, u64, bool)>,
}

impl Spread {
    /// Uplinks that carried at least one probe.
    pub fn used(&self) -> usize {
        self.uplinks.iter().filter(|u| u.2 > 0).count()
    }

    /// max / mean of the tx counts over the live uplinks (1.0 = perfect balance).
    pub fn imbalance(&self) -> f64 {
        let live: Vec<u64> = self.uplinks.iter().filter(|u| u.3).map(|u| u.2).collect();
        let sum: u64 = live.iter().sum();
        if live.is_empty() || sum == 0 {
            return f64::NAN;
        }
        *live.iter().max().expect("non-empty") as f64 / (sum as f64 / live.len() as f64)
    }
}

/// One host's probe sockets of one family (opened inside its namespace).
#[derive(Debug)]
pub(super) struct Sock {
    pub(super) addr: IpAddr,
    pub(super) rx: UdpSocket,
    pub(super) tx: UdpSocket,
}

/// One host's probe sockets in one plane.
#[derive(Debug)]
pub(super) struct PlaneSock {
    pub(super) v4: Sock,
    pub(super) v6: Option<Sock>,
}

/// One host's probe sockets, per plane it has a port in.
#[derive(Debug)]
pub(super) struct HostSock {
    pub(super) planes: Vec<Option<PlaneSock>>,
}

impl HostSock {
    pub(super) fn get(&self, fam: Family, plane: u16) -> Option<&Sock> {
        let p = self.planes.get(plane as usize)?.as_ref()?;
        match fam {
            Family::V4 => Some(&p.v4),
            Family::V6 => p.v6.as_ref(),
        }
    }
}

/// A probe path: source host, destination host, plane (multi-plane fabrics: one NIC
/// port per plane; a probe stays in its plane).
pub type Lane = (NodeId, NodeId, u16);

/// Outcome of [`RoutedTestbed::blast`]: one UDP flow at full speed for a while.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Blast {
    pub family: Family,
    pub src: String,
    pub dst: String,
    /// UDP payload bytes per datagram.
    pub payload: usize,
    /// Ethernet frame bytes per datagram (payload + UDP + IP + Ethernet headers), what
    /// tbf counts.
    pub frame: usize,
    /// How long the sender sent, in s.
    pub send_s: f64,
    pub sent: u64,
    pub received: u64,
    /// Received frame rate between the first and the last arrival, in Mb/s.
    pub rx_mbps: f64,
}

impl RoutedTestbed {
    /// Send UDP datagrams of `payload` bytes from `src` to `dst` in family `fam` as fast
    /// as one blocking socket can for `dur` (a shaped fabric back-pressures the sender
    /// through its socket buffer), count what arrives, and measure the arrival rate in
    /// Ethernet frame bytes (what tbf meters) between the first and the last arrival.
    pub fn blast(
        &self,
        fam: Family,
        src: NodeId,
        dst: NodeId,
        dur: Duration,
        payload: usize,
    ) -> Result<Blast> {
        let missing = || Error::Invalid(format!("the testbed carries no {fam}"));
        let from = self.host_addr(src, fam).ok_or_else(missing)?;
        let to = self.host_addr(dst, fam).ok_or_else(missing)?;
        let (tx, rx) = (
            in_netns(&self.ns[src.idx()], || {
                UdpSocket::bind(SocketAddr::new(from, 0)).map_err(io(format!("bind [{from}]:0")))
            })??,
            in_netns(&self.ns[dst.idx()], || {
                UdpSocket::bind(SocketAddr::new(to, BLAST_PORT))
                    .map_err(io(format!("bind [{to}]:{BLAST_PORT}")))
            })??,
        );
        set_rcvbuf(&rx, 8 << 20)?;
        rx.set_read_timeout(Some(Duration::from_millis(300)))
            .map_err(io("set blast socket timeout"))?;
        let receiver = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            let (mut n, mut first, mut last) = (0u64, None::<Instant>, None::<Instant>);
            let deadline = Instant::now() + dur + Duration::from_secs(3);
            while Instant::now() < deadline {
                match rx.recv(&mut buf) {
                    Ok(_) => {
                        let now = Instant::now();
                        first.get_or_insert(now);
                        last = Some(now);
                        n += 1;
                    }
                    // Quiet for 300 ms after traffic: the sender is done.
                    Err(_) if first.is_some() => break,
                    Err(_) => {}
                }
            }
            (n, first, last)
        });
        let msg = vec![0x5au8; payload];
        let dst_sa = SocketAddr::new(to, BLAST_PORT);
        let t0 = Instant::now();
        let mut sent = 0u64;
        while t0.elapsed() < dur {
            if tx.send_to(&msg, dst_sa).is_ok() {
                sent += 1;
            }
        }
        let send_s = secs(t0);
        let (received, first, last) = receiver
            .join()
            .map_err(|_| Error::Invalid("blast receiver thread panicked".into()))?;
        let frame = payload
            + 8
            + 14
            + match fam {
                Family::V4 => 20,
                Family::V6 => 40,
            };
        let rx_mbps = match (first, last) {
            (Some(a), Some(b)) if received > 1 && b > a => {
                (received - 1) as f64 * frame as f64 * 8.0 / (b - a).as_secs_f64() / 1e6
            }
            _ => 0.0,
        };
        Ok(Blast {
            family: fam,
            src: self.fabric.node_name(src).to_string(),
            dst: self.fabric.node_name(dst).to_string(),
            payload,
            frame,
            send_s,
            sent,
            received,
            rx_mbps,
        })
    }

    /// Ordered host pairs with a port in a common plane, per such plane, split by
    /// whether `topo` says they reach each other there now.
    pub(super) fn lanes(&self, reachable: bool) -> Vec<Lane> {
        let mut v = Vec::new();
        for p in 0..self.fabric.num_planes() as u16 {
            for s in self.fabric.hosts() {
                if self.fabric.attachment(s, p).is_none() {
                    continue;
                }
                for d in self.fabric.hosts() {
                    if s != d
                        && self.fabric.attachment(d, p).is_some()
                        && self.routes.plane_reaches(s, d, p) == reachable
                    {
                        v.push((s, d, p));
                    }
                }
            }
        }
        v
    }

    /// Ordered host pairs (per common plane) `topo` says can reach each other now.
    pub fn reachable_pairs(&self) -> Vec<Lane> {
        self.lanes(true)
    }

    /// Ordered host pairs (per common plane) `topo` says cannot reach each other now.
    pub fn unreachable_pairs(&self) -> Vec<Lane> {
        self.lanes(false)
    }

    pub(super) fn payload(&self, src: NodeId, dst: NodeId) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&self.round.to_be_bytes());
        b[8..12].copy_from_slice(&src.0.to_be_bytes());
        b[12..16].copy_from_slice(&dst.0.to_be_bytes());
        b
    }

    /// Drain every host's probe sockets of family `fam`; calls `seen(src, dst, plane)`
    /// for this round's probes (the plane is the receiving socket's).
    pub(super) fn drain(&self, fam: Family, mut seen: impl FnMut(NodeId, NodeId, u16)) {
        let mut buf = [0u8; 64];
        for (i, h) in self.hosts.iter().enumerate() {
            for p in 0..h.planes.len() as u16 {
                let Some(sock) = h.get(fam, p) else { continue };
                while let Ok((n, _)) = sock.rx.recv_from(&mut buf) {
                    if n != 16 {
                        continue;
                    }
                    let w =
                        |k: usize| u32::from_be_bytes(buf[k..k + 4].try_into().expect("4 bytes"));
                    if w(0) != MAGIC || w(4) != self.round || w(12) != i as u32 {
                        continue;
                    }
                    seen(NodeId(w(8)), NodeId(w(12)), p);
                }
            }
        }
    }

    /// Send one UDP probe per pair (resent every `retry` while missing) and wait until
    /// all arrived or `timeout` passed.
    pub fn probe_round(
        &mut self,
        fam: Family,
        pairs: &[Lane],
        retry: Duration,
        timeout: Duration,
    ) -> ProbeRound {
        self.probe_rounds(&[fam], pairs, retry, timeout)
            .pop()
            .expect("one family")
    }

    /// [`Self::probe_round`] for several families at once (all probes in flight
    /// together); one [`ProbeRound`] per family, in the order given, each with the time
    /// of its own last arrival. Families the testbed does not carry report every pair
    /// missing.
    pub fn probe_rounds(
        &mut self,
        fams: &[Family],
        pairs: &[Lane],
        retry: Duration,
        timeout: Duration,
    ) -> Vec<ProbeRound> {
        self.round = self.round.wrapping_add(1);
        let t0 = Instant::now();
        let mut missing: Vec<HashSet<Lane>> = fams
            .iter()
            .map(|_| pairs.iter().copied().collect())
            .collect();
        let mut sent = vec![0; fams.len()];
        let mut done_at = vec![t0; fams.len()];
        let mut last_send: Option<Instant> = None;
        loop {
            if last_send.is_none_or(|t| t.elapsed() >= retry) {
                for (k, &fam) in fams.iter().enumerate() {
                    for &(s, d, p) in pairs {
                        if !missing[k].contains(&(s, d, p)) {
                            continue;
                        }
                        let (Some(from), Some(to)) = (
                            self.hosts[s.idx()].get(fam, p),
                            self.hosts[d.idx()].get(fam, p),
                        ) else {
                            continue;
                        };
                        // A send error (e.g. no route yet) counts as a lost probe.
                        let _ = from
                            .tx
                            .send_to(&self.payload(s, d), SocketAddr::new(to.addr, PROBE_PORT));
                        sent[k] += 1;
                    }
                }
                last_send = Some(Instant::now());
            }
            for (k, &fam) in fams.iter().enumerate() {
                let before = missing[k].len();
                let m = &mut missing[k];
                self.drain(fam, |s, d, p| {
                    m.remove(&(s, d, p));
                });
                if missing[k].len() < before {
                    done_at[k] = Instant::now();
                }
            }
            if missing.iter().all(|m| m.is_empty()) || t0.elapsed() >= timeout {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let end = Instant::now();
        fams.iter()
            .enumerate()
            .map(|(k, &family)| {
                let mut miss: Vec<Lane> = missing[k].iter().copied().collect();
                miss.sort();
                let done = if miss.is_empty() { done_at[k] } else { end };
                let mut per_plane: Vec<(u16, usize, usize)> = Vec::new();
                for &(_, _, p) in pairs {
                    match per_plane.iter_mut().find(|x| x.0 == p) {
                        Some(x) => x.1 += 1,
                        None => per_plane.push((p, 1, 0)),
                    }
                }
                per_plane.sort();
                for x in &mut per_plane {
                    x.2 = x.1 - miss.iter().filter(|m| m.2 == x.0).count();
                }
                ProbeRound {
                    family,
                    pairs: pairs.len(),
                    sent: sent[k],
                    received: pairs.len() - miss.len(),
                    missing: miss
                        .into_iter()
                        .map(|(s, d, p)| {
                            (
                                self.fabric.node_name(s).to_string(),
                                self.fabric.node_name(d).to_string(),
                                p,
                            )
                        })
                        .collect(),
                    elapsed_s: (done - t0).as_secs_f64(),
                    per_plane,
                }
            })
            .collect()
    }

    pub(super) fn uplinks(&self, leaf: NodeId) -> Vec<topo::Port> {
        (0..self.fabric.degree(leaf) as topo::Port)
            .filter(|&p| !self.fabric.is_host(self.fabric.peer(leaf, p)))
            .collect()
    }

    pub(super) fn tx_counts(&self, n: NodeId) -> Result<Vec<(String, u64)>> {
        Ok(self.nl[n.idx()]
            .stats()?
            .into_iter()
            .map(|(name, s)| (name, s.tx_packets))
            .collect())
    }

    /// Send `flows` probes of family `fam` from `src` to `dst`, each from its own socket
    /// (distinct source port), and count what each uplink of `src`'s leaf transmitted
    /// meanwhile.
    pub fn spread(
        &mut self,
        fam: Family,
        src: NodeId,
        dst: NodeId,
        flows: usize,
    ) -> Result<Spread> {
        let f = &self.fabric;
        let leaf = f
            .attachment(src, 0)
            .ok_or_else(|| Error::Invalid(format!("{} is not attached", f.node_name(src))))?
            .leaf;
        let missing = || Error::Invalid(format!("the testbed carries no {fam}"));
        let addr = self.hosts[src.idx()].get(fam, 0).ok_or_else(missing)?.addr;
        let to = SocketAddr::new(
            self.hosts[dst.idx()].get(fam, 0).ok_or_else(missing)?.addr,
            PROBE_PORT,
        );
        let socks = in_netns(&self.ns[src.idx()], || -> Result<Vec<UdpSocket>> {
            (0..flows)
                .map(|_| {
                    UdpSocket::bind(SocketAddr::new(addr, 0))
                        .map_err(io(format!("bind [{addr}]:0")))
                })
                .collect()
        })??;
        self.round = self.round.wrapping_add(1);
        let before = self.tx_counts(leaf)?;
        let msg = self.payload(src, dst);
        let mut delivered = 0;
        for (i, s) in socks.iter().enumerate() {
            let _ = s.send_to(&msg, to);
            // Drain as we go so a small receive buffer never drops a flow.
            if i % 16 == 15 {
                self.drain(fam, |s, d, p| {
                    if (s, d, p) == (src, dst, 0) {
                        delivered += 1;
                    }
                });
            }
        }
        let t0 = Instant::now();
        while delivered < flows && t0.elapsed() < Duration::from_secs(2) {
            self.drain(fam, |s, d, p| {
                if (s, d, p) == (src, dst, 0) {
                    delivered += 1;
                }
            });
            std::thread::sleep(Duration::from_micros(500));
        }
        let after = self.tx_counts(leaf)?;
        let get = |v: &[(String, u64)], n: &str| v.iter().find(|x| x.0 == n).map_or(0, |x| x.1);
        let uplinks = self
            .uplinks(leaf)
            .into_iter()
            .map(|p| {
                let name = ifname(p);
                let up = self.routes.link_is_up(self.fabric.port_link(leaf, p));
                (
                    name.clone(),
                    self.fabric.node_name(self.fabric.peer(leaf, p)).to_string(),
                    get(&after, &name).saturating_sub(get(&before, &name)),
                    up,
                )
            })
            .collect();
        Ok(Spread {
            family: fam,
            reachable: self.routes.plane_reaches(src, dst, 0),
            src: self.fabric.node_name(src).to_string(),
            dst: self.fabric.node_name(dst).to_string(),
            leaf: self.fabric.node_name(leaf).to_string(),
            flows,
            delivered,
            uplinks,
        })
    }
}
