//! Topology validation against intent: LLDP frames ([`crate::lldp`]) sent and received
//! on every port of the testbed through pnet's datalink channels (a slow path: one frame
//! each way per port and check, so pnet's per-frame channel is fine), the neighbours
//! each port saw compared with the spec, and the Clos rules checked on what was seen.

use std::collections::{BTreeMap, BTreeSet};

use pnet::datalink::{self, Channel, Config};
use serde::Serialize;

use super::*;
use crate::lldp::LldpRepr;

/// What is wrong with the wiring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MismatchKind {
    /// A port heard no neighbour.
    Missing,
    /// A port heard a neighbour the fabric does not have (unknown name or port).
    Unexpected,
    /// A port heard a known port other than the one the spec puts there.
    Miswired,
    /// Two switches of the same upper tier are cabled together.
    SpineToSpine,
    /// A leaf does not reach an upper-tier switch the spec connects it to.
    LeafMissesSpine,
}

impl MismatchKind {
    /// Every kind, in report order.
    pub const ALL: [MismatchKind; 5] = [
        MismatchKind::Missing,
        MismatchKind::Unexpected,
        MismatchKind::Miswired,
        MismatchKind::SpineToSpine,
        MismatchKind::LeafMissesSpine,
    ];

    /// Kebab-case name (the `kind` label).
    pub fn as_str(self) -> &'static str {
        match self {
            MismatchKind::Missing => "missing",
            MismatchKind::Unexpected => "unexpected",
            MismatchKind::Miswired => "miswired",
            MismatchKind::SpineToSpine => "spine-to-spine",
            MismatchKind::LeafMissesSpine => "leaf-misses-spine",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// What.
    pub kind: MismatchKind,
    /// `node:port` where it was seen (for a leaf rule: the leaf).
    pub at: String,
    /// What the spec wants there (`node:port`, or the spine's name).
    pub expected: Option<String>,
    /// What LLDP said is there.
    pub seen: Option<String>,
}

/// The outcome of [`RoutedTestbed::check_neighbours`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct NeighbourReport {
    /// Ports checked.
    pub ports: usize,
    /// Ports that heard their neighbour.
    pub heard: usize,
    /// Ports without carrier (link down), not checked.
    pub down: usize,
    /// Findings.
    pub mismatches: Vec<Mismatch>,
    /// Time the check took, s.
    pub took_s: f64,
}

impl NeighbourReport {
    /// Findings of `kind`.
    pub fn count(&self, kind: MismatchKind) -> usize {
        self.mismatches.iter().filter(|m| m.kind == kind).count()
    }
}

/// The other end of `(n, p)` in the spec.
fn spec_peer(f: &Fabric, n: NodeId, p: topo::Port) -> (NodeId, topo::Port) {
    let l = f.link(f.port_link(n, p));
    if l.a == n && l.a_port == p {
        (l.b, l.b_port)
    } else {
        (l.a, l.a_port)
    }
}

