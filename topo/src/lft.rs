//! Single-path balanced forwarding tables (the InfiniBand fat-tree way): one output port
//! per (switch, destination host port), like OpenSM's `ftree` / d-mod-k routing
//! (Zahavi, "Fat-tree routing and node ordering providing contention free traffic for MPI
//! global collectives", JPDC 2012; Gómez et al., "Deterministic versus adaptive routing in
//! fat-trees", IPDPS 2007).
//!
//! Each plane is its own subnet: its columns are the host ports attached to it, ordered by
//! (leaf, leaf port), so destination `c` is the `c`-th host port of the plane. The port is
//! taken from the up*/down* ECMP group of [`Routes`]: at a switch of tier `t` the choice is
//! `group[(c / div_t) mod len]` with `div_1 = 1`, `div_2 = up-width of a leaf`, `div_3 =
//! div_2 × up-width of a tier-2 switch` — d-mod-k: destinations that share a leaf uplink
//! are spread over the next tier's uplinks, so every top switch carries a distinct set of
//! destinations.
//!
//! Storage: one flat array per plane, `switches × columns`, one byte per entry when every
//! port number fits below 255, two bytes otherwise. The stored value is **port + 1**, and
//! 0 means "no route" (so a fresh table is zero pages from the allocator and every entry
//! is written once); [`PlaneLft::get`] returns the port itself.

use crate::model::*;
use crate::routing::{LOCAL, NO_ROUTE, Routes};

/// Port storage of a plane's table.
#[derive(Debug, Clone)]
pub enum LftPorts {
    /// One byte per entry: port + 1, 0 = no route.
    U8(Vec<u8>),
    /// Two bytes per entry: port + 1, 0 = no route.
    U16(Vec<u16>),
}

/// Single-path table of one plane.
#[derive(Debug, Clone)]
pub struct PlaneLft {
    /// Plane.
    pub plane: u16,
    /// First switch id of the plane (rows are `switch - first_switch`).
    pub first_switch: u32,
    /// Number of switches (rows).
    pub rows: u32,
    /// Destination host of each column.
    pub columns: Vec<NodeId>,
    /// First column of each leaf of the plane (len = leaves + 1).
    leaf_col: Vec<u32>,
    /// Per switch: divisor of the d-mod-k choice.
    div: Vec<u32>,
    /// The table.
    pub ports: LftPorts,
    /// Leaf rows: the columns [`PlaneLft::rebalance_leaf`] moved off their d-mod-k port.
    moved: std::collections::HashMap<u32, Vec<u32>>,
    /// Rows spread as a whole (degraded or narrowed when last filled): not plain d-mod-k
    /// outside the columns a re-route changes, so an update rewrites them whole.
    spread: std::collections::HashSet<u32>,
}

/// Single-path tables of all planes.
#[derive(Debug, Clone)]
pub struct Lft {
    /// One table per plane.
    pub planes: Vec<PlaneLft>,
    /// `[host * planes + plane]` → column (u32::MAX: not in plane).
    col_of: Vec<u32>,
}

/// Host ports of a plane as `(leaf, leaf port, host)`, in column order.
fn plane_columns(f: &Fabric, plane: u16) -> Vec<(u32, Port, NodeId)> {
    let mut cols: Vec<(u32, Port, NodeId)> = f
        .hosts()
        .filter_map(|h| f.attachment(h, plane).map(|a| (a.leaf.0, a.leaf_port, h)))
        .collect();
    cols.sort_unstable();
    cols
}

/// d-mod-k divisor of each switch tier (1, 2, 3) of a plane: `1`, the number of distinct
/// switches a leaf's up ports reach, that × the distinct switches a tier-2 switch's up
/// ports reach. Distinct switches, not ports: with parallel links (two leaf ports to the
/// same aggregation switch) every destination residue still arrives at that switch, so
/// dividing by the port count would leave some of its up ports without destinations.
fn tier_divisors(f: &Fabric, plane: u16) -> [u32; 3] {
    let p = f.plane_info(plane);
    let upw = |t: usize| -> u32 {
        p.tiers[t]
            .clone()
            .next()
            .map(|s| {
                let n = NodeId(s);
                let mut peers: Vec<NodeId> = (0..f.degree(n) as Port)
                    .filter(|&k| f.direction(n, k) == Direction::Up)
                    .map(|k| f.peer(n, k))
                    .collect();
                peers.sort_unstable();
                peers.dedup();
                peers.len() as u32
            })
            .unwrap_or(1)
            .max(1)
    };
    [1, upw(0), upw(0) * upw(1)]
}

