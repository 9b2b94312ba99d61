//! Up*/down* ECMP routing tables, aggregated per destination leaf (ToR prefix), with
//! deduplicated next-hop groups and incremental re-routing after failures.
//!
//! # The rule
//! Every switch of a plane has one entry per leaf of that plane: the set of equal-cost
//! next-hop ports toward that leaf (the ToR's prefix, as a real L3 fabric would install
//! it). Entries are computed per destination leaf `d` on the tiered graph:
//!
//! 1. `down[v]`: hops from `v` to `d` going only down (BFS upward from `d`).
//! 2. Dragonfly+ only: a spine one global (same-tier) link away from a spine with a finite
//!    `down` gets `1 + down[w]`.
//! 3. All other switches, top tier first: `1 + min` over up neighbours.
//!
//! A switch with a finite `down` distance only ever uses down ports, so a packet that has
//! gone down never goes up again (the up*/down* rule of Autonet, Schroeder et al. 1991);
//! after a global hop the packet is at a switch with a finite `down` and goes down.
//! Every path is therefore `up* [global] down*`, which orders the channels
//! (up < global < down, and up channels by rising tier, down channels by falling tier),
//! so the channel dependency graph is acyclic and PFC cannot deadlock with one traffic
//! class (Dally & Seitz 1987; checked by [`crate::verify`]). For Dragonfly+ this is
//! *minimal* routing (one global hop; Shpiner et al., HiPINEB 2017): no VL change is
//! needed because no path takes a second global hop. Non-minimal (Valiant) routing would
//! need a VL/priority increment at the intermediate group and is not implemented.
//!
//! In a strictly tiered fabric a switch with a finite `down` distance is always closer
//! going down than going up, so the tables are the shortest up*/down* paths.
//!
//! # Storage
//! `entries[row(switch) + leaf]` is a `u32` group id; groups are deduplicated port lists
//! (like hardware ECMP groups) shared by every switch whose next hops have the same port
//! numbers. At a leaf, the entry for itself is [`LOCAL`] and the last hop is the host port.

use std::collections::HashMap;

use crate::model::*;

/// Entry marker: the destination leaf is this switch (deliver on the host's port).
pub const LOCAL: u32 = u32::MAX - 1;
/// Entry marker: no up*/down* path.
pub const NO_ROUTE: u32 = u32::MAX;
const NO_PORT: Port = Port::MAX;
const INF: u8 = u8::MAX;

/// Deduplicated next-hop groups (sorted port lists).
#[derive(Debug, Clone, Default)]
pub struct Groups {
    off: Vec<u32>,
    ports: Vec<Port>,
    index: HashMap<Box<[Port]>, u32>,
}

impl Groups {
    fn intern(&mut self, ports: &[Port]) -> u32 {
        if let Some(&g) = self.index.get(ports) {
            return g;
        }
        if self.off.is_empty() {
            self.off.push(0);
        }
        let g = (self.off.len() - 1) as u32;
        self.ports.extend_from_slice(ports);
        self.off.push(self.ports.len() as u32);
        self.index.insert(ports.into(), g);
        g
    }
    /// Ports of a group.
    #[inline]
    pub fn get(&self, g: u32) -> &[Port] {
        &self.ports[self.off[g as usize] as usize..self.off[g as usize + 1] as usize]
    }
    /// Number of distinct groups.
    pub fn len(&self) -> usize {
        self.off.len().saturating_sub(1)
    }
    /// True when there are no groups.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Up*/down* ECMP tables of a whole fabric, plus the link state they were computed for.
#[derive(Debug, Clone)]
pub struct Routes {
    nh: u32,
    np: usize,
    /// `[host * np + plane]` → leaf index within the plane, or NONE.
    host_leaf: Vec<u32>,
    /// `[host * np + plane]` → leaf port toward the host (NO_PORT if none / link down).
    host_leaf_port: Vec<Port>,
    /// `[host * np + plane]` → host port in that plane.
    host_port: Vec<Port>,
    /// `[host * np + plane]` → host link.
    host_link: Vec<u32>,
    /// Per switch (id − nh): plane, row start, first up port, first global port.
    sw_plane: Vec<u16>,
    sw_row: Vec<u32>,
    first_up: Vec<Port>,
    first_global: Vec<Port>,
    plane_leaf0: Vec<u32>,
    plane_leaves: Vec<u32>,
    entries: Vec<u32>,
    dist: Vec<u8>,
    groups: Groups,
    link_up: Vec<bool>,
    /// Entries written by [`crate::lanes::route_around`] (switch, destination leaf): routes
    /// with a down-up turn, used only by pairs on lanes ≥ 1. Cleared by every failure.
    detours: Vec<(NodeId, NodeId)>,
}

/// Summary of ECMP widths over all (switch, destination leaf) entries that route
/// through a next hop (LOCAL and NO_ROUTE entries excluded).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WidthStats {
    /// Entries counted.
    pub entries: u64,
    /// Entries with no route.
    pub no_route: u64,
    /// Sum of widths (total next hops).
    pub total_next_hops: u64,
    /// Narrowest group.
    pub min: u32,
    /// Widest group.
    pub max: u32,
    /// Mean width.
    pub mean: f64,
    /// Distinct next-hop groups.
    pub groups: usize,
}