/// Compares what each port heard (`(node, port) → (chassis, port id)`) with the spec
/// and checks the Clos rules on the heard graph; ports in `down` (link down: the link
/// alarms' business, not the cabling's) are not checked, nor the leaf rule for their
/// spines. Pure: unit-tested without namespaces.
pub fn compare_neighbours(
    f: &Fabric,
    heard: &BTreeMap<(NodeId, topo::Port), (String, String)>,
    down: &BTreeSet<(NodeId, topo::Port)>,
) -> Vec<Mismatch> {
    let names = f.name_index();
    let at = |n: NodeId, p: topo::Port| format!("{}:{}", f.node_name(n), ifname(p));
    let mut out = Vec::new();
    // Upper-tier neighbours each leaf actually heard.
    let mut leaf_up: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for n in 0..f.num_nodes() as u32 {
        let n = NodeId(n);
        for p in 0..f.degree(n) as topo::Port {
            if down.contains(&(n, p)) {
                continue;
            }
            let (en, ep) = spec_peer(f, n, p);
            let expected = at(en, ep);
            let Some((chassis, port)) = heard.get(&(n, p)) else {
                out.push(Mismatch {
                    kind: MismatchKind::Missing,
                    at: at(n, p),
                    expected: Some(expected),
                    seen: None,
                });
                continue;
            };
            let seen = format!("{chassis}:{port}");
            let known = names.get(chassis.as_str()).copied().filter(|&m| {
                port.strip_prefix('p')
                    .and_then(|x| x.parse::<usize>().ok())
                    .is_some_and(|x| x < f.degree(m))
            });
            let Some(m) = known else {
                out.push(Mismatch {
                    kind: MismatchKind::Unexpected,
                    at: at(n, p),
                    expected: Some(expected),
                    seen: Some(seen),
                });
                continue;
            };
            if f.tier(n) == topo::model::TIER_LEAF && f.tier(m) > topo::model::TIER_LEAF {
                leaf_up.entry(n).or_default().insert(m);
            }
            if f.tier(n) >= topo::model::TIER_SPINE && f.tier(n) == f.tier(m) {
                out.push(Mismatch {
                    kind: MismatchKind::SpineToSpine,
                    at: at(n, p),
                    expected: Some(expected.clone()),
                    seen: Some(seen.clone()),
                });
            }
            if seen != expected {
                out.push(Mismatch {
                    kind: MismatchKind::Miswired,
                    at: at(n, p),
                    expected: Some(expected),
                    seen: Some(seen),
                });
            }
        }
    }
    for leaf in f
        .switches()
        .filter(|&s| f.tier(s) == topo::model::TIER_LEAF)
    {
        let want: BTreeSet<NodeId> = (0..f.degree(leaf) as topo::Port)
            .filter(|&p| !down.contains(&(leaf, p)))
            .map(|p| f.peer(leaf, p))
            .filter(|&m| f.tier(m) > topo::model::TIER_LEAF)
            .collect();
        let got = leaf_up.remove(&leaf).unwrap_or_default();
        for s in want.difference(&got) {
            out.push(Mismatch {
                kind: MismatchKind::LeafMissesSpine,
                at: f.node_name(leaf).to_string(),
                expected: Some(f.node_name(*s).to_string()),
                seen: None,
            });
        }
    }
    out
}

/// One port's channel.
struct PortChannel {
    node: NodeId,
    port: topo::Port,
    tx: Box<dyn datalink::DataLinkSender>,
    rx: Box<dyn datalink::DataLinkReceiver>,
}

impl RoutedTestbed {
    /// [`check_neighbours`] on this testbed.
    pub fn check_neighbours(&self, wait: Duration) -> Result<NeighbourReport> {
        check_neighbours(&self.fabric, &self.ns, wait)
    }

    /// The namespaces, one per node in node order (to run [`check_neighbours`] without
    /// holding the testbed).
    pub fn namespaces(&self) -> &[Netns] {
        &self.ns
    }
}