impl Lft {
    /// Computes the single-path tables from the ECMP tables.
    pub fn compute(f: &Fabric, r: &Routes) -> Lft {
        let np = f.num_planes();
        let mut col_of = vec![u32::MAX; f.num_hosts() * np];
        let mut planes = Vec::with_capacity(np);
        for (pi, p) in f.planes().iter().enumerate() {
            let leaves = p.leaves();
            let nl = leaves.len();
            let cols = plane_columns(f, pi as u16);
            let mut leaf_col = vec![0u32; nl + 1];
            for &(l, _, _) in &cols {
                leaf_col[(l - leaves.start) as usize + 1] += 1;
            }
            for i in 0..nl {
                leaf_col[i + 1] += leaf_col[i];
            }
            let columns: Vec<NodeId> = cols.iter().map(|c| c.2).collect();
            for (c, &h) in columns.iter().enumerate() {
                col_of[h.idx() * np + pi] = c as u32;
            }
            let sw = p.switches();
            let tier_div = tier_divisors(f, pi as u16);
            let div: Vec<u32> = sw
                .clone()
                .map(|s| tier_div[f.tier(NodeId(s)) as usize - 1])
                .collect();
            let rows = sw.len();
            let ncol = columns.len();
            let wide = sw.clone().any(|s| f.degree(NodeId(s)) >= 255);
            let mut t = PlaneLft {
                plane: pi as u16,
                first_switch: sw.start,
                rows: rows as u32,
                columns,
                leaf_col,
                div,
                ports: if wide {
                    LftPorts::U16(vec![0; rows * ncol])
                } else {
                    LftPorts::U8(vec![0; rows * ncol])
                },
                moved: Default::default(),
                spread: Default::default(),
            };
            let mut pat = Patterns::new(r);
            for s in sw {
                t.fill_row(f, r, NodeId(s), None, &mut pat);
            }
            planes.push(t);
        }
        Lft { planes, col_of }
    }

    /// Rewrites every entry from `r` into the existing arrays (same fabric): the whole-table
    /// recompute of a running subnet manager, without allocating (or page-faulting) again.
    pub fn recompute(&mut self, f: &Fabric, r: &Routes) {
        let mut pat = Patterns::new(r);
        for t in &mut self.planes {
            let first = t.first_switch;
            for s in first..first + t.rows {
                t.fill_row(f, r, NodeId(s), None, &mut pat);
            }
        }
    }

    /// Output port of `switch` toward host `dst` (`None`: no route or not in plane).
    pub fn port(&self, f: &Fabric, switch: NodeId, dst: NodeId) -> Option<Port> {
        let pl = f.plane(switch)? as usize;
        let c = self.col_of[dst.idx() * self.planes.len() + pl];
        if c == u32::MAX {
            return None;
        }
        self.planes[pl].get(switch, c as usize)
    }

    /// Column of host `dst` in `plane`'s table.
    pub fn column(&self, dst: NodeId, plane: u16) -> Option<usize> {
        let c = self.col_of[dst.idx() * self.planes.len() + plane as usize];
        (c != u32::MAX).then_some(c as usize)
    }

    /// Updates the rows touched by a re-route (`changed` from
    /// [`crate::routing::RerouteReport::changed`]): only the columns of the changed
    /// destination leaves are rewritten.
    pub fn update(&mut self, f: &Fabric, r: &Routes, changed: &[(NodeId, NodeId)]) {
        let mut pat = Patterns::new(r);
        let mut whole_rows: Vec<NodeId> = Vec::new();
        let mut leaf_rows: Vec<NodeId> = Vec::new();
        let mut spread: std::collections::HashMap<NodeId, bool> = Default::default();
        for &(s, leaf) in changed {
            if let Some(pl) = f.plane(s) {
                // Spread now, or spread before and maybe plain d-mod-k now: the whole row.
                let t = &self.planes[pl as usize];
                let was_spread = t.spread.contains(&(s.0 - t.first_switch));
                let whole = *spread.entry(s).or_insert_with(|| {
                    was_spread || pat.failures && (degraded(f, r, s) || narrowed(f, r, s))
                });
                if whole {
                    whole_rows.push(s); // spread over its live up ports: whole row, once
                } else {
                    self.planes[pl as usize].fill_row_dmodk(f, r, s, Some(leaf), &mut pat);
                    if f.tier(s) == TIER_LEAF {
                        leaf_rows.push(s); // re-balanced once, after all its columns
                    }
                }
            }
        }
        // A switch whose own up link failed is spread whole even when none of its entries
        // changed (e.g. a failed core leaves its aggregation switch's rows as they were).
        if pat.failures {
            for t in &self.planes {
                for row in 0..t.rows {
                    let s = NodeId(t.first_switch + row);
                    if !t.spread.contains(&row) && degraded(f, r, s) {
                        whole_rows.push(s);
                    }
                }
            }
        }
        whole_rows.sort_unstable();
        whole_rows.dedup();
        for s in whole_rows {
            if let Some(pl) = f.plane(s) {
                self.planes[pl as usize].fill_row(f, r, s, None, &mut pat);
            }
        }
        leaf_rows.sort_unstable();
        leaf_rows.dedup();
        for s in leaf_rows {
            if let Some(pl) = f.plane(s) {
                self.planes[pl as usize].rebalance_leaf(f, r, s, pat.failures);
            }
        }
    }

