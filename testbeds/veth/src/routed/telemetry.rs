//! The routed testbed's telemetry in the `fabric-api` schema: one RTM_GETLINK dump per
//! namespace per interval (stats64, errors, carrier, operstate from the same messages),
//! never one request per link, laid out in the port order of
//! `FabricInfo::from_topo` (port `2·link` is the link's `a` end, `2·link + 1` its `b` end).
//! Counters are the kernel's own cumulative ones: a reader derives rates with
//! `fabric_api::Interval`, which takes a decrease (a veth re-created) as a reset.

use fabric_api::{Column, FabricInfo, Snapshot, Source, SourceKind, Timestamp};

use super::*;

/// PFC priorities the map declares (the kernel forwards without PFC: none counted).
const PRIORITIES: u8 = 8;

impl RoutedTestbed {
    /// The fabric as a port map (send it once, before the snapshots).
    pub fn fabric_info(&self) -> FabricInfo {
        FabricInfo::from_topo(&self.fabric, PRIORITIES)
    }

    /// Every port's counters and state now: one link dump per namespace. `seq` numbers
    /// the snapshot; the timestamp is wall-clock time.
    pub fn snapshot(&self, seq: u64) -> Result<Snapshot> {
        let f = &self.fabric;
        let n = 2 * f.num_links();
        let mut cols = PortColumns::new(n);
        for node in 0..f.num_nodes() {
            let node = NodeId(node as u32);
            if self.is_gone(node) {
                continue; // its ports are unseen
            }
            for (name, st) in self.nl[node.idx()].stats()? {
                let Some(port) = name.strip_prefix('p').and_then(|p| p.parse::<u16>().ok()) else {
                    continue; // lo
                };
                if usize::from(port) >= f.degree(node) {
                    continue;
                }
                let i = FabricInfo::topo_port_index(f, node, port) as usize;
                cols.set(i, &st);
            }
        }
        for l in 0..f.num_links() {
            let link = f.link(LinkId(l as u32));
            for (i, node, peer) in [(2 * l, link.a, 2 * l + 1), (2 * l + 1, link.b, 2 * l)] {
                if !cols.seen[i] {
                    cols.down[i] = match self.presence[node.idx()] {
                        // Not ours to read: as the other end of its cable says when
                        // that one is here, else unknown (not reported down).
                        Presence::Elsewhere => cols.seen[peer] && cols.down[peer],
                        Presence::Here | Presence::Vanished => true,
                    };
                }
            }
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let source = Source {
            kind: SourceKind::RoutedTestbed,
            name: f.name().to_string(),
        };
        let mut s = Snapshot::new(seq, Timestamp::wall_ns(now), source);
        cols.into_snapshot(&mut s);
        s.sum_ports_into_totals();
        Ok(s)
    }
}

/// Per-port arrays being filled from the dumps.
struct PortColumns {
    tx_bytes: Vec<u64>,
    rx_bytes: Vec<u64>,
    tx_pkts: Vec<u64>,
    rx_pkts: Vec<u64>,
    drops_kernel: Vec<u64>,
    down: Vec<bool>,
    /// Ports found in a dump (an interface deleted behind the testbed's back is not).
    seen: Vec<bool>,
}

impl PortColumns {
    fn new(n: usize) -> Self {
        PortColumns {
            tx_bytes: vec![0; n],
            rx_bytes: vec![0; n],
            tx_pkts: vec![0; n],
            rx_pkts: vec![0; n],
            drops_kernel: vec![0; n],
            down: vec![false; n],
            seen: vec![false; n],
        }
    }

    fn set(&mut self, i: usize, st: &crate::netlink::LinkStats) {
        self.seen[i] = true;
        self.tx_bytes[i] = st.tx_bytes;
        self.rx_bytes[i] = st.rx_bytes;
        self.tx_pkts[i] = st.tx_packets;
        self.rx_pkts[i] = st.rx_packets;
        self.drops_kernel[i] = st.rx_dropped + st.tx_dropped + st.rx_errors + st.tx_errors;
        self.down[i] = !(st.carrier && st.oper_up);
    }

    fn into_snapshot(self, s: &mut Snapshot) {
        let c = &mut s.counters;
        c.tx_bytes = Some(Column::from(self.tx_bytes));
        c.rx_bytes = Some(Column::from(self.rx_bytes));
        c.tx_pkts = Some(Column::from(self.tx_pkts));
        c.rx_pkts = Some(Column::from(self.rx_pkts));
        c.drops_kernel = Some(Column::from(self.drops_kernel));
        s.gauges.oper_down = (0..self.down.len() as u32)
            .filter(|&i| self.down[i as usize])
            .collect();
    }
}