/// What a failure changed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RerouteReport {
    /// Links newly marked down.
    pub links_failed: usize,
    /// Destination leaves recomputed from scratch.
    pub dests_recomputed: usize,
    /// Entries patched in place (one port removed from a group).
    pub entries_patched: usize,
    /// (switch, destination leaf) entries whose next hops changed.
    pub changed: Vec<(NodeId, NodeId)>,
    /// Next hops lost: sum of ECMP widths before minus after.
    pub width_lost: u64,
}

/// Per-plane incremental engine: computes the entries of one destination leaf after
/// another, recomputing only switches whose inputs changed since the previous
/// destination (the destination's up-cone, the previous cone, and switches below a
/// switch whose distance changed). Scratch arrays are plane-local and dense, so the
/// working set of a 5,000-switch plane stays in cache.
struct Engine {
    first: u32,
    down: Vec<u8>,
    olddown: Vec<u8>,
    dist: Vec<u8>,
    grp: Vec<u32>,
    dirty: Vec<bool>,
    work: [Vec<u32>; 3],
    cone: Vec<u32>,
    prev_cone: Vec<u32>,
    prev_d: Option<u32>,
    edges: Vec<u64>,
    prev_edges: Vec<u64>,
    frontier: Vec<u32>,
    next: Vec<u32>,
    buf: Vec<Port>,
    last: Vec<u32>,
    fresh: bool,
}

/// Read-only routing context the engine needs.
struct Ctx<'a> {
    f: &'a Fabric,
    nh: u32,
    first_up: &'a [Port],
    first_global: &'a [Port],
    link_up: &'a [bool],
}

impl Engine {
    fn new(p: &PlaneInfo) -> Engine {
        let sw = p.switches();
        let n = sw.len();
        Engine {
            first: sw.start,
            down: vec![INF; n],
            olddown: vec![INF; n],
            dist: vec![INF; n],
            grp: vec![NO_ROUTE; n],
            dirty: vec![false; n],
            work: [Vec::new(), Vec::new(), Vec::new()],
            cone: Vec::new(),
            prev_cone: Vec::new(),
            prev_d: None,
            edges: Vec::new(),
            prev_edges: Vec::new(),
            frontier: Vec::new(),
            next: Vec::new(),
            buf: Vec::new(),
            last: vec![NO_ROUTE; n],
            fresh: true,
        }
    }

    #[inline]
    fn mark(&mut self, f: &Fabric, v: u32) {
        let i = (v - self.first) as usize;
        if !self.dirty[i] {
            self.dirty[i] = true;
            self.work[f.tier[v as usize] as usize - 1].push(v);
        }
    }

    fn mark_global_neighbours(&mut self, c: &Ctx<'_>, v: u32) {
        let vi = (v - c.nh) as usize;
        let off = c.f.port_off[v as usize] as usize;
        let deg = (c.f.port_off[v as usize + 1] - c.f.port_off[v as usize]) as usize;
        for k in c.first_global[vi] as usize..deg {
            let w = c.f.port_peer[off + k].0;
            self.mark(c.f, w);
        }
    }

