//! `lanes.txt`: the lane of every (source leaf, destination leaf) pair that
//! [`crate::lanes::route_around`] put on a lane ≥ 1; every other pair is on lane 0.
//!
//! Forwarding tables are per destination and carry no lane: the sender picks it per
//! destination. What each target can carry:
//! * InfiniBand: the lane is the pair's **path SL**, and every port maps SL *n* to VL *n*
//!   (OpenSM `qos_sl2vl` identity, the default with `qos TRUE` and ≥ lanes data VLs). The
//!   file gives each pair's host LID ranges; the `file` routing engine reads LFTs only, so
//!   the SLs reach the hosts through a QoS policy or the application, not through the dump.
//! * RoCE / IP: the lane is a lossless **traffic class** (PFC priority); the sender marks
//!   the pair's traffic with the DSCP that its switches map to that priority. The `ip`,
//!   `ip-nhg`, FRR and SONiC route files cannot carry it: they are per destination prefix.
//!
//! One line per pair: `plane src_leaf dst_leaf lane src_v4 dst_v4 src_v6 dst_v6 src_lids
//! dst_lids` (`-` where the plan has no such address).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::addressing::AddressPlan;
use crate::lanes::Lanes;
use crate::model::*;

/// Writes `lanes.txt` (see the module docs).
pub fn write(f: &Fabric, addr: &AddressPlan, lanes: &Lanes, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# {} lanes: lane 0 = up*/down* routes; lanes 1..{} = {} leaf pairs with no up*/down* path,",
        lanes.used,
        lanes.used.saturating_sub(1),
        lanes.pairs().len()
    )?;
    writeln!(
        w,
        "# routed around with a down-up turn; each lane's channel dependency graph is acyclic."
    )?;
    writeln!(
        w,
        "# The sender selects the lane: InfiniBand path SL = lane (SL n -> VL n on every port);"
    )?;
    writeln!(
        w,
        "# RoCE: the DSCP your switches map to lossless priority = lane. Unlisted pairs: lane 0."
    )?;
    writeln!(
        w,
        "# plane src_leaf dst_leaf lane src_v4 dst_v4 src_v6 dst_v6 src_lids dst_lids"
    )?;
    let lids = leaf_lids(f, addr);
    let or_dash = |s: Option<String>| s.unwrap_or_else(|| "-".into());
    for &(s, d, lane) in lanes.pairs() {
        let plane = f.plane(s).unwrap_or(0);
        let v4 = |l: NodeId| or_dash(addr.tor_prefix_v4(l).map(|n| n.to_string()));
        let v6 = |l: NodeId| or_dash(addr.tor_prefix_v6(l).map(|n| n.to_string()));
        let lid = |l: NodeId| or_dash(lids.get(&l).map(|&(a, b)| format!("0x{a:04x}-0x{b:04x}")));
        writeln!(
            w,
            "{plane} {} {} {lane} {} {} {} {} {} {}",
            f.node_name(s),
            f.node_name(d),
            v4(s),
            v4(d),
            v6(s),
            v6(d),
            lid(s),
            lid(d)
        )?;
    }
    Ok(())
}

/// First and last host LID below each leaf.
fn leaf_lids(f: &Fabric, addr: &AddressPlan) -> HashMap<NodeId, (u16, u16)> {
    let mut m: HashMap<NodeId, (u16, u16)> = HashMap::new();
    for h in f.hosts() {
        for p in f.host_planes(h) {
            let (Some(a), Some(lid)) = (f.attachment(h, p), addr.host_lid(h, p)) else {
                continue;
            };
            let e = m.entry(a.leaf).or_insert((lid, lid));
            e.0 = e.0.min(lid);
            e.1 = e.1.max(lid);
        }
    }
    m
}

/// Writes `plane`'s OpenSM QoS policy (`opensm -Q -Y qos-policy.conf`): one port group per
/// leaf that has a pair on a further lane (the port GUIDs of its hosts' ports in the plane),
/// a QoS level per lane (`sl: lane`; `DEFAULT` is SL 0), and one match rule per such leaf
/// pair, so OpenSM's path records give each pair the SL of its lane (the "advanced QoS
/// policy" of OpenSM's `QoS_management_in_OpenSM.txt`). SL n must map to VL n on every port
/// (`qos_sl2vl`, identity by default). Returns whether the plane has such a pair.
pub fn write_qos_policy(
    f: &Fabric,
    addr: &AddressPlan,
    lanes: &Lanes,
    plane: u16,
    w: &mut dyn Write,
) -> io::Result<bool> {
    let pairs: Vec<(NodeId, NodeId, u8)> = lanes
        .pairs()
        .iter()
        .copied()
        .filter(|&(s, _, _)| f.plane(s) == Some(plane))
        .collect();
    if pairs.is_empty() {
        return Ok(false);
    }
    let mut leaves: Vec<NodeId> = pairs.iter().flat_map(|&(s, d, _)| [s, d]).collect();
    leaves.sort_unstable();
    leaves.dedup();
    let mut guids: HashMap<NodeId, Vec<u64>> = HashMap::new();
    for h in f.hosts() {
        if let Some(a) = f.attachment(h, plane)
            && leaves.binary_search(&a.leaf).is_ok()
        {
            guids
                .entry(a.leaf)
                .or_default()
                .push(addr.port_guid(f, h, a.host_port));
        }
    }
    writeln!(
        w,
        "# OpenSM QoS policy of plane {plane} (opensm -Q -Y qos-policy.conf): path SL = lane for\n\
         # the {} leaf pairs routed around on further lanes; every other pair is SL 0.\n\
         # SL n must map to VL n on every port (qos_sl2vl, identity by default).",
        pairs.len()
    )?;
    writeln!(w, "port-groups")?;
    for l in leaves.iter().filter(|l| guids.contains_key(l)) {
        let list: Vec<String> = guids[l].iter().map(|g| format!("0x{g:016x}")).collect();
        writeln!(
            w,
            "port-group\nname: {}\nport-guid: {}\nend-port-group",
            f.node_name(*l),
            list.join(", ")
        )?;
    }
    writeln!(w, "end-port-groups\nqos-levels")?;
    writeln!(w, "qos-level\nname: DEFAULT\nsl: 0\nend-qos-level")?;
    for lane in 1..lanes.used {
        writeln!(w, "qos-level\nname: lane{lane}\nsl: {lane}\nend-qos-level")?;
    }
    writeln!(w, "end-qos-levels\nqos-match-rules")?;
    for (s, d, lane) in pairs {
        if guids.contains_key(&s) && guids.contains_key(&d) {
            writeln!(
                w,
                "qos-match-rule\nsource: {}\ndestination: {}\nqos-level-name: lane{lane}\nend-qos-match-rule",
                f.node_name(s),
                f.node_name(d)
            )?;
        }
    }
    writeln!(w, "end-qos-match-rules")?;
    Ok(true)
}
