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
