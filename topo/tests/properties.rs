//! Property tests: for random fabrics (k, tiers, planes, oversubscription, Dragonfly+) and
//! random failure sets, the incremental routing tables equal a naive reference, every
//! host pair connected by an up*/down* path in the surviving graph is reachable through
//! the tables, and the tables are loop-free, obey up/down and have an acyclic channel
//! dependency graph.

use proptest::prelude::*;
use topo::generators::*;
use topo::lft::Lft;
use topo::routing::{LOCAL, NO_ROUTE};
use topo::spec::{HostSpec, PlaneSpec, TierSpec};
use topo::{Fabric, LinkId, NodeId, PlaneKind, Port, Rate, Routes, Spec};

fn tier(radix: u32, down: u32, up: u32) -> TierSpec {
    TierSpec {
        radix,
        port_rate: None,
        down: Some(down),
        up,
        uplink_rate: None,
        delay_ns: None,
    }
}

/// A random fabric spec that is valid by construction.
fn arb_spec() -> impl Strategy<Value = Spec> {
    let ft = (1u32..=4).prop_map(|h| fat_tree_spec(2 * h, Rate::gbps(100)));
    let ls = (1u32..=5, 1u32..=3, 1u32..=3, 1u32..=2)
        .prop_map(|(l, s, h, par)| leaf_spine_spec(l, s, h, par, Rate::gbps(100)));
    // 3-tier folded Clos with oversubscription between pods.
    let clos = (1u32..=3, 1u32..=3, 1u32..=2, 1u32..=2, 1u32..=2, 1u32..=2).prop_map(
        |(pods, lpp, aggs, hosts, cores, m)| {
            let leaf_up = aggs * m;
            let spine_down = lpp * m;
            let spine_up = cores; // one link to each core of the group
            Spec {
                name: "clos".into(),
                description: String::new(),
                source: vec![],
                traffic_classes: None,
                services: vec![],
                tenants: vec![],
                hosts: HostSpec {
                    servers: None,
                    gpus_per_server: 1,
                    nics_per_server: 1,
                    ports_per_nic: 1,
                    rail_optimized: false,
                    scale_up_domain: None,
                    rate: Rate::gbps(100),
                    delay_ns: None,
                },
                planes: vec![PlaneSpec {
                    copies: 1,
                    kind: PlaneKind::Clos,
                    pods,
                    leaves_per_pod: lpp,
                    leaf: tier(hosts + leaf_up, hosts, leaf_up),
                    spine: tier(spine_down + spine_up, spine_down, spine_up),
                    core: Some(tier(pods, pods, 0)),
                }],
            }
        },
    );
    let df = (3u32..=5, 1u32..=2, 1u32..=2, 1u32..=2).prop_filter_map(
        "global ports must spread",
        |(g, l, s, h)| {
            // global ports per spine so that s * global is a multiple of g - 1
            let global = (1..=4).find(|x| (s * x) % (g - 1) == 0)?;
            Some(dragonfly_plus_spec(g, l, s, h, global, Rate::gbps(100)))
        },
    );
    let base = prop_oneof![ft, ls, clos, df];
    (base, 1u32..=2, any::<bool>()).prop_map(|(s, planes, rail)| {
        let mut s = if planes > 1 {
            multi_plane_spec(s, planes)
        } else {
            s
        };
        if rail && planes > 1 {
            // one single-port NIC per plane instead of one multi-port NIC
            s.hosts.nics_per_server = planes;
            s.hosts.ports_per_nic = 1;
        }
        s
    })
}

const INF: u8 = u8::MAX;

