//! Compiling a scenario into a [`Workplan`]: one method per workload kind, and the checks
//! every kind shares (hosts exist, sizes are not zero, priorities are 0..=7, the plan
//! stays under [`MAX_FLOWS`]).

use cc_algos::{Bytes, Duration, Instant, Rate};
use std::collections::HashMap;
use std::path::Path;

use crate::rng::Rng;
use crate::units::{self, HostSet};
use crate::{
    Collective, CompileCtx, FlowId, FlowLine, FlowSpec, Group, Result, Scenario, ScenarioError,
    SizeDist, Workload, Workplan, cm, derangement, gcd,
};

impl Scenario {
    pub(crate) fn compile_one(
        &self,
        wi: usize,
        w: &Workload,
        ctx: &CompileCtx,
        rng: &mut Rng,
        plan: &mut Workplan,
    ) -> Result<()> {
        let first = plan.flows.len();
        let group = plan.groups.len() as u32;
        let (prio, tenant) = self.workload_class(wi, w, ctx)?;
        let mut c = Compiler {
            scenario: self,
            wi,
            n: ctx.hosts,
            plan,
            group,
        };
        let (name, g) = match w {
            Workload::Incast {
                name,
                senders,
                receiver,
                size,
                start,
                ..
            } => (name, c.incast(senders, *receiver, *size, *start, prio)?),
            Workload::Permutation {
                name,
                hosts,
                size,
                start,
                ..
            } => (name, c.permutation(hosts, *size, *start, prio, rng)?),
            Workload::AllToAll {
                name,
                hosts,
                size,
                start,
                ..
            } => (name, c.all_to_all(hosts, *size, *start, prio)?),
            Workload::RingAllreduce {
                name,
                hosts,
                size,
                stride,
                start,
                ..
            } => (name, c.ring_allreduce(hosts, *size, *stride, *start, prio)?),
            Workload::TreeAllreduce {
                name,
                hosts,
                size,
                start,
                ..
            } => (name, c.tree_allreduce(hosts, *size, *start, prio)?),
            Workload::Fairness {
                name,
                senders,
                receiver,
                interval,
                start,
                ..
            } => (
                name,
                c.fairness(senders, *receiver, *interval, *start, prio)?,
            ),
            Workload::Victim {
                name,
                senders,
                receiver,
                size,
                victim_src,
                victim_dst,
                victim_size,
                start,
                victim_start,
                ..
            } => {
                let victim = VictimFlow {
                    src: *victim_src,
                    dst: *victim_dst,
                    size: *victim_size,
                    start: victim_start.unwrap_or(*start),
                };
                (
                    name,
                    c.victim(senders, *receiver, *size, victim, *start, prio)?,
                )
            }
            Workload::Poisson {
                name,
                hosts,
                load,
                size,
                cdf,
                start,
                duration,
                ..
            } => {
                let arrivals = PoissonArrivals {
                    load: *load,
                    size: *size,
                    cdf: cdf.as_deref(),
                    start: *start,
                    duration: *duration,
                    host_rate: ctx.host_rate,
                };
                (name, c.poisson(hosts, &arrivals, prio, rng)?)
            }
            Workload::Flows { name, flow, .. } => (name, c.flows(flow, prio)?),
            Workload::ConnectionMatrix { name, file, .. } => {
                (name, c.connection_matrix(file, prio)?)
            }
        };
        if plan.flows.len() == first {
            return Err(self.invalid(format!("workload[{wi}]"), "produces no flows"));
        }
        if let Some(t) = tenant {
            self.check_tenant_flows(wi, w, t, ctx, &plan.flows[first..])?;
        }
        plan.groups.push(Group {
            name: name.clone().unwrap_or_else(|| format!("{}#{wi}", g.kind)),
            kind: g.kind.to_string(),
            ranks: g.ranks,
            size: g.size,
            collective: g.collective,
        });
        Ok(())
    }
}

