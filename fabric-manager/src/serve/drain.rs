//! Health a scheduler can act on: which servers to drain, and which to resume.
//!
//! A server is suggested for **drain** when one of its NICs is cut off: every link of the
//! NIC is down, or the NIC's leaf switch is down as a whole. A collective over that server
//! would run without that NIC's rail (or not at all). A server is suggested for **resume**
//! when it is not cut off now but a NIC link or its leaf went down in the events the
//! daemon keeps: the operator (or a hook) that drained it can bring it back. The reason
//! names the NIC and the link, so `scontrol show node` tells the on-call engineer why.
//!
//! Served as `GET /api/v1/drain` and as two gauges on `/metrics`,
//! `fabric_scheduler_drain_suggested{node,reason}` and
//! `fabric_scheduler_resume_suggested{node}` (value 1 per server listed). fabric only
//! suggests: nothing here talks to Slurm or Kubernetes (`fabric place drain` prints the
//! `scontrol` / `kubectl` lines).

use std::collections::{BTreeMap, BTreeSet};

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use fabric_api::{Event, EventKind, FabricInfo};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use serde::Serialize;

use super::http::AppState;
use super::hub::Hub;
use super::metrics::Selection;

/// One server to drain or resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// Scheduler node name (`host12`: the server part of `host12-nic3`).
    pub node: String,
    /// Why (NICs and links), for `scontrol … reason=`.
    pub reason: String,
}

/// What `GET /api/v1/drain` answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    /// Servers to drain now.
    pub drain: Vec<Suggestion>,
    /// Servers drained earlier (a NIC link or leaf went down) that are whole again.
    pub resume: Vec<Suggestion>,
}

/// Server name of a NIC name: `host12-nic3` → `host12`.
pub fn server_of(nic: &str) -> &str {
    nic.rsplit_once("-nic").map_or(nic, |(s, _)| s)
}

/// The suggestions for a fabric map, its links down and switches down now, and the kept
/// events (for what came back).
pub fn suggestions(
    info: &FabricInfo,
    links_down: &[u32],
    switches_down: &[String],
    events: &[Event],
) -> DrainReport {
    let down: BTreeSet<u32> = links_down.iter().copied().collect();
    let sw_down: BTreeSet<&str> = switches_down.iter().map(String::as_str).collect();
    // per NIC: (link, peer) of each port
    let mut nic_links: BTreeMap<u32, Vec<(u32, Option<u32>)>> = BTreeMap::new();
    for p in &info.ports {
        let Some(node) = info.nodes.get(p.node as usize) else {
            continue;
        };
        if node.tier != 0 {
            continue;
        }
        if let Some(l) = p.link {
            nic_links.entry(p.node).or_default().push((l.0, p.peer));
        }
    }
    let name = |n: u32| info.nodes.get(n as usize).map_or("?", |x| x.name.as_str());
    let mut drain: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let mut link_nic: BTreeMap<u32, u32> = BTreeMap::new();
    let mut leaf_nics: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&nic, links) in &nic_links {
        for &(l, peer) in links {
            link_nic.insert(l, nic);
            if let Some(p) = peer {
                leaf_nics.entry(p).or_default().push(nic);
            }
        }
        let leaf_down = links
            .iter()
            .filter_map(|&(_, p)| p)
            .find(|&p| sw_down.contains(name(p)));
        let all_down = links.iter().all(|&(l, _)| down.contains(&l));
        let why = if let Some(p) = leaf_down {
            Some(format!("{}: leaf {} down", name(nic), name(p)))
        } else if all_down {
            let ls: Vec<String> = links.iter().map(|&(l, _)| format!("link {l}")).collect();
            Some(format!("{}: {} down", name(nic), ls.join(", ")))
        } else {
            None
        };
        if let Some(w) = why {
            drain
                .entry(server_of(name(nic)).to_string())
                .or_default()
                .push(w);
        }
    }
    for e in events {
        let nics: Vec<u32> = match &e.what {
            EventKind::LinkDown { link, .. } => {
                link_nic.get(&link.0).copied().into_iter().collect()
            }
            EventKind::SwitchDown { node, .. } => leaf_nics.get(node).cloned().unwrap_or_default(),
            _ => Vec::new(),
        };
        for n in nics {
            touched.insert(server_of(name(n)).to_string());
        }
    }
    let resume = touched
        .into_iter()
        .filter(|s| !drain.contains_key(s))
        .map(|node| Suggestion {
            node,
            reason: "its NICs and leaves are up again".into(),
        })
        .collect();
    DrainReport {
        drain: drain
            .into_iter()
            .map(|(node, why)| Suggestion {
                node,
                reason: format!("fabric: {}", why.join("; ")),
            })
            .collect(),
        resume,
    }
}