    /// Total entries over all planes.
    pub fn num_entries(&self) -> usize {
        self.planes
            .iter()
            .map(|p| p.rows as usize * p.columns.len())
            .sum()
    }

    /// Bytes of table storage.
    pub fn bytes(&self) -> usize {
        self.planes
            .iter()
            .map(|p| match &p.ports {
                LftPorts::U8(v) => v.len(),
                LftPorts::U16(v) => v.len() * 2,
            })
            .sum()
    }
}

impl PlaneLft {
    /// Entry of row `switch`, column `c`.
    #[inline]
    pub fn get(&self, switch: NodeId, c: usize) -> Option<Port> {
        let i = (switch.0 - self.first_switch) as usize * self.columns.len() + c;
        let x = match &self.ports {
            LftPorts::U8(v) => v[i] as Port,
            LftPorts::U16(v) => v[i],
        };
        x.checked_sub(1)
    }

    /// Sets entry (`switch`, column `c`) to `port` (`None`: no route), e.g. to load a table
    /// another router computed. Panics if `port` does not fit the table's storage.
    pub fn set_entry(&mut self, switch: NodeId, c: usize, port: Option<Port>) {
        let i = (switch.0 - self.first_switch) as usize * self.columns.len() + c;
        let v = port.map_or(0, |p| p + 1);
        if let LftPorts::U8(_) = self.ports {
            assert!(v <= u8::MAX as Port, "port {v} does not fit one byte");
        }
        self.set(i, v);
    }

    /// The d-mod-k divisor of `switch`'s row: entry `c` takes group member
    /// `(c / divisor) mod len`.
    pub fn divisor(&self, switch: NodeId) -> u32 {
        self.div[(switch.0 - self.first_switch) as usize]
    }

    /// Destinations per output port of `switch` (index = port number).
    pub fn port_loads(&self, f: &Fabric, switch: NodeId) -> Vec<u32> {
        // Counted by stored value (port + 1; 0 = no route), one pass over the row.
        let mut loads = vec![0u32; f.degree(switch) + 1];
        let row = self.row_range(switch, 0..self.columns.len());
        match &self.ports {
            LftPorts::U8(v) => v[row].iter().for_each(|&x| loads[x as usize] += 1),
            LftPorts::U16(v) => v[row].iter().for_each(|&x| loads[x as usize] += 1),
        }
        loads.remove(0);
        loads
    }

    /// Copies the stored values (port + 1; 0 = no route) of `switch`'s row at `cols` into
    /// the start of `out`, for readers of whole rows.
    pub fn raw_row(&self, switch: NodeId, cols: std::ops::Range<usize>, out: &mut [Port]) {
        let row = self.row_range(switch, cols);
        let out = &mut out[..row.len()];
        match &self.ports {
            LftPorts::U8(v) => {
                for (o, &x) in out.iter_mut().zip(&v[row]) {
                    *o = x as Port;
                }
            }
            LftPorts::U16(v) => out.copy_from_slice(&v[row]),
        }
    }

    /// Where `switch`'s entries at `cols` lie in the table.
    fn row_range(&self, switch: NodeId, cols: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let row = (switch.0 - self.first_switch) as usize * self.columns.len();
        row + cols.start..row + cols.end
    }

    /// Fills `switch`'s row (or only `only_leaf`'s columns): d-mod-k, except on a switch
    /// with a failed up link, whose whole row is spread by [`PlaneLft::fill_row_balanced`],
    /// and on a switch whose up groups narrowed, whose narrowed columns are re-spread
    /// ([`PlaneLft::respread_narrowed`]).
    fn fill_row(
        &mut self,
        f: &Fabric,
        r: &Routes,
        s: NodeId,
        only_leaf: Option<NodeId>,
        pat: &mut Patterns,
    ) {
        let row = s.0 - self.first_switch;
        if pat.failures && degraded(f, r, s) {
            self.moved.remove(&row);
            self.spread.insert(row);
            self.fill_row_balanced(f, r, s);
        } else if pat.failures && narrowed(f, r, s) {
            self.spread.insert(row);
            self.fill_row_dmodk(f, r, s, None, pat);
            self.respread_narrowed(f, r, s);
        } else {
            // A row spread before is rewritten whole (its other columns are not d-mod-k).
            let was_spread = self.spread.remove(&row);
            let only_leaf = if was_spread { None } else { only_leaf };
            self.fill_row_dmodk(f, r, s, only_leaf, pat);
            if f.tier(s) == TIER_LEAF {
                self.rebalance_leaf(f, r, s, pat.failures);
            }
        }
    }

