//! Building the routed testbed: namespaces, veth pairs, shaping, addresses, routes, sockets.

use super::*;

/// Figures of building the testbed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SetupStats {
    pub namespaces: usize,
    pub veths: usize,
    pub addresses: usize,
    pub routes: usize,
    /// Namespaces + sysctls.
    pub netns_s: f64,
    /// veth pairs up.
    pub links_s: f64,
    /// Addresses and routes.
    pub routes_s: f64,
    /// tbf qdiscs installed (and read back) with `link_mbps`.
    pub qdiscs: usize,
    /// Installing and reading back the qdiscs.
    pub shaping_s: f64,
    /// The shaping every veth end got (`None`: unshaped).
    pub tbf: Option<Tbf>,
    pub total_s: f64,
}

/// How [`RoutedTestbed::build_with`] builds the testbed.
#[derive(Debug, Clone)]
pub struct RoutedOptions {
    /// Dual stack: IPv6 addresses, routes and probes besides IPv4 (default on).
    pub ipv6: bool,
    /// Shape every link to this many Mb/s with a tbf root qdisc on both ends of every
    /// veth ([`Tbf::mbps`]: 32 KiB bucket, 20 ms of queue). `None`: unshaped.
    pub link_mbps: Option<u64>,
    /// Program switch routes as next-hop objects (RTM_NEWNEXTHOP, one per port and
    /// family, plus one multipath group per distinct port set; routes carry RTA_NH_ID)
    /// instead of legacy RTA_MULTIPATH routes.
    pub nexthop_objects: bool,
    /// Write the sysctls that make legacy multipath skip next hops whose link lost
    /// carrier (`ignore_routes_with_linkdown` for both families, IPv4
    /// `fib_multipath_use_neigh`). Default on; off to see the kernel without them.
    pub linkdown_sysctls: bool,
    /// Fail (and restore) a link at its `b` end (for a leaf uplink: the upper switch), so
    /// the `a` end only loses carrier; default: at its `a` end (admin-down there).
    pub fail_at_b_end: bool,
}

impl Default for RoutedOptions {
    fn default() -> Self {
        RoutedOptions {
            ipv6: true,
            link_mbps: None,
            nexthop_objects: false,
            linkdown_sysctls: true,
            fail_at_b_end: false,
        }
    }
}

/// The sysctls [`RoutedOptions::linkdown_sysctls`] switches off.
pub(super) fn is_linkdown_sysctl(key: &str) -> bool {
    key.ends_with("ignore_routes_with_linkdown") || key.ends_with("fib_multipath_use_neigh")
}