/// Sends one LLDP frame out of every port of every node of `f` (namespace `ns[node]`;
/// chassis ID = the node's name, port ID = the interface name), listens up to `wait` on
/// each for its neighbour's, then compares with the spec ([`compare_neighbours`]).
/// Ports whose interface is gone count as missing; the ports of a node whose namespace
/// is gone, and their peers, as down.
pub fn check_neighbours(f: &Fabric, ns: &[Netns], wait: Duration) -> Result<NeighbourReport> {
    let t = Instant::now();
    let mut chans = Vec::new();
    let mut down = BTreeSet::new();
    // A node whose namespace is gone (deleted while running) is a node down, not a
    // cabling fault: its ports and their peers' are not checked.
    let gone: Vec<bool> = ns.iter().map(|x| !x.path().exists()).collect();
    for n in (0..f.num_nodes() as u32)
        .map(NodeId)
        .filter(|n| gone[n.idx()])
    {
        for p in 0..f.degree(n) as topo::Port {
            down.insert((n, p));
            down.insert(spec_peer(f, n, p));
        }
    }
    // A namespace deleted after `gone` was read (the check takes a while, seconds on a
    // loaded machine): that node is down too, not an error of the check.
    let vanished = |n: NodeId, down: &mut BTreeSet<(NodeId, topo::Port)>| {
        for p in 0..f.degree(n) as topo::Port {
            down.insert((n, p));
            down.insert(spec_peer(f, n, p));
        }
    };
    'nodes: for n in 0..f.num_nodes() as u32 {
        let n = NodeId(n);
        if gone[n.idx()] {
            continue;
        }
        let ifaces = match in_netns(&ns[n.idx()], datalink::interfaces) {
            Err(e) if namespace_gone(&e) => {
                vanished(n, &mut down);
                continue;
            }
            r => r?,
        };
        for p in 0..f.degree(n) as topo::Port {
            let name = ifname(p);
            let Some(iface) = ifaces.iter().find(|i| i.name == name) else {
                continue; // gone: missing
            };
            if !iface.is_running() {
                down.insert((n, p)); // no carrier: a link down, not a cabling fault
                continue;
            }
            let cfg = Config {
                read_timeout: Some(Duration::from_millis(5)),
                ..Config::default()
            };
            let ch = match in_netns(&ns[n.idx()], || datalink::channel(iface, cfg)) {
                Err(e) if namespace_gone(&e) => {
                    vanished(n, &mut down);
                    chans.retain(|c: &PortChannel| c.node != n);
                    continue 'nodes;
                }
                r => r?,
            }
            .map_err(io(format!("LLDP channel on {}:{name}", f.node_name(n))))?;
            let Channel::Ethernet(tx, rx) = ch else {
                return Err(Error::Invalid(format!(
                    "{}:{name}: not an Ethernet channel",
                    f.node_name(n)
                )));
            };
            chans.push(PortChannel {
                node: n,
                port: p,
                tx,
                rx,
            });
        }
    }
    for c in &mut chans {
        let mac = crate::mac_for(c.node.0, c.port as u8);
        let frame = LldpRepr {
            chassis: f.node_name(c.node).to_string(),
            port: ifname(c.port),
            ttl: 120,
        }
        .frame(mac)
        .map_err(|e| Error::Invalid(format!("LLDP frame: {e}")))?;
        match c.tx.send_to(&frame, None) {
            // The link went (or is going) down since the channel opened: a veth whose
            // peer lost carrier refuses with ENOBUFS.
            Some(Err(e)) if matches!(e.raw_os_error(), Some(libc::ENETDOWN | libc::ENOBUFS)) => {
                down.insert((c.node, c.port));
            }
            Some(Err(e)) => {
                return Err(io(format!(
                    "LLDP send on {}:{}",
                    f.node_name(c.node),
                    ifname(c.port)
                ))(e));
            }
            _ => {}
        }
    }
    let mut heard = BTreeMap::new();
    let deadline = Instant::now() + wait;
    for c in chans
        .iter_mut()
        .filter(|c| !down.contains(&(c.node, c.port)))
    {
        let me = (f.node_name(c.node).to_string(), ifname(c.port));
        // Frames already queued are read even after the deadline: one silent port
        // must not starve the ports read after it.
        loop {
            match c.rx.next() {
                Ok(frame) => {
                    if let Some(Ok(r)) = LldpRepr::parse_frame(frame)
                        && (r.chassis.as_str(), r.port.as_str()) != (&me.0, &me.1)
                    {
                        heard.insert((c.node, c.port), (r.chassis, r.port));
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    if Instant::now() >= deadline {
                        break;
                    }
                }
                Err(e) => {
                    return Err(io(format!("LLDP receive on {}:{}", me.0, me.1))(e));
                }
            }
        }
    }
    // Closing a packet socket waits for an RCU grace period (packet_release →
    // synchronize_net, ~15 ms each): 96 of them take ~1.4 s. Close them on a thread of
    // their own so the caller does not wait.
    std::thread::spawn(move || drop(chans));
    let ports = (0..f.num_nodes()).map(|n| f.degree(NodeId(n as u32))).sum();
    Ok(NeighbourReport {
        ports,
        heard: heard.len(),
        down: down.len(),
        mismatches: compare_neighbours(f, &heard, &down),
        took_s: secs(t),
    })
}