    /// The d-mod-k entry (port + 1, 0 = none) of `s`'s row at column `c`, as
    /// [`Self::fill_row_dmodk`] writes it.
    fn dmodk_value(&self, r: &Routes, s: NodeId, c: usize) -> Port {
        let li = self.leaf_col.partition_point(|&x| x as usize <= c) - 1;
        match r.row_entries(s)[li] {
            LOCAL => r
                .next_hops(s, self.columns[c])
                .first()
                .map_or(0, |&p| p + 1),
            NO_ROUTE => 0,
            g => {
                let grp = r.groups().get(g);
                let div = self.div[(s.0 - self.first_switch) as usize] as usize;
                grp[(c / div) % grp.len()] + 1
            }
        }
    }

    /// A leaf row after its d-mod-k fill (leaves divide by 1, so each destination leaf's
    /// columns go round its group): failures elsewhere narrow some groups (they leave out
    /// the up ports whose aggregation switch lost its way to that leaf), so the ports they
    /// leave out fall behind and the others pile up (13 % over the ideal at k=8 with 10 %
    /// failed links, 16 % on deepseek-mpft). Moves the fewest columns that bring every live
    /// up port to at most ⌈routed / live ports⌉: from the row's start, a column on a port
    /// over that level goes to the least-loaded port of its own group that is under it.
    /// The moved columns are remembered, so an update first puts them back (the row is then
    /// plain d-mod-k of the current routes again) and the result equals a full compute.
    /// Cost: O(leaves + runs of equal entries × group width) for the loads, plus the scan up
    /// to the last move, instead of rewriting the row.
    fn rebalance_leaf(&mut self, f: &Fabric, r: &Routes, s: NodeId, failures: bool) {
        let row = s.0 - self.first_switch;
        let base = row as usize * self.columns.len();
        if let Some(cols) = self.moved.remove(&row) {
            for c in cols {
                let v = self.dmodk_value(r, s, c as usize);
                self.set(base + c as usize, v);
            }
        }
        if !failures || self.div[row as usize] != 1 {
            return;
        }
        let up = live_up_ports(f, r, s);
        let live = up.iter().filter(|&&u| u).count() as u64;
        let entries = r.row_entries(s);
        let nl = self.leaf_col.len() - 1;
        // Destinations per port of the d-mod-k fill, per run: column c takes grp[c mod n].
        // Runs of leaves with the same entry are counted at once.
        let mut load = vec![0u64; f.degree(s)];
        let mut narrowed = false;
        let mut li = 0;
        while li < nl {
            let e = entries[li];
            let mut lj = li + 1;
            while lj < nl && entries[lj] == e {
                lj += 1;
            }
            let (c0, c1) = (self.leaf_col[li] as u64, self.leaf_col[lj] as u64);
            li = lj;
            if e == LOCAL || e == NO_ROUTE {
                continue;
            }
            let grp = r.groups().get(e);
            let n = grp.len() as u64;
            narrowed |= n < live;
            for (i, &p) in grp.iter().enumerate() {
                let below = |m: u64| (m + n - 1 - i as u64) / n; // c < m with c mod n == i
                load[p as usize] += below(c1) - below(c0);
            }
        }
        if !narrowed || live == 0 {
            return;
        }
        let total: u64 = load.iter().sum();
        let level = total.div_ceil(live);
        let mut excess: u64 = load.iter().map(|&l| l.saturating_sub(level)).sum();
        let mut moved = Vec::new();
        let mut li = 0;
        while excess > 0 && li < nl {
            let e = entries[li];
            let cols = self.leaf_col[li] as usize..self.leaf_col[li + 1] as usize;
            li += 1;
            if e == LOCAL || e == NO_ROUTE {
                continue;
            }
            let grp = r.groups().get(e);
            for c in cols {
                let Some(p) = self.get(s, c) else { continue };
                if load[p as usize] <= level {
                    continue;
                }
                let Some(&q) = grp
                    .iter()
                    .filter(|&&q| load[q as usize] < level)
                    .min_by_key(|&&q| load[q as usize])
                else {
                    continue; // no port of this group has room: another column will move
                };
                load[p as usize] -= 1;
                load[q as usize] += 1;
                self.set(base + c, q + 1);
                moved.push(c as u32);
                excess -= 1;
                if excess == 0 {
                    break;
                }
            }
        }
        if !moved.is_empty() {
            self.moved.insert(row, moved);
        }
    }