/// Naive up*/[global]/down* distances to destination leaf `d` over live links.
fn reference_dist(f: &Fabric, up: &[bool], d: NodeId) -> Vec<u8> {
    let n = f.num_nodes();
    let mut down = vec![INF; n];
    down[d.idx()] = 0;
    // relax upward repeatedly (tiers are few)
    for _ in 0..4 {
        for l in f.links() {
            let id = f.port_link(l.a, l.a_port);
            if !up[id.idx()] || f.is_host(l.a) || f.tier(l.a) == f.tier(l.b) {
                continue;
            }
            if down[l.a.idx()] != INF && down[l.b.idx()] > down[l.a.idx()] + 1 {
                down[l.b.idx()] = down[l.a.idx()] + 1;
            }
        }
    }
    let mut dist = down.clone();
    for l in f.links() {
        let id = f.port_link(l.a, l.a_port);
        if up[id.idx()] && !f.is_host(l.a) && f.tier(l.a) == f.tier(l.b) {
            for (x, y) in [(l.a, l.b), (l.b, l.a)] {
                if down[x.idx()] == INF && down[y.idx()] != INF {
                    dist[x.idx()] = dist[x.idx()].min(down[y.idx()] + 1);
                }
            }
        }
    }
    for _ in 0..4 {
        for l in f.links() {
            let id = f.port_link(l.a, l.a_port);
            if !up[id.idx()] || f.is_host(l.a) || f.tier(l.a) == f.tier(l.b) {
                continue;
            }
            if down[l.a.idx()] == INF && dist[l.b.idx()] != INF {
                dist[l.a.idx()] = dist[l.a.idx()].min(dist[l.b.idx()] + 1);
            }
        }
    }
    dist
}

/// Reference next hops of switch `v` toward `d` given reference distances.
fn reference_group(f: &Fabric, up: &[bool], dist: &[u8], v: NodeId, d: NodeId) -> Vec<Port> {
    if dist[v.idx()] == INF || v == d {
        return vec![];
    }
    let t = f.tier(v);
    let mut down_dist = vec![INF; f.num_nodes()];
    // recompute down-only distance for the rule "finite down ⇒ down only"
    down_dist[d.idx()] = 0;
    for _ in 0..4 {
        for l in f.links() {
            let id = f.port_link(l.a, l.a_port);
            if up[id.idx()]
                && !f.is_host(l.a)
                && f.tier(l.a) < f.tier(l.b)
                && down_dist[l.a.idx()] != INF
            {
                down_dist[l.b.idx()] = down_dist[l.b.idx()].min(down_dist[l.a.idx()] + 1);
            }
        }
    }
    let mut out = vec![];
    for (k, (w, l)) in f.ports(v).enumerate() {
        if !up[l.idx()] || f.is_host(w) {
            continue;
        }
        let wt = f.tier(w);
        let ok = if down_dist[v.idx()] != INF {
            wt < t && down_dist[w.idx()].saturating_add(1) == down_dist[v.idx()]
        } else if wt == t {
            down_dist[w.idx()] != INF && down_dist[w.idx()].saturating_add(1) == dist[v.idx()]
        } else {
            wt > t && dist[w.idx()] != INF && dist[w.idx()].saturating_add(1) == dist[v.idx()]
        };
        if ok {
            out.push(k as Port);
        }
    }
    out
}