    /// Brings `dist`/`grp` up to date for destination leaf `d`.
    fn step(&mut self, c: &Ctx<'_>, p: &PlaneInfo, d: u32, groups: &mut Groups) {
        let f = c.f;
        let nh = c.nh;
        let first = self.first;
        // 1. forget the previous cone (remember its `down` values).
        let prev = std::mem::take(&mut self.prev_cone);
        for &v in &prev {
            let i = (v - first) as usize;
            self.olddown[i] = self.down[i];
            self.down[i] = INF;
        }
        // 2. BFS upward from d over live up links; collect the group edges
        //    (node << 16 | port at node), sorted.
        self.cone.clear();
        std::mem::swap(&mut self.edges, &mut self.prev_edges);
        self.edges.clear();
        self.frontier.clear();
        self.frontier.push(d);
        self.down[(d - first) as usize] = 0;
        self.cone.push(d);
        let mut level = 0u8;
        while !self.frontier.is_empty() {
            self.next.clear();
            level += 1;
            for fi in 0..self.frontier.len() {
                let v = self.frontier[fi];
                let vi = (v - nh) as usize;
                let off = f.port_off[v as usize] as usize;
                for k in c.first_up[vi] as usize..c.first_global[vi] as usize {
                    let l = f.port_link[off + k];
                    if !c.link_up[l.idx()] {
                        continue;
                    }
                    let u = f.port_peer[off + k].0;
                    let ui = (u - first) as usize;
                    if self.down[ui] == INF {
                        self.down[ui] = level;
                        self.next.push(u);
                        self.cone.push(u);
                    }
                    if self.down[ui] == level {
                        let link = &f.links[l.idx()];
                        let up_port = if link.a.0 == v {
                            link.b_port
                        } else {
                            link.a_port
                        };
                        self.edges.push((u as u64) << 16 | up_port as u64);
                    }
                }
            }
            std::mem::swap(&mut self.frontier, &mut self.next);
        }
        self.edges.sort_unstable();
        // 3. dirty: switches whose `down` changed, whose group edges changed, and the old
        //    and new destination.
        let (mut i, mut j) = (0, 0);
        let (ne, np) = (self.edges.len(), self.prev_edges.len());
        while i < ne || j < np {
            let x = if i < ne { self.edges[i] } else { u64::MAX };
            let y = if j < np { self.prev_edges[j] } else { u64::MAX };
            if x == y {
                i += 1;
                j += 1;
            } else if x < y {
                self.mark(f, (x >> 16) as u32);
                i += 1;
            } else {
                self.mark(f, (y >> 16) as u32);
                j += 1;
            }
        }
        self.mark(f, d);
        if let Some(pd) = self.prev_d {
            self.mark(f, pd);
        }
        self.prev_d = Some(d);
        let has_global = p.kind == PlaneKind::DragonflyPlus;
        let cone = std::mem::take(&mut self.cone);
        for &v in prev.iter().chain(cone.iter()) {
            let i = (v - first) as usize;
            if self.down[i] != self.olddown[i] {
                self.mark(f, v);
                // Dragonfly+: a change of `down` matters to global neighbours.
                if has_global {
                    self.mark_global_neighbours(c, v);
                }
            }
        }
        self.cone = cone;
        for &v in &prev {
            self.olddown[(v - first) as usize] = INF;
        }
        if self.fresh {
            self.fresh = false;
            for v in p.switches() {
                self.mark(f, v);
            }
        }
        // 3. recompute dirty switches, top tier first.
        for t in (0..3).rev() {
            let mut i = 0;
            while i < self.work[t].len() {
                let v = self.work[t][i];
                i += 1;
                let vl = (v - first) as usize;
                self.dirty[vl] = false;
                let vi = (v - nh) as usize;
                let off = f.port_off[v as usize] as usize;
                let deg = (f.port_off[v as usize + 1] - f.port_off[v as usize]) as usize;
                self.buf.clear();
                let dd = self.down[vl];
                let (g, dist) = if v == d {
                    (LOCAL, 0)
                } else if dd != INF {
                    let lo = self.edges.partition_point(|&e| ((e >> 16) as u32) < v);
                    for &e in &self.edges[lo..] {
                        if (e >> 16) as u32 != v {
                            break;
                        }
                        self.buf.push(e as u16);
                    }
                    (NO_ROUTE, dd)
                } else {
                    let mut best = INF;
                    let fg = c.first_global[vi] as usize;
                    for k in c.first_up[vi] as usize..deg {
                        if !c.link_up[f.port_link[off + k].idx()] {
                            continue;
                        }
                        let w = f.port_peer[off + k].0;
                        let wl = (w - first) as usize;
                        let cost = if k >= fg {
                            self.down[wl]
                        } else {
                            self.dist[wl]
                        };
                        if cost == INF {
                            continue;
                        }
                        if cost < best {
                            best = cost;
                            self.buf.clear();
                        }
                        if cost == best {
                            self.buf.push(k as Port);
                        }
                    }
                    (NO_ROUTE, best.saturating_add(1))
                };
                let g = if g == LOCAL || self.buf.is_empty() {
                    g
                } else {
                    let last = self.last[vl];
                    if last != NO_ROUTE && groups.get(last) == self.buf.as_slice() {
                        last
                    } else {
                        let id = groups.intern(&self.buf);
                        self.last[vl] = id;
                        id
                    }
                };
                let dist = if g == NO_ROUTE { INF } else { dist };
                if dist != self.dist[vl] {
                    self.dist[vl] = dist;
                    for k in 0..c.first_up[vi] as usize {
                        let w = f.port_peer[off + k].0;
                        if w >= nh {
                            self.mark(f, w);
                        }
                    }
                }
                self.grp[vl] = g;
            }
            self.work[t].clear();
        }
        self.prev_cone = std::mem::take(&mut self.cone);
    }
}

