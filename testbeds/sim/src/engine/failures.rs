//! Failures: validating the scenario's failures, taking ports down (queued packets are
//! lost), restoring them, and re-routing after the detection delay.

use super::*;

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn validate_failures(&mut self) -> Result<(), SimError> {
        for (i, f) in self.failures.clone().iter().enumerate() {
            let ports: Vec<u32> = match f.target {
                FailureTarget::Link(a, b) => {
                    let n = self.net.nodes();
                    if a >= n || b >= n {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("node {} does not exist ({n} nodes)", a.max(b)),
                        });
                    }
                    let Some(p) = self.net.port_to(a, b) else {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("no link between nodes {a} and {b}"),
                        });
                    };
                    vec![p, self.net.port_peer[p as usize]]
                }
                FailureTarget::Switch(s) => {
                    if s < self.net.hosts || s >= self.net.nodes() {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("node {s} is not a switch"),
                        });
                    }
                    self.net
                        .ports_of(s)
                        .flat_map(|p| [p, self.net.port_peer[p as usize]])
                        .collect()
                }
            };
            self.failed_ports[i] = ports;
        }
        Ok(())
    }

    pub(super) fn fail(&mut self, i: usize) {
        let ports = self.failed_ports[i].clone();
        for p in ports {
            let pu = p as usize;
            if !self.up[pu] {
                continue;
            }
            self.up[pu] = false;
            // Queued packets on a dead port are lost.
            let node = self.net.port_node[pu];
            let is_switch = !self.net.is_host(node);
            let mut lost = Vec::new();
            while let Some(i) = self.port[pu].ctrl_q.pop(&mut self.pkts) {
                lost.push(i);
            }
            for c in 0..self.nclass {
                let k = pu * self.nclass + c;
                while let Some(i) = self.cq[k].q.pop(&mut self.pkts) {
                    lost.push(i);
                }
                self.cq[pu * self.nclass + c].bytes = 0;
            }
            while let Some(i) = self.port[pu].pause_q.pop(&mut self.pkts) {
                self.free.push(i);
            }
            self.port[pu].qtotal = 0;
            if self.kx.per_port {
                self.kx.ctrl_bytes[pu] = 0;
            }
            for pid in lost {
                let pk = self.pkts[pid as usize];
                if is_switch {
                    self.node_buf[node as usize] -= pk.wire as u64;
                    if self.cfg.pfc && pk.kind == K_DATA && pk.flags & F_TRIM == 0 {
                        let prio = self.prio_of[pk.class as usize];
                        let now = Instant::from_picos(self.now);
                        if let Some(fr) = self.pfc_in[pk.port as usize].on_dequeue(
                            now,
                            prio,
                            Bytes(pk.wire as u64),
                        ) {
                            self.send_pfc(pk.port, fr);
                        }
                    }
                }
                self.t.drops_failure += 1;
                self.pc[pu].drops_failure += 1;
                self.release(pid);
            }
        }
        self.t.failures += 1;
        self.emit_failure(i, true);
    }

    pub(super) fn restore(&mut self, i: usize) {
        let ports = self.failed_ports[i].clone();
        for p in &ports {
            self.up[*p as usize] = true;
            self.pfc_out[*p as usize] = PfcEgress::new(self.net.port_rate[*p as usize]);
        }
        for p in ports {
            self.try_tx(p);
        }
        self.emit_failure(i, false);
    }

    /// Recompute routes around every port that is down now (failure `i`'s detection
    /// delay has passed), and say what changed.
    pub(super) fn reroute(&mut self, i: usize) {
        let before = self.events_on.then(|| self.route_fingerprints());
        self.recompute_routes();
        if let Some(before) = before {
            self.emit_reroute(i, before);
        }
    }

    fn recompute_routes(&mut self) {
        match &mut self.router {
            Router::Topo(r) => {
                let f = self.fabric.as_ref().expect("topo router has a fabric");
                // Links down now, by topo link id.
                let mut down = Vec::new();
                let mut upl = Vec::new();
                for n in 0..f.num_nodes() as u32 {
                    for (port, (_peer, link)) in f.ports(topo::NodeId(n)).enumerate() {
                        let g = self.net.port_off[n as usize] + port as u32;
                        if !self.up[g as usize] {
                            down.push(link);
                        } else {
                            upl.push(link);
                        }
                    }
                }
                down.sort_unstable();
                down.dedup();
                upl.sort_unstable();
                upl.dedup();
                let restored: Vec<topo::LinkId> = r
                    .failed_links()
                    .filter(|l| down.binary_search(l).is_err())
                    .collect();
                if !restored.is_empty() {
                    r.restore_links(f, &restored);
                }
                let newly: Vec<topo::LinkId> =
                    down.iter().copied().filter(|&l| r.link_is_up(l)).collect();
                if !newly.is_empty() {
                    r.fail_links(f, &newly);
                }
            }
            Router::Bfs(r) => *r = BfsRoutes::compute(&self.net, &self.up),
            Router::Static(_) => {}
        }
        self.t.reroutes += 1;
        self.paths.clear();
        // Per-flow NIC pins may point at a dead port now.
        if self.cfg.lb.per_flow() {
            for fl in &mut self.flows {
                let ports = self.net.ports_of(fl.src);
                let n = ports.len() as u64;
                if n > 1 && !self.up[(ports.start + fl.pin as u32) as usize] {
                    for k in 0..n {
                        let cand = ((fl.hash + k) % n) as u8;
                        if self.up[(ports.start + cand as u32) as usize] {
                            fl.pin = cand;
                            break;
                        }
                    }
                }
            }
        }
        for h in 0..self.net.hosts {
            self.kick_host(h);
        }
    }
}