fn check(f: &Fabric, r: &Routes) -> Result<(), TestCaseError> {
    let up: Vec<bool> = (0..f.num_links() as u32)
        .map(|l| r.link_is_up(LinkId(l)))
        .collect();
    // 1. tables equal the reference
    for p in f.planes() {
        for d in p.leaves() {
            let d = NodeId(d);
            let dist = reference_dist(f, &up, d);
            for v in p.switches() {
                let v = NodeId(v);
                let e = r.entry(v, d);
                let got: Vec<Port> = match e {
                    LOCAL | NO_ROUTE => vec![],
                    g => r.groups().get(g).to_vec(),
                };
                let want = reference_group(f, &up, &dist, v, d);
                prop_assert_eq!(
                    &got,
                    &want,
                    "switch {} dest {}",
                    f.node_name(v),
                    f.node_name(d)
                );
                prop_assert_eq!(e == LOCAL, v == d);
            }
        }
    }
    // 2. verification: loop-free, up/down, acyclic CDG, no black holes
    let rep = topo::verify::verify(f, r);
    prop_assert_eq!(rep.loops, 0);
    prop_assert_eq!(rep.updown_violations, 0);
    prop_assert_eq!(rep.black_holes, 0);
    prop_assert!(rep.cdg_acyclic);
    // 3. every host pair with an up*/down* path in some common plane is reachable, and
    //    the verifier's unreachable count is exactly the pairs without one.
    let mut unreachable = 0u64;
    let mut leaf_dist = std::collections::HashMap::new();
    for a in f.hosts() {
        for b in f.hosts() {
            if a == b {
                continue;
            }
            let mut common = false;
            let mut ok = false;
            for pl in 0..f.num_planes() as u16 {
                let (Some(x), Some(y)) = (f.attachment(a, pl), f.attachment(b, pl)) else {
                    continue;
                };
                common = true;
                if !up[x.link.idx()] || !up[y.link.idx()] {
                    continue;
                }
                let dist = leaf_dist
                    .entry(y.leaf)
                    .or_insert_with(|| reference_dist(f, &up, y.leaf));
                if dist[x.leaf.idx()] != INF {
                    ok = true;
                    prop_assert!(r.plane_reaches(a, b, pl));
                }
            }
            if common && !ok {
                unreachable += 1;
            }
        }
    }
    prop_assert_eq!(rep.unreachable_pairs, unreachable);
    Ok(())
}