impl Routes {
    /// Computes the tables of every plane with all links up.
    pub fn compute(f: &Fabric) -> Routes {
        let nh = f.num_hosts() as u32;
        let np = f.num_planes();
        let ns = f.num_switches();
        let mut r = Routes {
            nh,
            np,
            host_leaf: vec![NONE; nh as usize * np],
            host_leaf_port: vec![NO_PORT; nh as usize * np],
            host_port: vec![NO_PORT; nh as usize * np],
            host_link: vec![NONE; nh as usize * np],
            sw_plane: vec![0; ns],
            sw_row: vec![0; ns],
            first_up: vec![0; ns],
            first_global: vec![0; ns],
            plane_leaf0: Vec::with_capacity(np),
            plane_leaves: Vec::with_capacity(np),
            entries: Vec::new(),
            dist: Vec::new(),
            groups: Groups::default(),
            link_up: vec![true; f.num_links()],
            detours: Vec::new(),
        };
        let mut rows = 0u64;
        for (pi, p) in f.planes().iter().enumerate() {
            let leaves = p.leaves();
            r.plane_leaf0.push(leaves.start);
            r.plane_leaves.push(leaves.len() as u32);
            for s in p.switches() {
                let i = (s - nh) as usize;
                r.sw_plane[i] = pi as u16;
                r.sw_row[i] = rows as u32;
                rows += leaves.len() as u64;
                let n = NodeId(s);
                let t = f.tier(n);
                let mut fu = f.degree(n) as Port;
                let mut fg = f.degree(n) as Port;
                for (port, (peer, _)) in f.ports(n).enumerate() {
                    let pt = f.tier(peer);
                    if pt > t && fu == f.degree(n) as Port {
                        fu = port as Port;
                    }
                    if pt == t && fg == f.degree(n) as Port {
                        fg = port as Port;
                    }
                }
                r.first_up[i] = fu.min(fg);
                r.first_global[i] = fg;
            }
        }
        assert!(
            rows < u32::MAX as u64,
            "routing table too large: {rows} entries"
        );
        for h in 0..nh {
            for pl in 0..np {
                if let Some(a) = f.attachment(NodeId(h), pl as u16) {
                    let k = h as usize * np + pl;
                    r.host_leaf[k] = a.leaf.0 - r.plane_leaf0[pl];
                    r.host_leaf_port[k] = a.leaf_port;
                    r.host_port[k] = a.host_port;
                    r.host_link[k] = a.link.0;
                }
            }
        }
        r.entries = vec![NO_ROUTE; rows as usize];
        r.dist = vec![INF; rows as usize];
        for pl in 0..np {
            r.compute_plane(f, pl);
        }
        r
    }

    /// All destinations of a plane, in blocks of `B` so each switch's row is written one
    /// cache line at a time.
    fn compute_plane(&mut self, f: &Fabric, pl: usize) {
        const B: usize = 16;
        let p = &f.planes()[pl];
        let mut eng = Engine::new(p);
        let sw = p.switches();
        let n = sw.len();
        let nl = self.plane_leaves[pl] as usize;
        let mut bg = vec![NO_ROUTE; n * B];
        let mut bd = vec![INF; n * B];
        let ctx = Ctx {
            f,
            nh: self.nh,
            first_up: &self.first_up,
            first_global: &self.first_global,
            link_up: &self.link_up,
        };
        let mut li0 = 0;
        while li0 < nl {
            let nb = B.min(nl - li0);
            for j in 0..nb {
                eng.step(
                    &ctx,
                    p,
                    self.plane_leaf0[pl] + (li0 + j) as u32,
                    &mut self.groups,
                );
                for v in 0..n {
                    bg[v * B + j] = eng.grp[v];
                    bd[v * B + j] = eng.dist[v];
                }
            }
            for v in 0..n {
                let row = self.sw_row[(sw.start - self.nh) as usize + v] as usize + li0;
                self.entries[row..row + nb].copy_from_slice(&bg[v * B..v * B + nb]);
                self.dist[row..row + nb].copy_from_slice(&bd[v * B..v * B + nb]);
            }
            li0 += nb;
        }
    }