/// Raise a socket's receive buffer past `rmem_max` (SO_RCVBUFFORCE, we are root).
pub(super) fn set_rcvbuf(s: &UdpSocket, bytes: libc::c_int) -> Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket fd and a pointer to a c_int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(Error::Os {
            what: "setsockopt SO_RCVBUFFORCE on a probe socket".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Addresses (with `add_addrs`) and routes of host `h`'s link to its leaf, both ends and
/// both families (IPv6 with `ipv6`): the host's address, a route to the gateway and a
/// default route through it; the leaf's gateway address on the port and a route to the
/// host. Routes are replaced, so this also re-installs what the kernel flushed when the
/// link was set down. Returns (addresses, routes) written.
pub(super) fn host_link(
    f: &Fabric,
    plan: &AddressPlan,
    nl: &[Nl],
    h: NodeId,
    plane: u16,
    ipv6: bool,
    add_addrs: bool,
) -> Result<(usize, usize)> {
    let (na, nr) = host_link_in::<Ipv4Addr>(f, plan, nl, h, plane, add_addrs)?;
    if !ipv6 {
        return Ok((na, nr));
    }
    let (na6, nr6) = host_link_in::<Ipv6Addr>(f, plan, nl, h, plane, add_addrs)?;
    Ok((na + na6, nr + nr6))
}

/// [`host_link`] in family `A`.
fn host_link_in<A: LinkAddr>(
    f: &Fabric,
    plan: &AddressPlan,
    nl: &[Nl],
    h: NodeId,
    plane: u16,
    add_addrs: bool,
) -> Result<(usize, usize)> {
    let a = f.attachment(h, plane).ok_or_else(|| {
        Error::Invalid(format!(
            "host {} has no port in plane {plane}",
            f.node_name(h)
        ))
    })?;
    let addr = A::host(plan, f, h, plane).ok_or_else(|| {
        Error::Invalid(format!(
            "host {} has no {} address",
            f.node_name(h),
            A::NAME
        ))
    })?;
    let gw = A::gateway(plan, a.leaf)
        .ok_or_else(|| Error::Invalid(format!("leaf {} has no {} prefix", a.leaf.0, A::NAME)))?;
    let (hif, lif) = (ifname(a.host_port), ifname(a.leaf_port));
    let (hn, ln) = (&nl[h.idx()], &nl[a.leaf.idx()]);
    let mut na = 0;
    if add_addrs {
        ensure_addr(hn, &hif, addr.into(), A::HOST_LEN)?;
        ensure_addr(ln, &lif, gw.into(), A::HOST_LEN)?;
        na += 2;
    }
    let (hidx, lidx) = (hn.index(&hif)?, ln.index(&lif)?);
    hn.replace_route(A::link_route(gw, hidx))?;
    // Single plane: a default route. Several planes: one route per ToR prefix of the
    // plane through this plane's NIC, so a probe to a plane-p address leaves through the
    // plane-p port (and stays in plane p).
    let dsts: Vec<(A, u8)> = if f.num_planes() > 1 {
        f.plane_info(plane)
            .leaves()
            .filter_map(|l| A::tor_prefix(plan, NodeId(l)))
            .collect()
    } else {
        vec![(A::UNSPECIFIED, 0)]
    };
    for &(d, len) in &dsts {
        hn.replace_route(A::via(d, len, gw, hidx))?;
    }
    ln.replace_route(A::link_route(addr, lidx))?;
    Ok((na, 2 + dsts.len()))
}

/// Adds `addr/len` to interface `name`; one already there is fine (an interface made
/// again after a veth was replaced may keep the address on one end).
pub(super) fn ensure_addr(nl: &Nl, name: &str, addr: IpAddr, len: u8) -> Result<()> {
    match nl.add_addr(name, addr, len) {
        Err(Error::Netlink {
            source: rtnetlink::Error::NetlinkError(e),
            ..
        }) if e.raw_code() == -libc::EEXIST => Ok(()),
        r => r,
    }
}

/// Open a host's probe sockets for `addr` inside `ns`: a non-blocking receiver on
/// [`PROBE_PORT`] with a 4 MiB buffer and a sender on an ephemeral port.
pub(super) fn open_sock(ns: &Netns, addr: IpAddr) -> Result<Sock> {
    let (rx, tx) = in_netns(ns, || -> Result<_> {
        let rx = UdpSocket::bind(SocketAddr::new(addr, PROBE_PORT))
            .map_err(io(format!("bind [{addr}]:{PROBE_PORT}")))?;
        let tx =
            UdpSocket::bind(SocketAddr::new(addr, 0)).map_err(io(format!("bind [{addr}]:0")))?;
        Ok((rx, tx))
    })??;
    rx.set_nonblocking(true)
        .map_err(io("set probe socket non-blocking"))?;
    set_rcvbuf(&rx, 4 << 20)?;
    Ok(Sock { addr, rx, tx })
}

impl RoutedTestbed {
    /// Build the namespaces, veths, addresses and routes of `f` (any number of planes),
    /// dual stack (see [`RoutedOptions`]).
    pub fn build(f: Fabric) -> Result<RoutedTestbed> {
        Self::build_with(f, &RoutedOptions::default())
    }

    /// [`Self::build`] with options: namespaces, veth pairs, shaping, addresses, the
    /// testbed value, next-hop state, routes, probe sockets — each a step below.
    pub fn build_with(f: Fabric, opts: &RoutedOptions) -> Result<RoutedTestbed> {
        let plan = AddressPlan::new(&f)
            .map_err(|e| Error::Invalid(format!("fabric {}: addressing: {e}", f.name())))?;
        let mut tb = Testbed::new()?;
        let mut st = SetupStats::default();
        let t0 = Instant::now();

        let ns = make_namespaces(&f, opts, &mut tb)?;
        st.namespaces = ns.len();
        st.netns_s = secs(t0);

        let t1 = Instant::now();
        for l in f.links() {
            tb.connect(
                &ns[l.a.idx()],
                &ifname(l.a_port),
                &ns[l.b.idx()],
                &ifname(l.b_port),
            )?;
        }
        st.veths = f.num_links();
        st.links_s = secs(t1);

        if let Some(mbps) = opts.link_mbps {
            let t = Instant::now();
            let tbf = shape_links(&f, &ns, mbps)?;
            st.qdiscs = 2 * f.num_links();
            st.tbf = Some(tbf);
            st.shaping_s = secs(t);
        }

        let t2 = Instant::now();
        let nl = ns.iter().map(Nl::open).collect::<Result<Vec<_>>>()?;
        let (addresses, host_routes) = address_links(&f, &plan, &nl, opts.ipv6)?;
        st.addresses = addresses;
        st.routes = host_routes;
        let mut rt = {
            let here = vec![Presence::Here; f.num_nodes()];
            Self::assemble(f, plan, ns, nl, opts, st, tb, here)?
        };
        rt.setup.routes_s = secs(t2);
        rt.open_probe_sockets()?;
        rt.setup.total_s = secs(t0);
        Ok(rt)
    }

    /// Adopt the namespaces of a routed testbed that already exists — one per node,
    /// named `PREFIX` + `h<i>` / `s<i>` (as `fabric testbed up` leaves them, with
    /// `PREFIX` = `fab-RUNID-`), built from the same fabric, addresses in place — and
    /// (re)program every switch's routes from `f`'s tables ([`RoutedOptions::nexthop_objects`]
    /// and [`RoutedOptions::ipv6`] as for [`Self::build_with`]; the rest of `opts` is
    /// not used). The namespaces are not owned: dropping the value leaves them. No probe
    /// sockets are opened (their owner may hold the ports).
    pub fn adopt(f: Fabric, prefix: &str, opts: &RoutedOptions) -> Result<RoutedTestbed> {
        let plan = AddressPlan::new(&f)
            .map_err(|e| Error::Invalid(format!("fabric {}: addressing: {e}", f.name())))?;
        let tb = Testbed::new()?;
        let t0 = Instant::now();
        let mut ns = Vec::with_capacity(f.num_nodes());
        for i in 0..f.num_nodes() as u32 {
            let n = NodeId(i);
            let name = format!("{prefix}{}", node_role(&f, n));
            let x = Netns::from_name(&name);
            if !x.path().exists() {
                return Err(Error::Invalid(format!(
                    "--netns-prefix {prefix}: no namespace {name} for node {} (expected one namespace per node, named PREFIX + h<i> for host i and s<i> for switch i, as `fabric testbed up` makes)",
                    f.node_name(n)
                )));
            }
            ns.push(x);
        }
        let nl = ns.iter().map(Nl::open).collect::<Result<Vec<_>>>()?;
        for sw in f.switches() {
            for p in 0..f.degree(sw) as topo::Port {
                nl[sw.idx()].index(&ifname(p)).map_err(|e| {
                    Error::Invalid(format!(
                        "--netns-prefix {prefix}: {} has no interface {}: {e}",
                        ns[sw.idx()].name(),
                        ifname(p)
                    ))
                })?;
            }
        }
        let mut rt = {
            let here = vec![Presence::Here; f.num_nodes()];
            Self::assemble(f, plan, ns, nl, opts, SetupStats::default(), tb, here)?
        };
        rt.setup.namespaces = rt.ns.len();
        rt.setup.total_s = secs(t0);
        Ok(rt)
    }

    /// Adopt one switch of `f`, `switch`, in namespace `ns` — the namespace the daemon
    /// runs in, on a Linux router ([`Netns::current`]) — its ports being the interfaces
    /// `p<port>` there, and (re)program its routes from `f`'s tables (next-hop objects
    /// with [`RoutedOptions::nexthop_objects`]). Every other node is elsewhere: its
    /// tables are computed, nothing of it is read or written. Interfaces missing are
    /// refused with their name.
    pub fn adopt_switch(
        f: Fabric,
        switch: &str,
        ns: Netns,
        opts: &RoutedOptions,
    ) -> Result<RoutedTestbed> {
        let plan = AddressPlan::new(&f)
            .map_err(|e| Error::Invalid(format!("fabric {}: addressing: {e}", f.name())))?;
        let s = *f.name_index().get(switch).ok_or_else(|| {
            Error::Invalid(format!(
                "--switch {switch}: no such node in fabric {} (expected a switch name such as {})",
                f.name(),
                f.switches().next().map_or("?", |s| f.node_name(s))
            ))
        })?;
        if f.is_host(s) {
            return Err(Error::Invalid(format!(
                "--switch {switch}: a host, not a switch"
            )));
        }
        let tb = Testbed::new()?;
        let t0 = Instant::now();
        let here = Nl::open(&ns)?;
        for p in 0..f.degree(s) as topo::Port {
            here.index(&ifname(p)).map_err(|e| {
                Error::Invalid(format!(
                    "--switch {switch}: port {p} is interface {} in {}, which is missing: {e}",
                    ifname(p),
                    ns.name()
                ))
            })?;
        }
        let mut nl = Vec::with_capacity(f.num_nodes());
        let mut all = Vec::with_capacity(f.num_nodes());
        let mut here = Some(here);
        for i in 0..f.num_nodes() {
            let n = NodeId(i as u32);
            if n == s {
                nl.push(here.take().expect("one switch"));
                all.push(ns.clone());
            } else {
                let role = node_role(&f, n);
                nl.push(Nl::detached(&format!("{} (elsewhere)", f.node_name(n)))?);
                all.push(Netns::from_name(&format!("elsewhere-{role}")));
            }
        }
        let mut presence = vec![Presence::Elsewhere; f.num_nodes()];
        presence[s.idx()] = Presence::Here;
        let mut rt = Self::assemble(f, plan, all, nl, opts, SetupStats::default(), tb, presence)?;
        rt.setup.namespaces = 1;
        rt.setup.total_s = secs(t0);
        Ok(rt)
    }

    /// The testbed value over `ns` (one namespace per node, each `presence`) and their
    /// clients `nl`: the tables of `f`, the next-hop state with
    /// [`RoutedOptions::nexthop_objects`], and every switch's routes programmed (those
    /// here).
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        f: Fabric,
        plan: AddressPlan,
        ns: Vec<Netns>,
        nl: Vec<Nl>,
        opts: &RoutedOptions,
        setup: SetupStats,
        tb: Testbed,
        presence: Vec<Presence>,
    ) -> Result<RoutedTestbed> {
        let mut rt = RoutedTestbed {
            hosts: Vec::new(),
            nl,
            ns,
            routes: Routes::compute(&f),
            fabric: f,
            plan,
            ipv6: opts.ipv6,
            fail_at_b_end: opts.fail_at_b_end,
            nexthops: None,
            round: 0,
            presence,
            setup,
            tb,
        };
        if opts.nexthop_objects {
            rt.nexthops = Some(rt.nexthop_state()?);
        }
        rt.program_all()?;
        Ok(rt)
    }

    /// Next-hop object state: every switch port's link index, no group made yet.
    fn nexthop_state(&self) -> Result<NhState> {
        let mut ifindex = Vec::with_capacity(self.fabric.num_nodes());
        for i in 0..self.fabric.num_nodes() {
            let n = NodeId(i as u32);
            let mut v = Vec::new();
            if !self.fabric.is_host(n) && !self.is_gone(n) {
                for p in 0..self.fabric.degree(n) as topo::Port {
                    v.push(self.nl[i].index(&ifname(p))?);
                }
            }
            ifindex.push(v);
        }
        Ok(NhState {
            ifindex,
            groups: std::sync::Mutex::new(Default::default()),
            made: std::sync::Mutex::new(Default::default()),
        })
    }

    /// Program every switch's route toward every leaf of its plane.
    fn program_all(&mut self) -> Result<()> {
        let switches: Vec<NodeId> = self.fabric.switches().collect();
        for s in switches {
            for l in self.plane_leaves(s) {
                self.setup.routes += self.program(s, l)?;
            }
        }
        Ok(())
    }

    /// Open the probe sockets inside the host namespaces, per plane and family.
    fn open_probe_sockets(&mut self) -> Result<()> {
        let hosts: Vec<NodeId> = self.fabric.hosts().collect();
        for h in hosts {
            let mut planes = Vec::new();
            for p in 0..self.fabric.num_planes() as u16 {
                let Some(addr) = self.plan.host_v4(&self.fabric, h, p) else {
                    planes.push(None);
                    continue;
                };
                let v4 = open_sock(&self.ns[h.idx()], addr.into())?;
                let v6 = if self.ipv6 {
                    let a6 = self
                        .plan
                        .host_v6(&self.fabric, h, p)
                        .expect("checked above");
                    Some(open_sock(&self.ns[h.idx()], a6.into())?)
                } else {
                    None
                };
                planes.push(Some(PlaneSock { v4, v6 }));
            }
            self.hosts.push(HostSock { planes });
        }
        Ok(())
    }
}

/// The role part of node `n`'s namespace name: `h<i>` for host `i`, `s<i>` for the
/// `i`-th switch.
pub fn node_role(f: &Fabric, n: NodeId) -> String {
    if f.is_host(n) {
        format!("h{}", n.0)
    } else {
        format!("s{}", n.0 - f.num_hosts() as u32)
    }
}

/// One namespace per node, with the sysctls of its role (host or switch, v4/v6).
fn make_namespaces(f: &Fabric, opts: &RoutedOptions, tb: &mut Testbed) -> Result<Vec<Netns>> {
    let mut ns = Vec::with_capacity(f.num_nodes());
    for i in 0..f.num_nodes() as u32 {
        let n = NodeId(i);
        let x = tb.add_netns(&node_role(f, n))?;
        if opts.ipv6 {
            for (k, v) in IPV6_SYSCTLS {
                x.sysctl(k, v)?;
            }
        }
        if f.is_host(n) {
            x.sysctl("net/ipv4/conf/all/rp_filter", "0")?;
            x.sysctl("net/ipv4/conf/default/rp_filter", "0")?;
            if opts.ipv6 {
                // A link set down marks its kept IPv6 addresses tentative; a host whose
                // own link failed must still open its spread sockets (and see the
                // probes fail), as it can in IPv4.
                x.sysctl("net/ipv6/ip_nonlocal_bind", "1")?;
            }
        } else {
            let v6: &[(&str, &str)] = if opts.ipv6 { SWITCH_SYSCTLS_V6 } else { &[] };
            for (k, v) in SWITCH_SYSCTLS.iter().chain(v6) {
                if opts.linkdown_sysctls || !is_linkdown_sysctl(k) {
                    x.sysctl(k, v)?;
                }
            }
        }
        ns.push(x);
    }
    Ok(ns)
}

/// A tbf root qdisc of `mbps` on both ends of every veth, each read back from the kernel.
fn shape_links(f: &Fabric, ns: &[Netns], mbps: u64) -> Result<Tbf> {
    if mbps == 0 {
        return Err(Error::Invalid(
            "link rate: expected at least 1 Mb/s, got 0".into(),
        ));
    }
    let psched = Psched::read()?;
    let tbf = Tbf::mbps(mbps);
    for l in f.links() {
        for (n, p) in [(l.a, l.a_port), (l.b, l.b_port)] {
            let c = Nl::open(&ns[n.idx()])?;
            c.set_tbf(&ifname(p), &tbf, &psched)?;
            let idx = c.index(&ifname(p))?;
            let got: Vec<TbfState> = c
                .tbf_qdiscs()?
                .into_iter()
                .filter(|q| q.index == idx)
                .collect();
            if got.len() != 1
                || got[0].rate_bytes != tbf.rate_bytes()
                || got[0].limit != tbf.limit()
            {
                return Err(Error::Invalid(format!(
                    "tbf on {}:{} reads back as {got:?}, expected rate {} B/s, limit {} B",
                    f.node_name(n),
                    ifname(p),
                    tbf.rate_bytes(),
                    tbf.limit()
                )));
            }
        }
    }
    Ok(tbf)
}

/// Host links (addresses and routes) and switch port addresses; returns (addresses,
/// routes) added.
fn address_links(f: &Fabric, plan: &AddressPlan, nl: &[Nl], ipv6: bool) -> Result<(usize, usize)> {
    let (mut addresses, mut routes) = (0, 0);
    for h in f.hosts() {
        for p in f.host_planes(h).collect::<Vec<_>>() {
            let (a, r) = host_link(f, plan, nl, h, p, ipv6, true)?;
            addresses += a;
            routes += r;
        }
    }
    for s in f.switches() {
        for p in 0..f.degree(s) as topo::Port {
            if let Some((a, len)) = own_addr::<Ipv4Addr>(f, plan, s, p) {
                nl[s.idx()].add_addr(&ifname(p), a, len)?;
                addresses += 1;
            }
            if ipv6 && let Some((a, len)) = own_addr::<Ipv6Addr>(f, plan, s, p) {
                nl[s.idx()].add_addr(&ifname(p), a, len)?;
                addresses += 1;
            }
        }
    }
    Ok((addresses, routes))
}