fn lft_consistent(f: &Fabric, r: &Routes, t: &Lft) -> Result<(), TestCaseError> {
    for s in f.switches() {
        for h in f.hosts() {
            let hops = r.next_hops(s, h);
            let p = t.port(f, s, h);
            match p {
                Some(p) => prop_assert!(hops.contains(&p), "LFT port {} not in ECMP {:?}", p, hops),
                None => prop_assert!(hops.is_empty()),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_fabrics_and_failures(spec in arb_spec(), picks in prop::collection::vec(any::<u32>(), 0..6), fail_switch in any::<Option<u32>>()) {
        let f = spec.build("prop").unwrap();
        let mut r = Routes::compute(&f);
        check(&f, &r)?;
        let mut lft = Lft::compute(&f, &r);
        lft_consistent(&f, &r, &lft)?;
        // random link failures, applied incrementally in two batches
        let links: Vec<LinkId> = picks.iter().map(|&x| LinkId(x % f.num_links() as u32)).collect();
        let (a, b) = links.split_at(links.len() / 2);
        let rep = r.fail_links(&f, a);
        lft.update(&f, &r, &rep.changed);
        let rep = r.fail_links(&f, b);
        lft.update(&f, &r, &rep.changed);
        if let Some(s) = fail_switch {
            let sw = NodeId(f.num_hosts() as u32 + s % f.num_switches() as u32);
            let rep = r.fail_nodes(&f, &[sw]);
            lft.update(&f, &r, &rep.changed);
        }
        check(&f, &r)?;
        lft_consistent(&f, &r, &lft)?;
        // The incremental update writes what a full compute writes (issue 21: a row spread
        // in one batch and plain in the next kept its spread columns).
        let full = Lft::compute(&f, &r);
        for t in 0..full.planes.len() {
            let (a, b) = (&lft.planes[t], &full.planes[t]);
            for s in a.first_switch..a.first_switch + a.rows {
                for c in 0..a.columns.len() {
                    prop_assert_eq!(
                        a.get(NodeId(s), c),
                        b.get(NodeId(s), c),
                        "{} column {}",
                        f.node_name(NodeId(s)),
                        c
                    );
                }
            }
        }
        // restoring everything gives back the original tables
        let down: Vec<LinkId> = r.failed_links().collect();
        r.restore_links(&f, &down);
        let fresh = Routes::compute(&f);
        for s in f.switches() {
            for h in f.hosts() {
                prop_assert_eq!(r.next_hops(s, h), fresh.next_hops(s, h));
            }
        }
    }
}

/// Issue 15's balance property. d-mod-k gives column `c` member `(c / div) mod n` of a
/// switch's up group, so a switch's up ports get equal destination counts when the columns
/// it keeps local and all of the plane's columns are whole periods `div × n` (what "where the
/// counts divide evenly" means here; otherwise the spread is within one period). Where every
/// switch of a tier meets that, the all-to-all pair load of the tier's up links is even too.
fn balanced_at_every_tier(f: &Fabric, r: &Routes, lft: &Lft) -> Result<(), TestCaseError> {
    let mut tier_even = [true; 3];
    for t in &lft.planes {
        let ncol = t.columns.len() as u32;
        for s in t.first_switch..t.first_switch + t.rows {
            let s = NodeId(s);
            let loads = t.port_loads(f, s);
            let up: Vec<u32> = (0..f.degree(s) as Port)
                .filter(|&k| f.direction(s, k) != topo::Direction::Down)
                .map(|k| loads[k as usize])
                .collect();
            if up.is_empty() {
                continue;
            }
            let routed: u32 = up.iter().sum();
            let period = t.divisor(s) * up.len() as u32;
            let ti = f.tier(s) as usize - 1;
            if !(ncol - routed).is_multiple_of(period) || !ncol.is_multiple_of(period) {
                tier_even[ti] = false;
                continue;
            }
            prop_assert!(
                up.iter().all(|&x| x == up[0]),
                "{} (tier {}): destinations per up port {:?}",
                f.node_name(s),
                ti + 1,
                up
            );
        }
    }
    for t in topo::balance::of_lft(f, r, lft) {
        if tier_even[t.tier as usize - 1] {
            prop_assert_eq!(t.dest_ratio(), 1.0, "{:?}", t);
            prop_assert_eq!(t.pair_ratio(), 1.0, "{:?}", t);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Issue 15: healthy fabrics' single-path tables are balanced at every tier.
    #[test]
    fn healthy_single_path_tables_balance_at_every_tier(spec in arb_spec()) {
        let f = spec.build("prop").unwrap();
        let r = Routes::compute(&f);
        let lft = Lft::compute(&f, &r);
        balanced_at_every_tier(&f, &r, &lft)?;
    }
}

/// Host pairs `(connected, with an up*/down* path)` by reference: a pair counts as connected
/// when some shared plane has both host links up and a live switch path between the two
/// leaves (BFS over live switch–switch links), and as up*/down*-routable when such a plane
/// also has a finite reference up*/down* distance.
fn reference_pair_counts(f: &Fabric, r: &Routes) -> (u64, u64) {
    let up: Vec<bool> = (0..f.num_links() as u32)
        .map(|l| r.link_is_up(LinkId(l)))
        .collect();
    let reach_from = |leaf: NodeId| {
        let mut seen = vec![false; f.num_nodes()];
        let mut stack = vec![leaf];
        seen[leaf.idx()] = true;
        while let Some(v) = stack.pop() {
            for (w, l) in f.ports(v) {
                if up[l.idx()] && !f.is_host(w) && !seen[w.idx()] {
                    seen[w.idx()] = true;
                    stack.push(w);
                }
            }
        }
        seen
    };
    let mut live = std::collections::HashMap::new();
    let mut updown = std::collections::HashMap::new();
    let (mut connected, mut routable) = (0, 0);
    for a in f.hosts() {
        for b in f.hosts() {
            if a == b {
                continue;
            }
            let (mut c, mut u) = (false, false);
            for pl in 0..f.num_planes() as u16 {
                let (Some(x), Some(y)) = (f.attachment(a, pl), f.attachment(b, pl)) else {
                    continue;
                };
                if !up[x.link.idx()] || !up[y.link.idx()] {
                    continue;
                }
                let seen = live.entry(y.leaf).or_insert_with(|| reach_from(y.leaf));
                c |= seen[x.leaf.idx()];
                let dist = updown
                    .entry(y.leaf)
                    .or_insert_with(|| reference_dist(f, &up, y.leaf));
                u |= dist[x.leaf.idx()] != INF;
            }
            connected += c as u64;
            routable += u as u64;
        }
    }
    (connected, routable)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Deadlock-free detours (issue 15): after random failures, every physically connected
    /// host pair is routed — on lane 0 when it has an up*/down* path, else on a further
    /// lane — loop-free and without black holes, lane 0 keeps the up/down rule, and every
    /// lane's channel dependency graph is acyclic.
    #[test]
    fn detours_route_every_connected_pair_and_every_lane_is_acyclic(
        spec in arb_spec(),
        picks in prop::collection::vec(any::<u32>(), 1..16),
        fail_switch in any::<Option<u32>>(),
    ) {
        let f = spec.build("prop").unwrap();
        let mut r = Routes::compute(&f);
        // Mostly switch–switch links (where down-up detours arise), some host links.
        let sw: Vec<LinkId> = (0..f.num_links() as u32)
            .map(LinkId)
            .filter(|&l| !f.is_host(f.link(l).a))
            .collect();
        let links: Vec<LinkId> = picks
            .iter()
            .map(|&x| if x % 8 == 0 { LinkId(x % f.num_links() as u32) } else { sw[x as usize % sw.len()] })
            .collect();
        r.fail_links(&f, &links);
        if let Some(s) = fail_switch {
            r.fail_nodes(&f, &[NodeId(f.num_hosts() as u32 + s % f.num_switches() as u32)]);
        }
        let (connected, routable) = reference_pair_counts(&f, &r);
        let lanes = topo::lanes::route_around(&f, &mut r, topo::lanes::MAX_LANES).unwrap();
        let rep = topo::verify::verify_lanes(&f, &r, &lanes);
        prop_assert_eq!(rep.loops, 0, "{:?}", rep);
        prop_assert_eq!(rep.black_holes, 0, "{:?}", rep);
        prop_assert_eq!(rep.updown_violations, 0, "lane 0 keeps up*/down*: {:?}", rep);
        prop_assert!(rep.cdg_acyclic, "{:?}", rep.lanes);
        prop_assert_eq!(rep.lanes.len(), lanes.used as usize);
        prop_assert!(rep.lanes.iter().all(|l| l.acyclic));
        prop_assert_eq!(rep.reachable_pairs, connected);
        prop_assert_eq!(rep.unreachable_no_updown, 0);
        prop_assert_eq!(rep.pairs_on_extra_lanes, connected - routable);
        prop_assert_eq!(rep.unreachable_pairs, rep.unreachable_disconnected);
        // Detours only fill entries the up*/down* tables left empty.
        for &(s, d) in r.detours() {
            prop_assert!(lanes.pairs().iter().any(|&(_, dd, _)| dd == d), "{} {}", s, d);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The weights' shortcut is sound: whenever `Weights::uniform` says no group can be
    /// unequal (and the export skips the computation), the full computation finds none —
    /// on random healthy fabrics (oversubscribed Closes, parallel links, Dragonfly+, planes)
    /// and after a host-link failure (which keeps the shortcut).
    #[test]
    fn uniform_fabrics_have_no_weighted_entry(spec in arb_spec(), host in any::<Option<u32>>()) {
        let f = spec.build("prop").unwrap();
        let mut r = Routes::compute(&f);
        if let Some(h) = host {
            let h = NodeId(h % f.num_hosts() as u32);
            let p = f.host_planes(h).next().unwrap();
            r.fail_links(&f, &[f.attachment(h, p).unwrap().link]);
        }
        if topo::wcmp::Weights::uniform(&f, &r) {
            prop_assert!(topo::wcmp::Weights::compute_all(&f, &r).is_empty());
        }
    }
}

/// What one walk of the tables from a source leaf toward a destination leaf finds, by the
/// plain method: a breadth-first search of the (switch, phase) states reachable from the
/// source, nothing shared with any other walk, then Kahn's algorithm on the states reached
/// for a cycle. Phase 0 may still go up, phase 1 only down (lane 0, up*/down*).
#[derive(Default)]
struct PairWalk {
    delivers: bool,
    holes: Vec<NodeId>,
    turns: Vec<NodeId>,
    cyclic: bool,
}

fn walk_pair(f: &Fabric, r: &Routes, src: NodeId, dst: NodeId) -> PairWalk {
    use std::collections::HashMap;
    let mut w = PairWalk::default();
    let mut index: HashMap<(NodeId, u8), usize> = HashMap::new();
    let mut states = vec![(src, 0u8)];
    let mut next: Vec<Vec<usize>> = vec![Vec::new()];
    index.insert((src, 0), 0);
    let mut i = 0;
    while i < states.len() {
        let (v, phase) = states[i];
        i += 1;
        if v == dst {
            continue;
        }
        let e = r.entry(v, dst);
        if e == NO_ROUTE || e == LOCAL {
            if !(f.tier(v) == 1 && phase == 0) {
                w.holes.push(v);
            }
            w.holes.push(NodeId(u32::MAX)); // marks "not delivered" even at the source
            continue;
        }
        for &p in r.groups().get(e) {
            let n = f.peer(v, p);
            if !r.link_is_up(f.port_link(v, p)) || f.is_host(n) {
                w.holes.push(v);
                continue;
            }
            let (t, nt) = (f.tier(v), f.tier(n));
            let np = if nt > t { 0 } else { 1 };
            if phase == 1 && nt >= t {
                w.turns.push(v);
                continue;
            }
            let j = *index.entry((n, np)).or_insert_with(|| {
                states.push((n, np));
                next.push(Vec::new());
                states.len() - 1
            });
            next[i - 1].push(j);
        }
    }
    // Kahn over the states reached: whatever cannot be ordered lies on or behind a cycle.
    let mut indeg = vec![0u32; states.len()];
    for out in &next {
        for &j in out {
            indeg[j] += 1;
        }
    }
    let mut queue: Vec<usize> = (0..states.len()).filter(|&j| indeg[j] == 0).collect();
    let mut ordered = 0;
    while let Some(j) = queue.pop() {
        ordered += 1;
        for &k in &next[j] {
            indeg[k] -= 1;
            if indeg[k] == 0 {
                queue.push(k);
            }
        }
    }
    w.cyclic = ordered < states.len();
    w.delivers = w.holes.is_empty() && w.turns.is_empty() && !w.cyclic;
    w.holes.retain(|&v| v.0 != u32::MAX);
    w
}

/// The all-pairs answer the verifier's shortcut (per destination leaf, states shared by
/// every source, host pairs counted from leaf pairs, dependencies from each entry once)
/// must equal: every (source leaf, destination leaf) walk on its own; every host pair on
/// its own over its shared planes; every (switch, destination host) entry's dependencies
/// into one explicit set, checked for a cycle by petgraph.
struct AllPairs {
    reachable: u64,
    unreachable: u64,
    holes: std::collections::BTreeSet<(NodeId, NodeId)>,
    turns: std::collections::BTreeSet<(NodeId, NodeId)>,
    loops: bool,
    cdg_edges: u64,
    cdg_acyclic: bool,
}

fn all_pairs(f: &Fabric, r: &Routes) -> AllPairs {
    let mut a = AllPairs {
        reachable: 0,
        unreachable: 0,
        holes: Default::default(),
        turns: Default::default(),
        loops: false,
        cdg_edges: 0,
        cdg_acyclic: true,
    };
    for p in f.planes() {
        for d in p.leaves() {
            for s in p.leaves() {
                if s != d {
                    let w = walk_pair(f, r, NodeId(s), NodeId(d));
                    a.holes.extend(w.holes.iter().map(|&v| (v, NodeId(d))));
                    a.turns.extend(w.turns.iter().map(|&v| (v, NodeId(d))));
                    a.loops |= w.cyclic;
                }
            }
        }
    }
    for x in f.hosts() {
        for y in f.hosts() {
            if x == y {
                continue;
            }
            let (mut shared, mut ok) = (false, false);
            for pl in 0..f.num_planes() as u16 {
                let (Some(ax), Some(ay)) = (f.attachment(x, pl), f.attachment(y, pl)) else {
                    continue;
                };
                shared = true;
                ok |= r.link_is_up(ax.link)
                    && r.link_is_up(ay.link)
                    && (ax.leaf == ay.leaf || walk_pair(f, r, ax.leaf, ay.leaf).delivers);
            }
            a.reachable += (shared && ok) as u64;
            a.unreachable += (shared && !ok) as u64;
        }
    }
    // Channel dependencies: a packet for host `h` on channel (u, p) arrives at w and may
    // leave on any of w's next hops toward h (none counted into the destination leaf).
    let mut deps = std::collections::HashSet::new();
    for u in f.switches() {
        for h in f.hosts() {
            for &p in r.next_hops(u, h) {
                let w = f.peer(u, p);
                let plane = f.plane(u).unwrap();
                if f.is_host(w) || r.host_leaf(h, plane) == Some(w) {
                    continue;
                }
                for &o in r.next_hops(w, h) {
                    deps.insert(((u, p), (w, o)));
                }
            }
        }
    }
    let mut g = petgraph::graphmap::DiGraphMap::<(NodeId, Port), ()>::new();
    for &(c, d) in &deps {
        g.add_edge(c, d, ());
    }
    a.cdg_edges = deps.len() as u64;
    a.cdg_acyclic = !petgraph::algo::is_cyclic_directed(&g);
    a
}

/// The verifier's report equals the all-pairs answer.
fn verify_equals_all_pairs(f: &Fabric, r: &Routes) -> Result<bool, TestCaseError> {
    let rep = topo::verify::verify(f, r);
    let a = all_pairs(f, r);
    prop_assert_eq!(rep.reachable_pairs, a.reachable);
    prop_assert_eq!(rep.unreachable_pairs, a.unreachable);
    prop_assert_eq!(rep.black_holes, a.holes.len() as u64);
    prop_assert_eq!(rep.updown_violations, a.turns.len() as u64);
    for e in &rep.black_hole_examples {
        prop_assert!(a.holes.contains(&(e.switch, e.dest_leaf)));
    }
    for e in &rep.updown_examples {
        prop_assert!(a.turns.contains(&(e.switch, e.dest_leaf)));
    }
    prop_assert_eq!(rep.loops > 0, a.loops);
    prop_assert_eq!(rep.cdg_edges, a.cdg_edges);
    prop_assert_eq!(rep.cdg_acyclic, a.cdg_acyclic);
    Ok(rep.ok())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Issue 21: the verifier's shortcut gives the all-pairs answer — on random fabrics
    /// after random failures, and after random entries are overwritten with random ports
    /// (loops, bounces, black holes, dead links, cyclic dependencies), where both must
    /// reject the tables the same way.
    #[test]
    fn verify_shortcut_equals_all_pairs(
        spec in arb_spec(),
        picks in prop::collection::vec(any::<u32>(), 0..6),
        breaks in prop::collection::vec((any::<u32>(), any::<u32>(), prop::collection::vec(any::<u16>(), 0..3)), 0..4),
    ) {
        let f = spec.build("prop").unwrap();
        let mut r = Routes::compute(&f);
        let links: Vec<LinkId> = picks.iter().map(|&x| LinkId(x % f.num_links() as u32)).collect();
        r.fail_links(&f, &links);
        verify_equals_all_pairs(&f, &r)?;
        for (s, d, ports) in &breaks {
            let s = NodeId(f.num_hosts() as u32 + s % f.num_switches() as u32);
            let leaves = f.plane_info(f.plane(s).unwrap()).leaves();
            let d = NodeId(leaves.start + d % leaves.len() as u32);
            let mut ports: Vec<Port> = ports.iter().map(|&p| p % f.degree(s) as Port).collect();
            ports.sort_unstable();
            ports.dedup();
            r.set_entry(s, d, &ports);
        }
        let ok = verify_equals_all_pairs(&f, &r)?;
        if breaks.is_empty() {
            prop_assert!(ok || !links.is_empty());
        }
    }
}