    fn width(&self, e: u32) -> u64 {
        if e == LOCAL || e == NO_ROUTE {
            0
        } else {
            self.groups.get(e).len() as u64
        }
    }

    /// Recomputes the given destination leaves of a plane; records changed entries.
    /// Returns the total width of the changed entries before and after.
    fn recompute_dests(
        &mut self,
        f: &Fabric,
        pl: usize,
        dests: &[u32],
        changed: &mut Vec<(NodeId, NodeId)>,
    ) -> (u64, u64) {
        let (mut before, mut after) = (0, 0);
        let p = &f.planes()[pl];
        let mut eng = Engine::new(p);
        let sw = p.switches();
        let ctx = Ctx {
            f,
            nh: self.nh,
            first_up: &self.first_up,
            first_global: &self.first_global,
            link_up: &self.link_up,
        };
        for &li in dests {
            let d = self.plane_leaf0[pl] + li;
            eng.step(&ctx, p, d, &mut self.groups);
            for (v, s) in sw.clone().enumerate() {
                let row = self.sw_row[(s - self.nh) as usize] as usize + li as usize;
                if self.entries[row] != eng.grp[v] {
                    changed.push((NodeId(s), NodeId(d)));
                    before += self.width(self.entries[row]);
                    after += self.width(eng.grp[v]);
                    self.entries[row] = eng.grp[v];
                }
                self.dist[row] = eng.dist[v];
            }
        }
        (before, after)
    }

    #[inline]
    fn row(&self, sw: u32) -> usize {
        self.sw_row[(sw - self.nh) as usize] as usize
    }

    /// Equal-cost next-hop ports of `switch` toward host `dst` (empty if `dst` has no
    /// port in the switch's plane, or there is no route). At the destination's leaf this
    /// is the one port facing the host.
    #[inline]
    pub fn next_hops(&self, switch: NodeId, dst: NodeId) -> &[Port] {
        let si = (switch.0 - self.nh) as usize;
        let pl = self.sw_plane[si] as usize;
        let k = dst.idx() * self.np + pl;
        let li = self.host_leaf[k];
        if li == NONE {
            return &[];
        }
        match self.entries[self.sw_row[si] as usize + li as usize] {
            LOCAL => {
                if self.host_leaf_port[k] == NO_PORT {
                    &[]
                } else {
                    std::slice::from_ref(&self.host_leaf_port[k])
                }
            }
            NO_ROUTE => &[],
            g => self.groups.get(g),
        }
    }

    /// Next-hop group id of `switch` toward destination leaf `leaf` (same plane), or
    /// [`LOCAL`] / [`NO_ROUTE`].
    #[inline]
    pub fn entry(&self, switch: NodeId, leaf: NodeId) -> u32 {
        let si = (switch.0 - self.nh) as usize;
        let pl = self.sw_plane[si] as usize;
        let li = leaf.0.wrapping_sub(self.plane_leaf0[pl]);
        if li >= self.plane_leaves[pl] {
            return NO_ROUTE;
        }
        self.entries[self.sw_row[si] as usize + li as usize]
    }

    /// All entries of a switch's row: group id (or [`LOCAL`] / [`NO_ROUTE`]) per leaf of
    /// its plane, in leaf order.
    #[inline]
    pub fn row_entries(&self, switch: NodeId) -> &[u32] {
        &self.entries[self.row_range(switch)]
    }

    /// Where a switch's row lies in `entries` and `dist`.
    #[inline]
    fn row_range(&self, switch: NodeId) -> std::ops::Range<usize> {
        let si = (switch.0 - self.nh) as usize;
        let pl = self.sw_plane[si] as usize;
        let r = self.sw_row[si] as usize;
        r..r + self.plane_leaves[pl] as usize
    }

    /// Hops from `switch` to every leaf of its plane along the tables, in leaf order
    /// (the row of [`Self::row_entries`]); `u8::MAX` where there is no route.
    #[inline]
    pub fn row_distances(&self, switch: NodeId) -> &[u8] {
        &self.dist[self.row_range(switch)]
    }

    /// Hops from `switch` to destination leaf `leaf` along the tables (`None`: no route).
    pub fn distance(&self, switch: NodeId, leaf: NodeId) -> Option<u8> {
        let si = (switch.0 - self.nh) as usize;
        let pl = self.sw_plane[si] as usize;
        let li = leaf.0.wrapping_sub(self.plane_leaf0[pl]);
        if li >= self.plane_leaves[pl] {
            return None;
        }
        let d = self.dist[self.sw_row[si] as usize + li as usize];
        (d != INF).then_some(d)
    }