/// The most flows one scenario may compile into: 20 million (about 2 GB of flow
/// state in the simulator). A 100k-host all-to-all would be 10¹⁰.
pub const MAX_FLOWS: usize = 20_000_000;

/// Bytes per pipelined chunk of a tree all-reduce (NCCL moves its tree in chunks of this
/// order: a 4 MiB buffer in 8 steps of 512 KiB, less per protocol slice).
pub const TREE_CHUNK: u64 = 256 * 1024;

/// At most this many chunks per tree (a larger buffer gets larger chunks).
pub const TREE_MAX_CHUNKS: u64 = 1024;

/// Chunks a tree connection keeps in flight.
pub const TREE_SLOTS: usize = 2;

/// Parent of rank `i` of `n` in tree `tree` (0 or 1) of NCCL's double binary tree
/// (`ncclGetDtree`; Sanders, Speck, Träff 2009), `None` at the root. Tree 0: rank 0 is
/// the root, its child the highest power of two below `n`, and rank `i`'s parent comes
/// from clearing its lowest set bit `b` and setting `2b` (or only clearing `b` when that
/// is beyond the ranks). Tree 1 mirrors tree 0 (`i → n−1−i`) when `n` is even and shifts
/// it by one rank when `n` is odd, so the inner ranks of one tree are leaves of the other.
/// The flow model (`flow_model::traffic`) uses this function too.
pub fn double_binary_tree(n: usize, tree: u8, i: usize) -> Option<usize> {
    let btree = |i: usize| -> Option<usize> {
        if i == 0 || i >= n {
            return None;
        }
        let bit = i & i.wrapping_neg();
        let up = (i ^ bit) | (bit << 1);
        Some(if up >= n { i ^ bit } else { up })
    };
    match tree {
        0 => btree(i),
        _ if n.is_multiple_of(2) => btree(n - 1 - i).map(|u| n - 1 - u),
        _ => btree((i + n - 1) % n).map(|u| (u + 1) % n),
    }
}

/// What a compiled workload adds to the plan's groups (besides its name).
struct GroupInfo {
    kind: &'static str,
    ranks: u32,
    size: Bytes,
    collective: Option<Collective>,
}

/// The victim flow of a victim workload.
struct VictimFlow {
    src: u32,
    dst: u32,
    size: Bytes,
    start: Duration,
}

/// The arrival process of a Poisson workload.
struct PoissonArrivals<'a> {
    load: f64,
    size: Option<Bytes>,
    cdf: Option<&'a [(f64, f64)]>,
    start: Duration,
    duration: Duration,
    host_rate: Rate,
}

/// Number each flow's connection among the connections between its two hosts
/// ([`FlowSpec::ordinal`]), in plan order: a connection's first flow opens the pair's
/// next ordinal, its later flows copy it.
pub(crate) fn number_connections(flows: &mut [FlowSpec]) {
    let mut next: HashMap<(u32, u32), u32> = HashMap::new();
    for i in 0..flows.len() {
        let f = &flows[i];
        let ordinal = if f.conn == f.id || f.conn as usize >= i {
            let n = next.entry((f.src, f.dst)).or_insert(0);
            *n += 1;
            *n - 1
        } else {
            flows[f.conn as usize].ordinal
        };
        flows[i].ordinal = ordinal;
    }
}

/// Compiles one workload (index `wi`) into flows of `plan`: the checks every kind
/// shares, the flow builder, and one method per kind.
struct Compiler<'a> {
    scenario: &'a Scenario,
    wi: usize,
    /// Hosts in the fabric.
    n: u32,
    plan: &'a mut Workplan,
    group: u32,
}