/// Injecting failures into a running simulation (between [`Sim::run_until`] calls).
impl<Q: EventQueue> Sim<Q> {
    /// Takes `link` down now (packets queued on it are lost, packets reaching it are
    /// dropped); routing reacts after `detect`, through the same path as a scenario's
    /// failures. Returns the failure's index for [`Self::restore_failure`].
    pub fn fail_link(&mut self, link: topo::LinkId, detect: Duration) -> Result<usize, SimError> {
        let i = self.failures.len();
        let bad = |message: String| SimError::BadFailure { index: i, message };
        let Some(p) = self.port_link.iter().position(|&l| l == link.0) else {
            return Err(bad(format!(
                "link {} does not exist ({} links)",
                link.0,
                self.port_link.len() / 2
            )));
        };
        let peer = self.net.port_peer[p];
        let target = FailureTarget::Link(self.net.port_node[p], self.net.port_node[peer as usize]);
        self.inject(target, vec![p as u32, peer], detect)
    }

    /// Takes the switch named `name` down now (all its links); routing reacts after
    /// `detect`. Returns the failure's index for [`Self::restore_failure`].
    pub fn fail_switch(&mut self, name: &str, detect: Duration) -> Result<usize, SimError> {
        let i = self.failures.len();
        let node = match &self.fabric {
            Some(f) => f.name_index().get(name).map(|n| n.0),
            None => name.strip_prefix("switch").and_then(|n| n.parse().ok()),
        };
        let s = match node {
            Some(s) if s >= self.net.hosts && s < self.net.nodes() => s,
            _ => {
                return Err(SimError::BadFailure {
                    index: i,
                    message: format!("no switch named `{name}` (names as in the fabric map)"),
                });
            }
        };
        let ports = self
            .net
            .ports_of(s)
            .flat_map(|p| [p, self.net.port_peer[p as usize]])
            .collect();
        self.inject(FailureTarget::Switch(s), ports, detect)
    }

    /// Brings failure `i` back now; routing reacts after its detection delay.
    pub fn restore_failure(&mut self, i: usize) -> Result<(), SimError> {
        let bad = |message: &str| SimError::BadFailure {
            index: i,
            message: message.into(),
        };
        if self.finished {
            return Err(bad("the run has finished"));
        }
        let Some(f) = self.failures.get_mut(i) else {
            return Err(bad("no such failure"));
        };
        if f.restore.is_some() {
            return Err(bad("already restored (or its restore is scheduled)"));
        }
        f.restore = Some(Instant::from_picos(self.now));
        let detect = f.detect.as_picos();
        self.q.push(self.now, EV_RESTORE, i as u32);
        self.q.push(self.now + detect, EV_REROUTE, i as u32);
        Ok(())
    }

    fn inject(
        &mut self,
        target: FailureTarget,
        ports: Vec<u32>,
        detect: Duration,
    ) -> Result<usize, SimError> {
        let i = self.failures.len();
        if self.finished {
            return Err(SimError::BadFailure {
                index: i,
                message: "the run has finished".into(),
            });
        }
        if i as u32 > crate::queue::MAX_ID {
            return Err(SimError::TooLarge(format!("{i} failures")));
        }
        self.failures.push(FailureSpec {
            at: Instant::from_picos(self.now),
            target,
            detect,
            restore: None,
        });
        self.failed_ports.push(ports);
        self.q.push(self.now, EV_FAIL, i as u32);
        self.q
            .push(self.now + detect.as_picos(), EV_REROUTE, i as u32);
        Ok(i)
    }
}