    /// The deduplicated groups.
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// Is the link up in this routing state?
    pub fn link_is_up(&self, l: LinkId) -> bool {
        self.link_up[l.idx()]
    }

    /// Leaf of `host` in `plane` and the leaf port facing it.
    pub fn host_leaf(&self, host: NodeId, plane: u16) -> Option<NodeId> {
        let li = self.host_leaf[host.idx() * self.np + plane as usize];
        (li != NONE).then(|| NodeId(self.plane_leaf0[plane as usize] + li))
    }

    /// Whether `src` can reach `dst` through its port in `plane` (both host links up and a
    /// route between their leaves).
    pub fn plane_reaches(&self, src: NodeId, dst: NodeId, plane: u16) -> bool {
        let pl = plane as usize;
        let ks = src.idx() * self.np + pl;
        let kd = dst.idx() * self.np + pl;
        if self.host_leaf[ks] == NONE || self.host_leaf[kd] == NONE {
            return false;
        }
        if !self.link_up[self.host_link[ks] as usize] || self.host_leaf_port[kd] == NO_PORT {
            return false;
        }
        let ls = self.plane_leaf0[pl] + self.host_leaf[ks];
        let e = self.entries[self.row(ls) + self.host_leaf[kd] as usize];
        e != NO_ROUTE
    }