/// How many kept events are looked at for resumes.
const EVENTS: usize = 100_000;

/// The report from the daemon's state now.
pub fn report(hub: &Hub, health: &super::health::DaemonHealth) -> DrainReport {
    let s = health.summary();
    let events: Vec<fabric_api::Event> =
        hub.events(0, EVENTS).into_iter().map(|n| n.event).collect();
    suggestions(hub.info(), &s.links_down, &s.switches_down, &events)
}

/// `GET /api/v1/drain`.
pub async fn drain(State(st): State<AppState>) -> Response {
    Json(report(&st.hub, &st.health)).into_response()
}

/// `fabric_scheduler_drain_suggested` and `fabric_scheduler_resume_suggested`.
pub fn encode(
    hub: &Hub,
    health: &super::health::DaemonHealth,
    sel: &Selection,
    enc: &mut DescriptorEncoder<'_>,
) -> std::fmt::Result {
    let want_d = sel.family("fabric_scheduler_drain_suggested");
    let want_r = sel.family("fabric_scheduler_resume_suggested");
    if !want_d && !want_r {
        return Ok(());
    }
    let r = report(hub, health);
    if want_d {
        let mut m = enc.encode_descriptor(
            "fabric_scheduler_drain_suggested",
            "1 for every server fabric suggests draining (a NIC cut off); fabric never drains",
            None,
            MetricType::Gauge,
        )?;
        for s in &r.drain {
            let labels = [("node", s.node.as_str()), ("reason", s.reason.as_str())];
            ConstGauge::new(1).encode(m.encode_family(&labels)?)?;
        }
    }
    if want_r {
        let mut m = enc.encode_descriptor(
            "fabric_scheduler_resume_suggested",
            "1 for every server whose NICs are whole again after a failure; fabric never resumes",
            None,
            MetricType::Gauge,
        )?;
        for s in &r.resume {
            ConstGauge::new(1).encode(m.encode_family(&[("node", s.node.as_str())])?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric_api::{Detector, Timestamp};
    use topo::LinkId;

    fn ev(what: EventKind) -> Event {
        Event {
            seq: 1,
            time: Timestamp {
                ns: 0,
                clock: fabric_api::Clock::Virtual,
            },
            what,
        }
    }

    #[test]
    fn cut_nic_drains_its_server_and_returns_as_resume() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let info = FabricInfo::from_topo(&f, 1);
        let l = f.attachment(topo::NodeId(5), 0).unwrap().link.0;
        let down = ev(EventKind::LinkDown {
            link: LinkId(l),
            detected_by: Detector::Carrier,
            detect_ns: None,
        });
        let r = suggestions(&info, &[l], &[], std::slice::from_ref(&down));
        assert_eq!(r.drain.len(), 1);
        assert_eq!(r.drain[0].node, "host5");
        assert!(r.drain[0].reason.contains(&format!("link {l}")), "{:?}", r);
        assert!(r.resume.is_empty());
        // the link is back: resume
        let r = suggestions(&info, &[], &[], &[down]);
        assert!(r.drain.is_empty());
        assert_eq!(r.resume[0].node, "host5");
        // a switch-switch link down drains nobody
        let up = f
            .port_link(f.attachment(topo::NodeId(0), 0).unwrap().leaf, 2)
            .0;
        assert!(suggestions(&info, &[up], &[], &[]).drain.is_empty());
        // a leaf down drains its two servers
        let leaf = f.attachment(topo::NodeId(0), 0).unwrap().leaf;
        let r = suggestions(&info, &[], &[f.node_name(leaf).to_string()], &[]);
        let nodes: Vec<&str> = r.drain.iter().map(|s| s.node.as_str()).collect();
        assert_eq!(nodes, ["host0", "host1"]);
    }
}