impl Compiler<'_> {
    fn invalid(&self, f: &str, message: impl Into<String>) -> ScenarioError {
        self.scenario
            .invalid(format!("workload[{}].{f}", self.wi), message)
    }

    fn hosts_of(&self, set: &HostSet, f: &str) -> Result<Vec<u32>> {
        set.resolve(self.n).map_err(|m| self.invalid(f, m))
    }

    fn host(&self, h: u32, f: &str) -> Result<u32> {
        let n = self.n;
        if h < n {
            Ok(h)
        } else {
            Err(self.invalid(
                f,
                format!("host {h} does not exist: the fabric has {n} hosts (0..{n})"),
            ))
        }
    }

    fn at_least_2(&self, h: &[u32], f: &str, what: &str) -> Result<()> {
        if h.len() < 2 {
            return Err(self.invalid(f, format!("{what} needs at least 2 hosts")));
        }
        Ok(())
    }

    fn not_receiver(&self, senders: &[u32], r: u32) -> Result<()> {
        if senders.contains(&r) {
            return Err(self.invalid("senders", format!("includes the receiver {r}")));
        }
        Ok(())
    }

    /// The checks every collective shares: its ranks (at least 2, all in the fabric), a
    /// size above zero and a priority 0..=7.
    fn collective(
        &self,
        hosts: &HostSet,
        size: Bytes,
        priority: u8,
        what: &str,
    ) -> Result<(Vec<u32>, Bytes, u8)> {
        let h = self.hosts_of(hosts, "hosts")?;
        self.at_least_2(&h, "hosts", what)?;
        Ok((h, self.nonzero(size, "size")?, self.prio(priority)?))
    }

    fn nonzero(&self, b: Bytes, f: &str) -> Result<Bytes> {
        if b.0 == 0 {
            Err(self.invalid(f, "must be more than 0 bytes"))
        } else {
            Ok(b)
        }
    }

    fn prio(&self, p: u8) -> Result<u8> {
        if p > 7 {
            Err(self.invalid("priority", format!("{p} is not a priority 0..=7")))
        } else {
            Ok(p)
        }
    }

    /// Refuse a workload that would take the plan past [`MAX_FLOWS`].
    fn room_for(&self, more: u128) -> Result<()> {
        if self.plan.flows.len() as u128 + more > MAX_FLOWS as u128 {
            return Err(self.invalid(
                "kind",
                format!(
                    "would make {} flows; a scenario may have at most {MAX_FLOWS} (use fewer hosts or a shorter duration)",
                    self.plan.flows.len() as u128 + more
                ),
            ));
        }
        Ok(())
    }

    /// Append a flow to the plan on a connection of its own.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        src: u32,
        dst: u32,
        size: Option<Bytes>,
        start: Duration,
        after: Vec<FlowId>,
        stop: Option<Duration>,
        priority: u8,
    ) -> Result<FlowId> {
        let id = self.plan.flows.len() as FlowId;
        self.push_on(id, src, dst, size, start, after, stop, priority)
    }

    /// Append a flow to the plan on connection `conn` (the id of the connection's first
    /// flow, or the new flow's own id to open one).
    #[allow(clippy::too_many_arguments)]
    fn push_on(
        &mut self,
        conn: FlowId,
        src: u32,
        dst: u32,
        size: Option<Bytes>,
        start: Duration,
        after: Vec<FlowId>,
        stop: Option<Duration>,
        priority: u8,
    ) -> Result<FlowId> {
        self.room_for(1)?;
        let id = self.plan.flows.len() as FlowId;
        self.plan.flows.push(FlowSpec {
            id,
            src,
            dst,
            size,
            start: Instant::ZERO + start,
            after,
            stop: stop.map(|d| Instant::ZERO + d),
            priority,
            group: self.group,
            conn,
            ordinal: 0,
        });
        Ok(id)
    }

    fn incast(
        &mut self,
        senders: &HostSet,
        receiver: u32,
        size: Bytes,
        start: Duration,
        priority: u8,
    ) -> Result<GroupInfo> {
        let s = self.hosts_of(senders, "senders")?;
        let r = self.host(receiver, "receiver")?;
        self.not_receiver(&s, r)?;
        let size = self.nonzero(size, "size")?;
        let p = self.prio(priority)?;
        for &src in &s {
            self.push(src, r, Some(size), start, vec![], None, p)?;
        }
        Ok(GroupInfo {
            kind: "incast",
            ranks: s.len() as u32,
            size,
            collective: None,
        })
    }

    fn permutation(
        &mut self,
        hosts: &HostSet,
        size: Bytes,
        start: Duration,
        priority: u8,
        rng: &mut Rng,
    ) -> Result<GroupInfo> {
        let (h, size, p) = self.collective(hosts, size, priority, "a permutation")?;
        let dst = derangement(h.len(), rng);
        for (i, &src) in h.iter().enumerate() {
            self.push(src, h[dst[i]], Some(size), start, vec![], None, p)?;
        }
        Ok(GroupInfo {
            kind: "permutation",
            ranks: h.len() as u32,
            size,
            collective: Some(Collective::Permutation),
        })
    }

    fn all_to_all(
        &mut self,
        hosts: &HostSet,
        size: Bytes,
        start: Duration,
        priority: u8,
    ) -> Result<GroupInfo> {
        let (h, size, p) = self.collective(hosts, size, priority, "all-to-all")?;
        self.room_for(h.len() as u128 * (h.len() as u128 - 1))?;
        // Staggered order (i sends to i+1, i+2, ...) as NCCL/MoE dispatch does.
        for k in 1..h.len() {
            for i in 0..h.len() {
                let dst = h[(i + k) % h.len()];
                self.push(h[i], dst, Some(size), start, vec![], None, p)?;
            }
        }
        Ok(GroupInfo {
            kind: "all_to_all",
            ranks: h.len() as u32,
            size: Bytes(size.0.saturating_mul(h.len() as u64)),
            collective: Some(Collective::AllToAll),
        })
    }

    fn ring_allreduce(
        &mut self,
        hosts: &HostSet,
        size: Bytes,
        stride: u32,
        start: Duration,
        priority: u8,
    ) -> Result<GroupInfo> {
        let (h, size, p) = self.collective(hosts, size, priority, "all-reduce")?;
        let r = h.len();
        if stride == 0 || gcd(stride as usize, r) != 1 {
            return Err(self.invalid(
                "stride",
                format!(
                    "stride {stride} does not give a single ring over {r} ranks (it must be coprime with {r})"
                ),
            ));
        }
        self.room_for(2 * (r as u128 - 1) * r as u128)?;
        let chunk = Bytes(size.0.div_ceil(r as u64).max(1));
        let st = stride as usize;
        // prev[i] = flow that delivered to rank i in the previous step. Every step of
        // rank i's edge goes over one connection (NCCL keeps its queue pairs): conn[i] is
        // the edge's first flow.
        let mut prev: Vec<Option<FlowId>> = vec![None; r];
        let mut conn: Vec<Option<FlowId>> = vec![None; r];
        for _step in 0..2 * (r - 1) {
            let mut cur = vec![None; r];
            for i in 0..r {
                let to = (i + st) % r;
                let after = prev[i].into_iter().collect();
                let c = conn[i].unwrap_or(self.plan.flows.len() as FlowId);
                conn[i] = Some(c);
                cur[to] = Some(self.push_on(c, h[i], h[to], Some(chunk), start, after, None, p)?);
            }
            prev = cur;
        }
        Ok(GroupInfo {
            kind: "ring_allreduce",
            ranks: r as u32,
            size,
            collective: Some(Collective::AllReduce),
        })
    }

    /// NCCL's double binary tree all-reduce ([`double_binary_tree`]): two trees over the
    /// ranks run at once, each all-reducing half the buffer, pipelined in chunks of
    /// [`TREE_CHUNK`]: a rank sends chunk `k` up once its children's chunk `k` has arrived,
    /// and passes chunk `k` down once it has it (the root: once its children's chunk `k`
    /// arrived). Each tree edge and direction is one connection that keeps
    /// [`TREE_SLOTS`] chunks in flight (NCCL's buffer slots).
    fn tree_allreduce(
        &mut self,
        hosts: &HostSet,
        size: Bytes,
        start: Duration,
        priority: u8,
    ) -> Result<GroupInfo> {
        let (h, size, p) = self.collective(hosts, size, priority, "all-reduce")?;
        let r = h.len();
        let half = size.0.div_ceil(2).max(1);
        let chunks = half.div_ceil(TREE_CHUNK).clamp(1, TREE_MAX_CHUNKS);
        let chunk = Bytes(half.div_ceil(chunks));
        self.room_for(2 * 2 * (r as u128 - 1) * chunks as u128)?;
        for tree in 0..2 {
            let parent: Vec<Option<usize>> =
                (0..r).map(|i| double_binary_tree(r, tree, i)).collect();
            let mut children: Vec<Vec<usize>> = vec![Vec::new(); r];
            for (c, &pa) in parent.iter().enumerate() {
                if let Some(pa) = pa {
                    children[pa].push(c);
                }
            }
            // reduce order: deepest ranks first, so children's flows exist before their
            // parent's; broadcast order: the reverse
            let depth = |mut i: usize| {
                let mut d = 0;
                while let Some(pa) = parent[i] {
                    i = pa;
                    d += 1;
                }
                d
            };
            let mut order: Vec<usize> = (0..r).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(depth(i)));
            // up[c][k], down[c][k]: the flow carrying chunk k from c to its parent, from
            // c's parent to c
            let mut up: Vec<Vec<FlowId>> = vec![Vec::new(); r];
            let mut down: Vec<Vec<FlowId>> = vec![Vec::new(); r];
            for k in 0..chunks as usize {
                for &c in &order {
                    let Some(pa) = parent[c] else { continue };
                    let mut after: Vec<FlowId> = children[c].iter().map(|&x| up[x][k]).collect();
                    let conn = self.in_order(&up[c], k, &mut after);
                    let id = self.push_on(conn, h[c], h[pa], Some(chunk), start, after, None, p)?;
                    up[c].push(id);
                }
                for &c in order.iter().rev() {
                    let Some(pa) = parent[c] else { continue };
                    let mut after: Vec<FlowId> = match parent[pa] {
                        Some(_) => vec![down[pa][k]],
                        None => children[pa].iter().map(|&x| up[x][k]).collect(),
                    };
                    let conn = self.in_order(&down[c], k, &mut after);
                    let id = self.push_on(conn, h[pa], h[c], Some(chunk), start, after, None, p)?;
                    down[c].push(id);
                }
            }
        }
        Ok(GroupInfo {
            kind: "tree_allreduce",
            ranks: r as u32,
            size,
            collective: Some(Collective::AllReduce),
        })
    }

    /// Chunk `k` on a connection whose earlier chunks are `sent`: waits for chunk
    /// `k − TREE_SLOTS` (at most that many in flight); returns the connection's id.
    fn in_order(&self, sent: &[FlowId], k: usize, after: &mut Vec<FlowId>) -> FlowId {
        if k >= TREE_SLOTS {
            after.push(sent[k - TREE_SLOTS]);
        }
        sent.first()
            .copied()
            .unwrap_or(self.plan.flows.len() as FlowId)
    }

    fn fairness(
        &mut self,
        senders: &HostSet,
        receiver: u32,
        interval: Duration,
        start: Duration,
        priority: u8,
    ) -> Result<GroupInfo> {
        let s = self.hosts_of(senders, "senders")?;
        let r = self.host(receiver, "receiver")?;
        self.not_receiver(&s, r)?;
        if interval.as_picos() == 0 {
            return Err(self.invalid("interval", "must be more than 0"));
        }
        let p = self.prio(priority)?;
        let k = s.len() as u64;
        // The last sender leaves at start + (2k - 1) · interval: it must stay representable.
        let span = interval.as_picos().checked_mul(2 * k);
        if span.is_none_or(|ps| ps > units::MAX_TIME.as_picos()) {
            return Err(self.invalid(
                "interval",
                format!(
                    "{k} senders joining and leaving every {interval:?} last longer than 3600s"
                ),
            ));
        }
        for (i, &src) in s.iter().enumerate() {
            let i = i as u64;
            let join = start + interval * i;
            // Last to join leaves first: leave at start + (2k - 1 - i) * interval.
            let leave = start + interval * (2 * k - 1 - i);
            self.push(src, r, None, join, vec![], Some(leave), p)?;
        }
        Ok(GroupInfo {
            kind: "fairness",
            ranks: s.len() as u32,
            size: Bytes(0),
            collective: None,
        })
    }

    fn victim(
        &mut self,
        senders: &HostSet,
        receiver: u32,
        size: Bytes,
        victim: VictimFlow,
        start: Duration,
        priority: u8,
    ) -> Result<GroupInfo> {
        let s = self.hosts_of(senders, "senders")?;
        let r = self.host(receiver, "receiver")?;
        let vs = self.host(victim.src, "victim_src")?;
        let vd = self.host(victim.dst, "victim_dst")?;
        if vs == vd {
            return Err(self.invalid("victim_dst", "equals victim_src"));
        }
        self.not_receiver(&s, r)?;
        let size = self.nonzero(size, "size")?;
        let vsize = self.nonzero(victim.size, "victim_size")?;
        let p = self.prio(priority)?;
        // The victim is the group's first flow so reports can find it.
        self.push(vs, vd, Some(vsize), victim.start, vec![], None, p)?;
        for &src in &s {
            self.push(src, r, Some(size), start, vec![], None, p)?;
        }
        Ok(GroupInfo {
            kind: "victim",
            ranks: s.len() as u32 + 1,
            size,
            collective: None,
        })
    }

    fn poisson(
        &mut self,
        hosts: &HostSet,
        a: &PoissonArrivals<'_>,
        priority: u8,
        rng: &mut Rng,
    ) -> Result<GroupInfo> {
        let h = self.hosts_of(hosts, "hosts")?;
        self.at_least_2(&h, "hosts", "a Poisson workload")?;
        let load = a.load;
        if !(load > 0.0 && load <= 1.0) {
            return Err(self.invalid("load", format!("{load} is not in (0, 1]")));
        }
        let p = self.prio(priority)?;
        let dist = match (a.size, a.cdf) {
            (Some(s), None) => SizeDist::Fixed(self.nonzero(s, "size")?.0 as f64),
            (None, Some(c)) => SizeDist::from_cdf(c).map_err(|m| self.invalid("cdf", m))?,
            _ => {
                return Err(self.invalid(
                    "size",
                    "give exactly one of `size` (fixed) or `cdf` (distribution)",
                ));
            }
        };
        let mean_bits = dist.mean() * 8.0;
        let rate_per_s = load * a.host_rate.as_bps() as f64 / mean_bits;
        // Refuse before drawing: the expected number of arrivals, with room for chance.
        let expected = rate_per_s * a.duration.as_secs_f64() * h.len() as f64;
        self.room_for((expected * 1.1) as u128)?;
        let mean_gap_s = 1.0 / rate_per_s;
        let mut arrivals = Vec::new();
        for (i, &src) in h.iter().enumerate() {
            let mut t = 0.0;
            loop {
                t += rng.exp(mean_gap_s);
                let at = Duration::from_secs_f64(t);
                if at >= a.duration {
                    break;
                }
                let mut j = rng.below(h.len() as u64 - 1) as usize;
                if j >= i {
                    j += 1;
                }
                let b = Bytes(dist.sample(rng).max(1.0).round() as u64);
                arrivals.push((a.start + at, src, h[j], b));
                self.room_for(arrivals.len() as u128)?;
            }
        }
        arrivals.sort_by_key(|x| (x.0, x.1));
        for (at, src, dst, b) in arrivals {
            self.push(src, dst, Some(b), at, vec![], None, p)?;
        }
        Ok(GroupInfo {
            kind: "poisson",
            ranks: h.len() as u32,
            size: Bytes(0),
            collective: None,
        })
    }

    fn flows(&mut self, flow: &[FlowLine], priority: u8) -> Result<GroupInfo> {
        if flow.is_empty() {
            return Err(self.invalid("flow", "no [[workload.flow]] entries"));
        }
        for (k, f) in flow.iter().enumerate() {
            let fld = |x: &str| format!("flow[{k}].{x}");
            let src = self.host(f.src, &fld("src"))?;
            let dst = self.host(f.dst, &fld("dst"))?;
            if src == dst {
                return Err(self.invalid(&fld("dst"), "equals src"));
            }
            let size = self.nonzero(f.size, &fld("size"))?;
            let p = self.prio(f.priority.unwrap_or(priority))?;
            self.push(src, dst, Some(size), f.start, vec![], None, p)?;
        }
        Ok(GroupInfo {
            kind: "flows",
            ranks: 0,
            size: Bytes(0),
            collective: None,
        })
    }

    fn connection_matrix(&mut self, file: &Path, priority: u8) -> Result<GroupInfo> {
        let path = match &self.scenario.base_dir {
            Some(d) if file.is_relative() => d.join(file),
            _ => file.to_path_buf(),
        };
        let matrix = cm::ConnectionMatrix::from_file(&path)?;
        let n = self.n;
        if matrix.nodes > n {
            return Err(self.invalid(
                "file",
                format!(
                    "{} declares {} nodes but the fabric has {n} hosts",
                    path.display(),
                    matrix.nodes
                ),
            ));
        }
        let p = self.prio(priority)?;
        self.room_for(matrix.connections.len() as u128)?;
        for c in &matrix.connections {
            self.push(c.src, c.dst, Some(c.size), c.start, vec![], None, p)?;
        }
        Ok(GroupInfo {
            kind: "connection_matrix",
            ranks: matrix.nodes,
            size: Bytes(0),
            collective: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{CompileCtx, Scenario};
    use cc_algos::Rate;

    fn compile(toml: &str) -> crate::Workplan {
        Scenario::from_toml_str(toml, "t.toml")
            .unwrap()
            .compile(&CompileCtx::new(16, Rate::gbps(100), 1))
            .unwrap()
    }

    const RING: &str =
        "[[workload]]\nkind = \"ring_allreduce\"\nhosts = \"0..4\"\nsize = \"4MB\"\n";
    const TWICE: &str = "[[workload]]\nkind = \"incast\"\nsenders = [5]\nreceiver = 6\nsize = \"1MB\"\n\
         [[workload]]\nkind = \"incast\"\nsenders = [5]\nreceiver = 6\nsize = \"2MB\"\n";
    const OTHERS: &str = "[[workload]]\nkind = \"all_to_all\"\nhosts = \"8..16\"\nsize = \"1MB\"\n";

    #[test]
    fn connections_are_numbered_per_host_pair() {
        let p = compile(&format!("{RING}{TWICE}"));
        // a ring edge's steps are one connection: its pair's first
        assert!(p.flows[..24].iter().all(|f| f.ordinal == 0));
        // two connections between hosts 5 and 6: ordinals 0 and 1
        assert_eq!(
            p.flows[24..].iter().map(|f| f.ordinal).collect::<Vec<_>>(),
            [0, 1]
        );
    }

    #[test]
    fn ordinals_do_not_move_when_other_hosts_flows_are_added() {
        let alone = compile(&format!("{RING}{TWICE}"));
        let both = compile(&format!("{OTHERS}{RING}{TWICE}"));
        let key = |p: &crate::Workplan, from: usize| -> Vec<(u32, u32, u32)> {
            p.flows[from..]
                .iter()
                .map(|f| (f.src, f.dst, f.ordinal))
                .collect()
        };
        assert_eq!(key(&alone, 0), key(&both, 56));
        // flow ids (and connection ids) did move
        assert_ne!(alone.flows[0].conn, both.flows[56].conn);
    }
}