    /// For a switch whose up groups narrowed through failures elsewhere (no failed up link
    /// of its own), after a d-mod-k fill: the columns of narrowed groups choose first,
    /// narrowest first, each the least-loaded member (ties: the d-mod-k member); then the
    /// columns of full-width up groups keep their d-mod-k port while that port is under its
    /// quota (water-filling the up ports to even loads), else take the next port that is.
    /// O(columns × a few) per row, where sorting the whole row as
    /// [`Self::fill_row_balanced`] does made a one-link re-route at k=48 take 8.4 s.
    fn respread_narrowed(&mut self, f: &Fabric, r: &Routes, s: NodeId) {
        let row = (s.0 - self.first_switch) as usize;
        let base = row * self.columns.len();
        let up = live_up_ports(f, r, s);
        let ports: Vec<Port> = (0..f.degree(s) as Port)
            .filter(|&k| up[k as usize])
            .collect();
        let mut todo: Vec<(usize, u32, u32)> = Vec::new();
        let mut full: Vec<u32> = Vec::new();
        let entries = r.row_entries(s);
        for (li, &e) in entries.iter().enumerate().take(self.leaf_col.len() - 1) {
            if e == LOCAL || e == NO_ROUTE {
                continue;
            }
            let g = r.groups().get(e);
            if !up[g[0] as usize] {
                continue; // routed down: one way, d-mod-k as filled
            }
            let cols = self.leaf_col[li]..self.leaf_col[li + 1];
            if g.len() < ports.len() {
                todo.extend(cols.map(|c| (g.len(), c, e)));
            } else {
                full.extend(cols);
            }
        }
        todo.sort_unstable();
        let mut load = vec![0u32; f.degree(s)];
        self.assign_least_loaded(r, base, self.div[row] as usize, &todo, &mut load);
        let mut quota = water_fill(&ports, &load, full.len() as u32);
        let mut pos = vec![0usize; f.degree(s)];
        for (i, &p) in ports.iter().enumerate() {
            pos[p as usize] = i;
        }
        for c in full {
            let Some(m) = self.get(s, c as usize) else {
                continue;
            };
            let mut i = pos[m as usize];
            while quota[ports[i] as usize] == 0 {
                i = (i + 1) % ports.len();
            }
            quota[ports[i] as usize] -= 1;
            self.set(base + c as usize, ports[i] + 1);
        }
    }

    /// Assigns each `(group width, column, group)` of `todo`, in order, to the member of its
    /// group with the lowest `load` (ties: the d-mod-k member `(c / div) mod width` first).
    fn assign_least_loaded(
        &mut self,
        r: &Routes,
        base: usize,
        div: usize,
        todo: &[(usize, u32, u32)],
        load: &mut [u32],
    ) {
        for &(n, c, g) in todo {
            let grp = r.groups().get(g);
            let start = (c as usize / div) % n;
            let mut best = grp[start];
            for i in 1..n {
                let q = grp[(start + i) % n];
                if load[q as usize] < load[best as usize] {
                    best = q;
                }
            }
            load[best as usize] += 1;
            self.set(base + c as usize, best + 1);
        }
    }

    /// Minhop-like spread for a degraded switch: columns in order, each takes the member of
    /// its group with the fewest destinations so far (ties: the d-mod-k member first), so
    /// destinations spread evenly over the surviving up ports even when failures leave
    /// groups of different widths (plain d-mod-k over them gave 48/32/16 on three live
    /// uplinks of a k=8 aggregation switch).
    fn fill_row_balanced(&mut self, f: &Fabric, r: &Routes, s: NodeId) {
        let row = (s.0 - self.first_switch) as usize;
        let ncol = self.columns.len();
        let div = self.div[row] as usize;
        let base = row * ncol;
        let entries = r.row_entries(s);
        // (group width, column, group): the narrowest groups choose first, so the columns
        // that can use only a few ports get them before the flexible ones fill them up.
        let mut todo: Vec<(usize, u32, u32)> = Vec::new();
        for (li, &e) in entries.iter().enumerate().take(self.leaf_col.len() - 1) {
            for c in self.leaf_col[li]..self.leaf_col[li + 1] {
                let p = match e {
                    LOCAL => r
                        .next_hops(s, self.columns[c as usize])
                        .first()
                        .map_or(0, |&p| p + 1),
                    NO_ROUTE => 0,
                    g => {
                        todo.push((r.groups().get(g).len(), c, g));
                        continue;
                    }
                };
                self.set(base + c as usize, p);
            }
        }
        todo.sort_unstable();
        let mut load = vec![0u32; f.degree(s)];
        self.assign_least_loaded(r, base, div, &todo, &mut load);
    }

    /// Stores `port + 1` (0 = no route) at flat index `i`.
    fn set(&mut self, i: usize, v: Port) {
        match &mut self.ports {
            LftPorts::U8(p) => p[i] = v as u8,
            LftPorts::U16(p) => p[i] = v,
        }
    }

