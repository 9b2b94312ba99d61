//! Linear forwarding tables as the tools print them, compared.
//!
//! `ibroute` and OpenSM's `opensm-lfts.dump` (and fabric's `lfts.dump`) print the same
//! blocks: a header `Unicast lids [..] of switch Lid L guid 0xGUID (..):` and one
//! `0xLID PORT …` line per routed LID (port 0: the switch itself).

use std::collections::{BTreeMap, VecDeque};

use topo::{NodeId, Routes};

use crate::design::Design;
use crate::{Error, Result};

/// Switch node GUID → destination LID → output port.
pub type Lfts = BTreeMap<u64, BTreeMap<u16, u8>>;

/// Parses every LFT block of `text` (`what` names the source in errors), with topo's
/// reader of the format it writes ([`topo::export::opensm::parse_lft_dump`]).
pub fn parse(text: &str, what: &str) -> Result<Lfts> {
    topo::export::opensm::parse_lft_dump(text).map_err(|e| Error::Parse {
        what: format!("{what} line {} ({})", e.number, e.reason),
        line: e.text,
    })
}

/// One entry that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDiff {
    /// Switch node GUID.
    pub switch: u64,
    /// Destination LID.
    pub lid: u16,
    /// Port the tables want (`None`: no entry).
    pub want: Option<u8>,
    /// Port the switch holds (`None`: no entry).
    pub got: Option<u8>,
}

/// What [`diff`] found.
#[derive(Debug, Clone, Default)]
pub struct LftDiff {
    /// Entries compared (the union of both sides, over the switches `want` names).
    pub checked: usize,
    /// Entries that differ.
    pub entries: Vec<EntryDiff>,
}

impl LftDiff {
    /// Wanted entries the switch lacks.
    pub fn missing(&self) -> usize {
        self.entries.iter().filter(|e| e.got.is_none()).count()
    }
    /// Entries the switch holds that the tables do not.
    pub fn extra(&self) -> usize {
        self.entries.iter().filter(|e| e.want.is_none()).count()
    }
    /// Entries present on both sides with different ports.
    pub fn different(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.want.is_some() && e.got.is_some())
            .count()
    }
}

/// Compares the switches' tables `got` with `want`, switch by switch (switches `want`
/// does not name are ignored; a switch `got` lacks counts all its entries missing).
pub fn diff(want: &Lfts, got: &Lfts) -> LftDiff {
    let empty = BTreeMap::new();
    let mut d = LftDiff::default();
    for (&sw, w) in want {
        let g = got.get(&sw).unwrap_or(&empty);
        let mut lids: Vec<u16> = w.keys().chain(g.keys()).copied().collect();
        lids.sort_unstable();
        lids.dedup();
        for lid in lids {
            d.checked += 1;
            let (a, b) = (w.get(&lid).copied(), g.get(&lid).copied());
            if a != b {
                d.entries.push(EntryDiff {
                    switch: sw,
                    lid,
                    want: a,
                    got: b,
                });
            }
        }
    }
    d
}

/// `(switch, LID)` pairs where a switch holds no entry for a LID it can reach over the
/// links `routes` holds up — every host's and every switch's, the SM's included.
pub fn unreached(design: &Design, routes: &Routes, got: &Lfts) -> Vec<(NodeId, u16)> {
    let f = &design.fabric;
    let empty = BTreeMap::new();
    let mut out = Vec::new();
    let mut seen = vec![false; f.num_nodes()];
    let mut queue = VecDeque::new();
    for s in f.switches() {
        let table = got.get(&design.addr.node_guid(s)).unwrap_or(&empty);
        seen.fill(false);
        seen[s.idx()] = true;
        queue.clear();
        queue.push_back(s);
        while let Some(n) = queue.pop_front() {
            if n != s && !table.contains_key(&design.lid(n)) {
                out.push((s, design.lid(n)));
            }
            if f.is_host(n) {
                continue;
            }
            for (peer, l) in f.ports(n) {
                if !seen[peer.idx()] && routes.link_is_up(l) && design.lid(peer) != 0 {
                    seen[peer.idx()] = true;
                    queue.push_back(peer);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const IBROUTE: &str =
        "Unicast lids [0x0-0x24] of switch Lid 17 guid 0x0002c90300001000 (pod0-leaf0):
  Lid  Out   Destination
       Port     Info 
0x0001 001 : (Channel Adapter portguid 0x0002c90300000001: 'host0-nic0')
0x0002 002 : (Channel Adapter portguid 0x0002c90300000101: 'host1-nic0')
0x0011 000 : (Switch portguid 0x0002c90300001000: 'pod0-leaf0')
3 valid lids dumped 
";

    #[test]
    fn parses_ibroute_and_diffs() {
        let got = parse(IBROUTE, "ibroute").unwrap();
        let t = &got[&0x0002c90300001000];
        assert_eq!(t.len(), 3);
        assert_eq!(t[&2], 2);
        assert_eq!(t[&0x11], 0);
        let mut want = got.clone();
        let w = want.get_mut(&0x0002c90300001000).unwrap();
        w.insert(2, 3);
        w.insert(5, 4);
        w.remove(&1);
        let d = diff(&want, &got);
        assert_eq!(d.checked, 4);
        assert_eq!((d.missing(), d.extra(), d.different()), (1, 1, 1));
    }

    #[test]
    fn garbage_is_an_error_naming_the_line() {
        let e = parse(
            "Unicast lids [0-1] of switch Lid 1 guid 0x01 (x):\n0xzz 001\n",
            "ibroute",
        )
        .unwrap_err();
        assert!(e.to_string().contains("0xzz"), "{e}");
        assert!(parse("Unicast lids of switch guid 0xqq\n", "x").is_err());
    }

    #[test]
    fn unreached_counts_every_lid_a_switch_lacks() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let d = Design::new(std::sync::Arc::new(f)).unwrap();
        let r = Routes::compute(&d.fabric);
        let lft = topo::lft::Lft::compute(&d.fabric, &r);
        let mut got = d.lfts(&r, &lft).unwrap();
        assert!(unreached(&d, &r, &got).is_empty());
        // Drop the SM's LID from one switch: exactly that entry is reported.
        let leaf = d.fabric.switches().next().unwrap();
        got.get_mut(&d.addr.node_guid(leaf)).unwrap().remove(&1);
        assert_eq!(unreached(&d, &r, &got), vec![(leaf, 1)]);
    }
}