    /// Host ports of `src` that can reach `dst` (one per usable plane), in plane order.
    /// This is how a host picks its NIC port / plane: any of these, e.g. by flow hash
    /// ([`Self::pick_host_port`]).
    pub fn host_ports(&self, src: NodeId, dst: NodeId) -> impl Iterator<Item = (u16, Port)> + '_ {
        (0..self.np as u16)
            .filter(move |&p| self.plane_reaches(src, dst, p))
            .map(move |p| (p, self.host_port[src.idx() * self.np + p as usize]))
    }

    /// Picks one usable `(plane, host port)` of `src` toward `dst` by `hash`.
    pub fn pick_host_port(&self, src: NodeId, dst: NodeId, hash: u64) -> Option<(u16, Port)> {
        let n = self.host_ports(src, dst).count();
        if n == 0 {
            return None;
        }
        self.host_ports(src, dst).nth((hash % n as u64) as usize)
    }

    /// ECMP width statistics.
    pub fn width_stats(&self) -> WidthStats {
        let mut s = WidthStats {
            entries: 0,
            no_route: 0,
            total_next_hops: 0,
            min: u32::MAX,
            max: 0,
            mean: 0.0,
            groups: self.groups.len(),
        };
        for &e in &self.entries {
            match e {
                LOCAL => {}
                NO_ROUTE => s.no_route += 1,
                g => {
                    let w = self.groups.get(g).len() as u32;
                    s.entries += 1;
                    s.total_next_hops += w as u64;
                    s.min = s.min.min(w);
                    s.max = s.max.max(w);
                }
            }
        }
        if s.entries == 0 {
            s.min = 0;
        } else {
            s.mean = s.total_next_hops as f64 / s.entries as f64;
        }
        s
    }

    /// Total table entries (switch × destination leaf).
    pub fn num_entries(&self) -> usize {
        self.entries.len()
    }

    /// Leaves below `v` (reachable going only down over live links), as plane-local indices.
    fn descendants(&self, f: &Fabric, v: NodeId, out: &mut Vec<u32>, seen: &mut [bool]) {
        let mut stack = vec![v];
        let pl = self.sw_plane[(v.0 - self.nh) as usize] as usize;
        while let Some(n) = stack.pop() {
            if f.tier(n) == TIER_LEAF {
                let li = n.0 - self.plane_leaf0[pl];
                if !seen[li as usize] {
                    seen[li as usize] = true;
                    out.push(li);
                }
                continue;
            }
            let ni = (n.0 - self.nh) as usize;
            for k in 0..self.first_up[ni] {
                let l = f.port_link(n, k);
                if self.link_up[l.idx()] {
                    stack.push(f.peer(n, k));
                }
            }
        }
    }

    #[allow(clippy::needless_range_loop)]
    /// Marks links down and re-routes incrementally: destinations below a failed link are
    /// recomputed; elsewhere the failed port is removed from the one group that used it
    /// (unless that empties the group, which forces a recompute of that destination).
    ///
    /// Detour entries ([`crate::lanes::route_around`]) are removed first (listed as
    /// changed): route around again after the failure.
    pub fn fail_links(&mut self, f: &Fabric, links: &[LinkId]) -> RerouteReport {
        let mut rep = RerouteReport::default();
        rep.changed.extend(self.clear_detours());
        let mut before = 0u64;
        let mut after = 0u64;
        let np = self.np;
        let mut full: Vec<Vec<u32>> = vec![Vec::new(); np];
        let mut seen: Vec<Vec<bool>> = self
            .plane_leaves
            .iter()
            .map(|&n| vec![false; n as usize])
            .collect();
        let mut patches: Vec<(NodeId, Port, usize)> = Vec::new();
        let mut newly = Vec::new();
        for &l in links {
            if !self.link_up[l.idx()] {
                continue;
            }
            newly.push(l);
            let link = *f.link(l);
            if f.is_host(link.a) {
                continue;
            }
            let pl = self.sw_plane[(link.a.0 - self.nh) as usize] as usize;
            let lateral = f.tier(link.a) == f.tier(link.b);
            self.descendants(f, link.a, &mut full[pl], &mut seen[pl]);
            if lateral {
                self.descendants(f, link.b, &mut full[pl], &mut seen[pl]);
            } else {
                patches.push((link.a, link.a_port, pl));
            }
        }
        for &l in &newly {
            self.link_up[l.idx()] = false;
            let link = *f.link(l);
            if f.is_host(link.a) {
                for pl in 0..np {
                    let k = link.a.idx() * np + pl;
                    if self.host_link[k] == l.0 {
                        self.host_leaf_port[k] = NO_PORT;
                        // the leaf's delivery entry changes (for single-path tables)
                        rep.changed.push((link.b, link.b));
                    }
                }
            }
        }
        rep.links_failed = newly.len();
        let mut buf = Vec::new();
        for (v, port, pl) in patches {
            let row = self.row(v.0);
            for li in 0..self.plane_leaves[pl] as usize {
                if seen[pl][li] {
                    continue;
                }
                let e = self.entries[row + li];
                if e == LOCAL || e == NO_ROUTE {
                    continue;
                }
                let g = self.groups.get(e);
                if !g.contains(&port) {
                    continue;
                }
                buf.clear();
                buf.extend(g.iter().copied().filter(|&p| p != port));
                if buf.is_empty() {
                    seen[pl][li] = true;
                    full[pl].push(li as u32);
                } else {
                    let id = self.groups.intern(&buf);
                    before += self.groups.get(e).len() as u64;
                    after += buf.len() as u64;
                    self.entries[row + li] = id;
                    rep.entries_patched += 1;
                    rep.changed
                        .push((v, NodeId(self.plane_leaf0[pl] + li as u32)));
                }
            }
        }
        for (pl, list) in full.iter().enumerate() {
            let (b, a) = self.recompute_dests(f, pl, list, &mut rep.changed);
            before += b;
            after += a;
            rep.dests_recomputed += list.len();
        }
        rep.width_lost = before.saturating_sub(after);
        rep
    }

    /// Fails every link of the given switches (or hosts).
    pub fn fail_nodes(&mut self, f: &Fabric, nodes: &[NodeId]) -> RerouteReport {
        let links: Vec<LinkId> = nodes
            .iter()
            .flat_map(|&n| f.ports(n).map(|(_, l)| l))
            .collect();
        self.fail_links(f, &links)
    }

    /// Brings links back up and recomputes all tables (not incremental).
    pub fn restore_links(&mut self, f: &Fabric, links: &[LinkId]) {
        let mut up = std::mem::take(&mut self.link_up);
        for &l in links {
            up[l.idx()] = true;
        }
        let mut r = Routes::compute(f);
        for (i, &u) in up.iter().enumerate() {
            if !u {
                r.link_up[i] = true;
            }
        }
        let down: Vec<LinkId> = (0..up.len())
            .filter(|&i| !up[i])
            .map(|i| LinkId(i as u32))
            .collect();
        r.fail_links(f, &down);
        *self = r;
    }

    /// Links currently down.
    pub fn failed_links(&self) -> impl Iterator<Item = LinkId> + '_ {
        self.link_up
            .iter()
            .enumerate()
            .filter(|(_, u)| !**u)
            .map(|(i, _)| LinkId(i as u32))
    }

    /// Number of planes.
    pub fn num_planes(&self) -> usize {
        self.np
    }

    /// Writes a detour entry (next hops `ports`, sorted, `dist` hops to the leaf) where the
    /// up*/down* tables have none, and remembers it as a detour.
    pub(crate) fn set_detour(&mut self, switch: NodeId, leaf: NodeId, ports: &[Port], dist: u8) {
        let si = (switch.0 - self.nh) as usize;
        let pl = self.sw_plane[si] as usize;
        let k = self.sw_row[si] as usize + (leaf.0 - self.plane_leaf0[pl]) as usize;
        debug_assert_eq!(
            self.entries[k], NO_ROUTE,
            "a detour replaces only a missing route"
        );
        self.entries[k] = self.groups.intern(ports);
        self.dist[k] = dist.min(INF - 1);
        self.detours.push((switch, leaf));
    }

    /// Removes every detour entry (back to no route) and returns them.
    pub fn clear_detours(&mut self) -> Vec<(NodeId, NodeId)> {
        let d = std::mem::take(&mut self.detours);
        for &(s, leaf) in &d {
            let si = (s.0 - self.nh) as usize;
            let pl = self.sw_plane[si] as usize;
            let k = self.sw_row[si] as usize + (leaf.0 - self.plane_leaf0[pl]) as usize;
            self.entries[k] = NO_ROUTE;
            self.dist[k] = INF;
        }
        d
    }

    /// Detour entries `(switch, destination leaf)` written by
    /// [`crate::lanes::route_around`] (empty for pure up*/down* tables).
    pub fn detours(&self) -> &[(NodeId, NodeId)] {
        &self.detours
    }

    /// Overwrites one entry (an empty list means no route). For tests of the verifier
    /// and for hand-written tables; `distance` is left unchanged.
    pub fn set_entry(&mut self, switch: NodeId, leaf: NodeId, ports: &[Port]) {
        let si = (switch.0 - self.nh) as usize;
        let pl = self.sw_plane[si] as usize;
        let li = leaf.0 - self.plane_leaf0[pl];
        assert!(li < self.plane_leaves[pl], "leaf not in the switch's plane");
        let mut v = ports.to_vec();
        v.sort_unstable();
        let g = if v.is_empty() {
            NO_ROUTE
        } else {
            self.groups.intern(&v)
        };
        self.entries[self.sw_row[si] as usize + li as usize] = g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::*;
    use crate::units::Rate;

    #[test]
    fn fat_tree_widths() {
        let k = 8u32;
        let f = fat_tree(k, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let h = k / 2;
        // leaf of host 0 is the first switch; a leaf in another pod goes up on all k/2 ports
        let leaf0 = NodeId(f.num_hosts() as u32);
        let far_host = NodeId(f.num_hosts() as u32 - 1);
        assert_eq!(r.next_hops(leaf0, far_host).len() as u32, h);
        assert!(
            r.next_hops(leaf0, far_host)
                .iter()
                .all(|&p| f.direction(leaf0, p) == Direction::Up)
        );
        // delivering leaf
        assert_eq!(r.next_hops(leaf0, NodeId(1)), &[1]);
        // a core goes down on exactly one port
        let core = f.switches_in_tier(3).next().unwrap();
        assert_eq!(r.next_hops(core, far_host).len(), 1);
        let ws = r.width_stats();
        assert_eq!(ws.no_route, 0);
        assert_eq!(ws.max, h);
        assert!(r.groups().len() < 3 * k as usize);
    }

    #[test]
    fn incremental_matches_full_recompute() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let sw_links: Vec<LinkId> = (0..f.num_links() as u32)
            .map(LinkId)
            .filter(|&l| !f.is_host(f.link(l).a))
            .collect();
        for pick in [0usize, 7, 40, 100, 200, sw_links.len() - 1] {
            let l = sw_links[pick];
            let mut inc = Routes::compute(&f);
            let rep = inc.fail_links(&f, &[l]);
            assert_eq!(rep.links_failed, 1);
            let mut full = Routes::compute(&f);
            full.link_up[l.idx()] = false;
            full.compute_plane(&f, 0);
            for s in f.switches() {
                for d in f.hosts() {
                    assert_eq!(
                        inc.next_hops(s, d),
                        full.next_hops(s, d),
                        "link {pick} sw {s} dst {d}"
                    );
                }
            }
            assert!(rep.width_lost > 0);
        }
    }

    #[test]
    fn host_port_choice_multi_plane() {
        let f = multi_plane_spec(fat_tree_spec(4, Rate::gbps(100)), 2)
            .build("x")
            .unwrap();
        let mut r = Routes::compute(&f);
        let (a, b) = (NodeId(0), NodeId(15));
        assert_eq!(r.host_ports(a, b).collect::<Vec<_>>(), vec![(0, 0), (1, 1)]);
        let att = f.attachment(b, 0).unwrap();
        r.fail_links(&f, &[att.link]);
        assert_eq!(r.host_ports(a, b).collect::<Vec<_>>(), vec![(1, 1)]);
        assert_eq!(r.pick_host_port(a, b, 12345), Some((1, 1)));
        assert!(r.next_hops(att.leaf, b).is_empty());
    }
}