/// Whether `e` is the failure to open a namespace file that is no longer there.
fn namespace_gone(e: &Error) -> bool {
    matches!(e, Error::Os { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A namespace deleted while a check runs is a node down: entering it fails with
    /// "not found", which the check now tells apart from a real failure (a deleted
    /// switch namespace made the daemon's LLDP check count a source error under load).
    #[test]
    fn a_namespace_deleted_meanwhile_is_told_apart() {
        let ns = Netns::from_name("fab-0-no-such-namespace");
        let e = in_netns(&ns, || ()).unwrap_err();
        assert!(namespace_gone(&e), "{e}");
        let other = Error::Os {
            what: "setns".into(),
            source: std::io::Error::from_raw_os_error(libc::EPERM),
        };
        assert!(!namespace_gone(&other));
    }

    fn heard_as_spec(f: &Fabric) -> BTreeMap<(NodeId, topo::Port), (String, String)> {
        let mut h = BTreeMap::new();
        for n in 0..f.num_nodes() as u32 {
            let n = NodeId(n);
            for p in 0..f.degree(n) as topo::Port {
                let (m, q) = spec_peer(f, n, p);
                h.insert((n, p), (f.node_name(m).to_string(), ifname(q)));
            }
        }
        h
    }

    #[test]
    fn the_spec_itself_has_no_mismatch_and_a_swap_is_miswired() {
        let f = topo::generators::leaf_spine(2, 2, 2, topo::Rate::gbps(100)).unwrap();
        let mut h = heard_as_spec(&f);
        assert_eq!(compare_neighbours(&f, &h, &BTreeSet::new()), vec![]);
        // Swap leaf0's uplink to spine0 with leaf1's uplink to spine1 (cable ends moved).
        let leaves: Vec<NodeId> = f.switches().filter(|&s| f.tier(s) == 1).collect();
        let up = |l: NodeId, spine: usize| {
            (0..f.degree(l) as u16)
                .filter(|&p| f.tier(f.peer(l, p)) == 2)
                .nth(spine)
                .unwrap()
        };
        let (a, b) = ((leaves[0], up(leaves[0], 0)), (leaves[1], up(leaves[1], 1)));
        let (pa, pb) = (spec_peer(&f, a.0, a.1), spec_peer(&f, b.0, b.1));
        h.insert(a, (f.node_name(pb.0).into(), ifname(pb.1)));
        h.insert(b, (f.node_name(pa.0).into(), ifname(pa.1)));
        h.insert(pa, (f.node_name(b.0).into(), ifname(b.1)));
        h.insert(pb, (f.node_name(a.0).into(), ifname(a.1)));
        let m = compare_neighbours(&f, &h, &BTreeSet::new());
        let kinds = |k| m.iter().filter(|x| x.kind == k).count();
        assert_eq!(kinds(MismatchKind::Miswired), 4, "{m:?}");
        // leaf0 now has both uplinks on spine1: it misses spine0; leaf1 misses spine1.
        assert_eq!(kinds(MismatchKind::LeafMissesSpine), 2, "{m:?}");
        // A silent port, a stranger, two spines cabled together.
        h.remove(&a);
        h.insert(b, ("nobody".into(), "p0".into()));
        let spines: Vec<NodeId> = f.switches().filter(|&s| f.tier(s) == 2).collect();
        h.insert((spines[0], 0), (f.node_name(spines[1]).into(), "p1".into()));
        let m = compare_neighbours(&f, &h, &BTreeSet::new());
        let kinds = |k| m.iter().filter(|x| x.kind == k).count();
        assert_eq!(kinds(MismatchKind::Missing), 1, "{m:?}");
        assert_eq!(kinds(MismatchKind::Unexpected), 1, "{m:?}");
        assert_eq!(kinds(MismatchKind::SpineToSpine), 1, "{m:?}");
        // A port down is not checked: its silence is no finding.
        // (nor the leaf rule for the spine behind it).
        let m2 = compare_neighbours(&f, &h, &BTreeSet::from([a]));
        assert_eq!(m2.len(), m.len() - 2, "{m2:?}");
        assert!(m2.iter().all(|x| x.kind != MismatchKind::Missing), "{m2:?}");
    }
}
