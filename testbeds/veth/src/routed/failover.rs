//! Failing and restoring links: netlink down/up, `topo`'s incremental re-route, and
//! re-programming only the entries that changed.

use super::*;

/// What a link failure (or a restore, [`RoutedTestbed::restore_link`]) did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Failure {
    /// `a:port -- b:port`.
    pub link: String,
    /// (switch, destination leaf) entries topo changed (IPv4 and IPv6 routes follow the
    /// same entries).
    pub entries_changed: usize,
    /// The switches whose entries changed (node ids, ascending).
    pub switches_changed: Vec<u32>,
    /// Routes replaced or deleted through netlink.
    pub routes_reprogrammed: usize,
    /// From link down (with a `between` step: from its end) — or link up — to the last
    /// route re-programmed.
    pub reprogram_s: f64,
    /// Restore only: from the link-up request until both ends were operationally up
    /// (`None`: not within 2 s, or a failure). Routes are re-programmed after that.
    pub oper_up_s: Option<f64>,
}

impl RoutedTestbed {
    /// Fail link `l`: set its `a` end down through netlink (the `b` end loses carrier;
    /// the other way round with [`RoutedOptions::fail_at_b_end`]), re-route
    /// incrementally in `topo` and re-program the changed entries.
    pub fn fail_link(&mut self, l: LinkId) -> Result<Failure> {
        self.fail_link_with(l, None::<fn(&mut RoutedTestbed)>)
    }

    /// [`Self::fail_link`], calling `between(self)` after the link went down and before
    /// the routes are re-programmed (e.g. to probe what the kernel alone does).
    pub fn fail_link_with<F: FnOnce(&mut RoutedTestbed)>(
        &mut self,
        l: LinkId,
        between: Option<F>,
    ) -> Result<Failure> {
        let mut t0 = Instant::now();
        let (n, p) = self.down_end(l);
        self.nl[n.idx()].set_down(&ifname(p))?;
        if let Some(step) = between {
            step(self);
            t0 = Instant::now();
        }
        self.reroute_around(l, t0)
    }

    /// Re-route around link `l` (already down) in `topo`, incrementally, and re-program
    /// the changed entries; `reprogram_s` counts from `t0`.
    pub(super) fn reroute_around(&mut self, l: LinkId, t0: Instant) -> Result<Failure> {
        let link = *self.fabric.link(l);
        let rep = self.routes.fail_links(&self.fabric, &[l]);
        if let Some(st) = &self.nexthops {
            st.invalidate(&[link.a, link.b]);
        }
        let (n, err) = self.program_each(rep.changed.iter().copied());
        if let Some(e) = err {
            return Err(e);
        }
        Ok(Failure {
            link: format!(
                "{}:{} -- {}:{}",
                self.fabric.node_name(link.a),
                ifname(link.a_port),
                self.fabric.node_name(link.b),
                ifname(link.b_port)
            ),
            entries_changed: rep.changed.len(),
            switches_changed: switches_of(rep.changed.iter().map(|&(s, _)| s)),
            routes_reprogrammed: n,
            reprogram_s: secs(t0),
            oper_up_s: None,
        })
    }

    /// The end of link `l` that [`Self::fail_link`] sets down.
    pub(super) fn down_end(&self, l: LinkId) -> (NodeId, topo::Port) {
        let link = self.fabric.link(l);
        if self.fail_at_b_end {
            (link.b, link.b_port)
        } else {
            (link.a, link.a_port)
        }
    }

    /// The next-hop port list of every `(switch, leaf)` entry (empty: none or local), to
    /// find the entries a non-incremental re-route changed.
    pub(super) fn table_snapshot(&self) -> Vec<(NodeId, NodeId, Vec<topo::Port>)> {
        let mut v = Vec::new();
        for s in self.fabric.switches() {
            for l in self.plane_leaves(s) {
                let e = self.routes.entry(s, l);
                let ports = if e == LOCAL || e == NO_ROUTE {
                    Vec::new()
                } else {
                    self.routes.groups().get(e).to_vec()
                };
                v.push((s, l, ports));
            }
        }
        v
    }

    /// Restore link `l` after [`Self::fail_link`]: set its `a` end up through netlink
    /// (the `b` end regains carrier), bring it back in `topo`
    /// ([`topo::Routes::restore_links`], which recomputes the tables), and re-program
    /// only the entries whose next hops changed (both families).
    pub fn restore_link(&mut self, l: LinkId) -> Result<Failure> {
        let link = *self.fabric.link(l);
        let t0 = Instant::now();
        let (n, p) = self.down_end(l);
        self.nl[n.idx()].set_up(&ifname(p))?;
        // Wait (≤ 2 s) until both ends are operationally up: before the kernel's link
        // watcher has run, the far end still drops what it sends (no ARP/ND replies), and
        // with `fib_multipath_use_neigh` the leaf then skips the restored next hop.
        let (ia, ib) = (ifname(link.a_port), ifname(link.b_port));
        let mut carrier_s = None;
        while t0.elapsed() < Duration::from_secs(2) {
            if self.nl[link.a.idx()].oper_up(&ia)? && self.nl[link.b.idx()].oper_up(&ib)? {
                carrier_s = Some(secs(t0));
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.reroute_back(l, t0, carrier_s)
    }

    /// Bring link `l` (up again) back into `topo`'s tables and re-program only the
    /// entries whose next hops changed; `reprogram_s` counts from `t0`.
    pub(super) fn reroute_back(
        &mut self,
        l: LinkId,
        t0: Instant,
        carrier_s: Option<f64>,
    ) -> Result<Failure> {
        let link = *self.fabric.link(l);
        let before = self.table_snapshot();
        self.routes.restore_links(&self.fabric, &[l]);
        if let Some(st) = &self.nexthops {
            st.invalidate(&[link.a, link.b]);
        }
        let after = self.table_snapshot();
        let mut changed = 0;
        let mut switches = Vec::new();
        let mut n = 0;
        // A host's routes went with its link (the kernel flushes routes through a link
        // set down); `topo` has no entries for them: re-install both ends.
        if let Some(h) = [link.a, link.b]
            .into_iter()
            .find(|&x| self.fabric.is_host(x))
            && let Some(p) = self
                .fabric
                .host_planes(h)
                .find(|&p| self.fabric.attachment(h, p).is_some_and(|a| a.link == l))
        {
            n += host_link(&self.fabric, &self.plan, &self.nl, h, p, self.ipv6, false)?.1;
        }
        let mut entries = Vec::new();
        for (b, a) in before.iter().zip(&after) {
            if b.2 != a.2 {
                changed += 1;
                switches.push(a.0);
                entries.push((a.0, a.1));
            }
        }
        let (k, err) = self.program_each(entries);
        if let Some(e) = err {
            return Err(e);
        }
        n += k;
        Ok(Failure {
            link: format!(
                "{}:{} -- {}:{}",
                self.fabric.node_name(link.a),
                ifname(link.a_port),
                self.fabric.node_name(link.b),
                ifname(link.b_port)
            ),
            entries_changed: changed,
            switches_changed: switches_of(switches),
            routes_reprogrammed: n,
            reprogram_s: secs(t0),
            oper_up_s: carrier_s,
        })
    }
}

/// Distinct node ids, ascending.
fn switches_of(nodes: impl IntoIterator<Item = NodeId>) -> Vec<u32> {
    let mut v: Vec<u32> = nodes.into_iter().map(|n| n.0).collect();
    v.sort_unstable();
    v.dedup();
    v
}