    fn fill_row_dmodk(
        &mut self,
        f: &Fabric,
        r: &Routes,
        s: NodeId,
        only_leaf: Option<NodeId>,
        pat: &mut Patterns,
    ) {
        let row = (s.0 - self.first_switch) as usize;
        let ncol = self.columns.len();
        let div = self.div[row] as usize;
        let leaf0 = f.plane_info(self.plane).leaves().start;
        let nl = self.leaf_col.len() - 1;
        let range = match only_leaf {
            Some(l) => {
                let li = (l.0 - leaf0) as usize;
                li..li + 1
            }
            None => 0..nl,
        };
        let base = row * ncol;
        let entries = r.row_entries(s);
        let mut li = range.start;
        while li < range.end {
            let e = entries[li];
            // Coalesce a run of leaves with the same group: the d-mod-k choice depends on
            // the column only, so the run is one pattern copy / fill.
            let mut lj = li + 1;
            if e != LOCAL {
                while lj < range.end && entries[lj] == e {
                    lj += 1;
                }
            }
            let (c0, c1) = (self.leaf_col[li] as usize, self.leaf_col[lj] as usize);
            li = lj;
            match e {
                LOCAL => {
                    for c in c0..c1 {
                        let h = self.columns[c];
                        let p = r.next_hops(s, h).first().map_or(0, |&p| p + 1);
                        self.set(base + c, p);
                    }
                }
                NO_ROUTE => match &mut self.ports {
                    LftPorts::U8(v) => v[base + c0..base + c1].fill(0),
                    LftPorts::U16(v) => v[base + c0..base + c1].fill(0),
                },
                g => {
                    let grp = r.groups().get(g);
                    let n = grp.len();
                    match &mut self.ports {
                        LftPorts::U8(v) => {
                            let out = &mut v[base + c0..base + c1];
                            let period = div * n;
                            if n == 1 {
                                out.fill(grp[0] as u8 + 1);
                            } else if period <= 1 << 16 {
                                // value at column c is grp[(c / div) mod n], periodic in
                                // div × n: copy from a cached repeated pattern
                                let p = pat.get(g, grp, div, c1 - c0);
                                let s0 = c0 % period;
                                out.copy_from_slice(&p[s0..s0 + (c1 - c0)]);
                            } else {
                                let mut c = c0;
                                while c < c1 {
                                    let q = c / div;
                                    let end = ((q + 1) * div).min(c1);
                                    let val = grp[q % n] as u8 + 1;
                                    out[c - c0..end - c0].fill(val);
                                    c = end;
                                }
                            }
                        }
                        LftPorts::U16(v) => {
                            for c in c0..c1 {
                                v[base + c] = grp[(c / div) % n] + 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Quotas (per port number) that bring `ports` from `load` as close to even as `extra` more
/// destinations can: the lowest level every port can be filled to, the remainder one each
/// to the lowest ports below the next level, in port order. They sum to `extra`.
fn water_fill(ports: &[Port], load: &[u32], extra: u32) -> Vec<u32> {
    let room = |level: u32| -> u64 {
        ports
            .iter()
            .map(|&p| u64::from(level.saturating_sub(load[p as usize])))
            .sum()
    };
    // The highest level whose room does not exceed `extra`.
    let (mut lo, mut hi) = (
        0u32,
        ports.iter().map(|&p| load[p as usize]).max().unwrap_or(0) + extra,
    );
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if room(mid) <= u64::from(extra) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut quota = vec![0u32; load.len()];
    let mut left = u64::from(extra) - room(lo);
    for &p in ports {
        quota[p as usize] = lo.saturating_sub(load[p as usize]);
    }
    for &p in ports {
        if left > 0 && load[p as usize] <= lo {
            quota[p as usize] += 1;
            left -= 1;
        }
    }
    quota
}

/// Per port of `s`: an up (or Dragonfly+ global) port whose link is up.
fn live_up_ports(f: &Fabric, r: &Routes, s: NodeId) -> Vec<bool> {
    (0..f.degree(s) as Port)
        .map(|k| f.direction(s, k) != Direction::Down && r.link_is_up(f.port_link(s, k)))
        .collect()
}

/// A switch above the leaves, with all its up links, some of whose up-routed groups are
/// narrower than its live up ports because of failures elsewhere: d-mod-k divides by more
/// than 1 there, so all columns of a narrowed destination leaf land on one port and
/// narrowed leaves pile up (k=16, 10 % failed: 144 destinations on a port of an aggregation
/// switch whose ideal is 104); [`PlaneLft::respread_narrowed`] re-spreads them. Leaves keep
/// d-mod-k (`div` 1 spreads a narrowed leaf's columns cyclically): re-spreading them too made
/// the one-link re-route at k=48 take 111–127 ms instead of 2 ms (every leaf's row).
/// A switch with up ports that lost the route to some destinations entirely counts too:
/// their columns leave holes in the d-mod-k pattern (k=32 with 20 failed links: an
/// aggregation switch at 496 destinations on one port against an ideal of 493).
fn narrowed(f: &Fabric, r: &Routes, s: NodeId) -> bool {
    if f.tier(s) <= TIER_LEAF {
        return false;
    }
    let up = live_up_ports(f, r, s);
    let width = up.iter().filter(|&&u| u).count();
    r.row_entries(s).iter().any(|&e| {
        e == NO_ROUTE && width > 0
            || e != LOCAL && e != NO_ROUTE && {
                let g = r.groups().get(e);
                g.len() < width && up[g[0] as usize]
            }
    })
}

/// Whether failures degraded `s`: one of its up links failed, so some of its destinations
/// can use only some of its up ports; its whole row is spread by
/// [`PlaneLft::fill_row_balanced`]. (Narrower groups without a failed link of its own:
/// [`narrowed`].)
fn degraded(f: &Fabric, r: &Routes, s: NodeId) -> bool {
    (0..f.degree(s) as Port)
        .any(|k| f.direction(s, k) == Direction::Up && !r.link_is_up(f.port_link(s, k)))
}

/// Cache of d-mod-k patterns `grp[(c / div) mod n] + 1`, per (group, divisor), and whether
/// any link has failed (else no switch is degraded and every row is plain d-mod-k).
#[derive(Debug, Default)]
struct Patterns {
    by_key: std::collections::HashMap<(u32, usize), Vec<u8>>,
    failures: bool,
}

impl Patterns {
    fn new(r: &Routes) -> Patterns {
        Patterns {
            by_key: Default::default(),
            failures: r.failed_links().next().is_some(),
        }
    }

    fn get(&mut self, g: u32, grp: &[Port], div: usize, len: usize) -> &[u8] {
        let period = div * grp.len();
        let need = len + period;
        let p = self.by_key.entry((g, div)).or_default();
        if p.len() < need {
            p.clear();
            p.reserve(need);
            for c in 0..need {
                p.push(grp[(c / div) % grp.len()] as u8 + 1);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::fat_tree;
    use crate::units::Rate;

    #[test]
    fn set_entry_overwrites_and_clears_one_entry() {
        let f = fat_tree(4, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let mut t = Lft::compute(&f, &r);
        let p = &mut t.planes[0];
        let s = NodeId(p.first_switch);
        let before: Vec<Option<Port>> = (0..p.columns.len()).map(|c| p.get(s, c)).collect();
        p.set_entry(s, 3, Some(2));
        p.set_entry(s, 5, None);
        for (c, &b) in before.iter().enumerate() {
            let want = match c {
                3 => Some(2),
                5 => None,
                _ => b,
            };
            assert_eq!(p.get(s, c), want, "column {c}");
        }
    }

    /// A k=8 fat-tree's LFTs updated after the link between switches `a` and `b`
    /// fails; checked to equal a full compute and to use only the routes' next hops.
    fn updated_after_failing(a: &str, b: &str) -> (Fabric, Lft) {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let mut t = Lft::compute(&f, &r);
        let names = f.name_index();
        let (a, b) = (names[a], names[b]);
        let l = f.ports(a).find(|&(p, _)| p == b).unwrap().1;
        let rep = r.fail_links(&f, &[l]);
        t.update(&f, &r, &rep.changed);
        let fresh = Lft::compute(&f, &r);
        for s in f.switches() {
            for h in f.hosts() {
                assert_eq!(t.port(&f, s, h), fresh.port(&f, s, h));
                if let Some(p) = t.port(&f, s, h) {
                    assert!(r.next_hops(s, h).contains(&p));
                }
            }
        }
        (f, t)
    }

    /// An aggregation–core link of pod 1 fails (`pod1-agg0--core0-0`): every other pod's
    /// `agg0` reaches pod 1's 16 destinations through 3 of its 4 cores. Plain d-mod-k sends
    /// all 4 columns of a leaf to one core (div 4): 32/28/28/24 on the up ports against the
    /// ideal 28; re-spread, every up port has 28, and the incremental update equals a full
    /// compute.
    #[test]
    fn narrowed_switches_are_respread_to_their_ideal() {
        let (f, t) = updated_after_failing("pod1-agg0", "core0-0");
        let names = f.name_index();
        for pod in [0, 2, 7] {
            let s = names[format!("pod{pod}-agg0").as_str()];
            let loads = t.planes[0].port_loads(&f, s);
            assert_eq!(&loads[4..], &[28, 28, 28, 28], "{}", f.node_name(s));
        }
    }

    /// A leaf–aggregation link of pod 1 fails (`pod1-leaf0--pod1-agg0`): core group 0 can
    /// no longer reach `pod1-leaf0`, so every other pod's `agg0` loses its route to that
    /// leaf's 4 destinations. Plain d-mod-k had put those 4 columns on one up port, which
    /// stayed at 24 while the others kept 28 (ideal 27); re-spread, every up port is at
    /// most 27, and the incremental update equals a full compute.
    #[test]
    fn switches_that_lost_routes_are_respread_to_their_ideal() {
        let (f, t) = updated_after_failing("pod1-leaf0", "pod1-agg0");
        let names = f.name_index();
        for pod in [0, 2, 7] {
            let s = names[format!("pod{pod}-agg0").as_str()];
            let loads = t.planes[0].port_loads(&f, s);
            assert_eq!(loads[4..].iter().sum::<u32>(), 108, "{}", f.node_name(s));
            assert!(
                loads[4..].iter().all(|&n| n <= 27),
                "{}: {loads:?}",
                f.node_name(s)
            );
        }
    }

    /// Issue 21: 26 failed links (10 %) on a k=8 fat-tree narrow leaves' groups; d-mod-k
    /// left a leaf at 35 destinations on one up port against an ideal of 31. Re-balanced,
    /// every leaf without a failed up link of its own is at its ideal, the worst leaf
    /// within 5 %, and updating in two batches gives what a full compute gives.
    #[test]
    fn narrowed_leaves_are_rebalanced_to_their_ideal() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let mut r = Routes::compute(&f);
        let mut t = Lft::compute(&f, &r);
        let links = crate::failures::random_links(&f, 26, 1);
        let (a, b) = links.split_at(13);
        for batch in [a, b] {
            let rep = r.fail_links(&f, batch);
            t.update(&f, &r, &rep.changed);
        }
        let mut moved_rows = 0;
        for s in f.switches_in_tier(TIER_LEAF) {
            if degraded(&f, &r, s) {
                continue;
            }
            let loads = t.planes[0].port_loads(&f, s);
            let up: Vec<u32> = (0..f.degree(s) as Port)
                .filter(|&k| f.direction(s, k) == Direction::Up)
                .map(|k| loads[k as usize])
                .collect();
            let ideal = up.iter().sum::<u32>().div_ceil(up.len() as u32);
            assert!(up.iter().all(|&l| l <= ideal), "{}: {up:?}", f.node_name(s));
            moved_rows += usize::from(
                t.planes[0]
                    .moved
                    .contains_key(&(s.0 - f.num_hosts() as u32)),
            );
        }
        assert!(
            moved_rows > 0,
            "no leaf needed a move: the test lost its point"
        );
        let leaf = &crate::balance::of_lft(&f, &r, &t)[0];
        assert!(leaf.worst_ratio() <= 1.05, "{:?}", leaf.worst_switch);
        let fresh = Lft::compute(&f, &r);
        for s in f.switches() {
            for h in f.hosts() {
                assert_eq!(t.port(&f, s, h), fresh.port(&f, s, h));
            }
        }
    }

    #[test]
    fn water_fill_evens_out() {
        assert_eq!(water_fill(&[0, 1, 2], &[2, 0, 1], 3), vec![0, 2, 1]);
        assert_eq!(water_fill(&[0, 1, 2], &[0, 0, 0], 4), vec![2, 1, 1]);
        assert_eq!(water_fill(&[1, 2], &[9, 5, 0], 2), vec![0, 0, 2]);
        assert_eq!(water_fill(&[0, 1], &[7, 0], 0), vec![0, 0]);
    }

    #[test]
    fn d_mod_k_balances_fat_tree() {
        let k = 8u32;
        let f = fat_tree(k, Rate::gbps(100)).unwrap();
        let r = Routes::compute(&f);
        let t = Lft::compute(&f, &r);
        assert_eq!(t.num_entries(), f.num_switches() * f.num_hosts());
        assert_eq!(t.bytes(), t.num_entries());
        let hosts = k * k * k / 4;
        // Each leaf: its k/2 hosts once each on down ports, the other hosts spread evenly on up ports.
        for s in f.switches_in_tier(1) {
            let loads = t.planes[0].port_loads(&f, s);
            assert!(loads[..(k / 2) as usize].iter().all(|&x| x == 1));
            let up = &loads[(k / 2) as usize..];
            assert!(up.iter().all(|&x| x == (hosts - k / 2) / (k / 2)), "{up:?}");
        }
        // Every core carries exactly hosts / cores destinations per... each destination once.
        for s in f.switches_in_tier(3) {
            let loads = t.planes[0].port_loads(&f, s);
            assert_eq!(loads.iter().sum::<u32>(), hosts);
        }
        // d-mod-k: from any leaf, destination d's core is unique per destination within a pod's view:
        // the upward paths of all hosts to one destination go through the same core (ftree property).
        let dst = NodeId(hosts - 1);
        let mut cores = std::collections::HashSet::new();
        for src_leaf in f.switches_in_tier(1).take(((k / 2) * (k - 1)) as usize) {
            let mut n = src_leaf;
            while f.tier(n) < 3 {
                let p = t.port(&f, n, dst).unwrap();
                n = f.peer(n, p);
            }
            cores.insert(n);
        }
        assert_eq!(cores.len(), 1);
    }
}
