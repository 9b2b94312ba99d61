//! What the tools print, other than forwarding tables ([`crate::tables`]): the cables
//! `ibnetdiscover` finds, the counters `perfquery` reads, OpenSM's log lines.

use std::collections::BTreeMap;

use crate::{Error, Result};

/// One port and what `ibnetdiscover` found cabled to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortPeer {
    /// The node (ibsim name, `S-<guid>` or `H-<guid>`).
    pub node: String,
    /// Its IB port.
    pub port: u8,
    /// The node at the other end.
    pub peer: String,
    /// The other end's IB port.
    pub peer_port: u8,
}

/// Every connected port of an `ibnetdiscover` topology (each cable appears once from
/// each end).
pub fn cables(text: &str) -> Result<Vec<PortPeer>> {
    let mut out = Vec::new();
    let mut node: Option<String> = None;
    for line in text.lines() {
        let bad = || Error::Parse {
            what: "ibnetdiscover".into(),
            line: line.to_string(),
        };
        if line.starts_with("Switch") || line.starts_with("Ca") || line.starts_with("Rt") {
            node = Some(quoted(line).ok_or_else(bad)?.0.to_string());
        } else if let (Some(n), Some(rest)) = (&node, line.strip_prefix('[')) {
            let (port, rest) = rest.split_once(']').ok_or_else(bad)?;
            let port: u8 = port.parse().map_err(|_| bad())?;
            let (peer, after) = quoted(rest).ok_or_else(bad)?;
            let peer_port = after
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .and_then(|(p, _)| p.parse().ok())
                .ok_or_else(bad)?;
            out.push(PortPeer {
                node: n.clone(),
                port,
                peer: peer.to_string(),
                peer_port,
            });
        }
    }
    Ok(out)
}

/// The first `"…"` of `s` and what follows it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let (_, rest) = s.split_once('"')?;
    rest.split_once('"')
}

/// `Name:....value` lines of `perfquery` (decimal or `0x` hex values).
pub fn counters(text: &str) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim_start_matches('.').trim();
        let v = match value.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => value.parse(),
        }
        .map_err(|_| Error::Parse {
            what: "perfquery".into(),
            line: line.to_string(),
        })?;
        out.insert(name.trim().to_string(), v);
    }
    Ok(out)
}

/// Per-port counters of `perfquery -l` (`-x -l`): one block per port, each opened by a
/// `# Port … counters: Lid L port P …` line.
pub fn counters_by_port(text: &str) -> Result<BTreeMap<u8, BTreeMap<String, u64>>> {
    let mut out = BTreeMap::new();
    let mut block = String::new();
    let mut port: Option<u8> = None;
    let flush = |port: Option<u8>, block: &str, out: &mut BTreeMap<u8, _>| -> Result<()> {
        if let Some(p) = port {
            out.insert(p, counters(block)?);
        }
        Ok(())
    };
    for line in text.lines() {
        if line.starts_with("# Port") {
            flush(port, &block, &mut out)?;
            block.clear();
            port = line
                .split(" port ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|p| p.parse().ok());
        } else {
            block.push_str(line);
            block.push('\n');
        }
    }
    flush(port, &block, &mut out)?;
    Ok(out)
}

/// One switch port as `iblinkinfo -l` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortState {
    /// The IB port.
    pub port: u8,
    /// Physical link up (anything but `Down`: `LinkUp`, with a logical state of
    /// Init, Armed or Active).
    pub up: bool,
    /// The LID and port at the other end, when up.
    pub peer: Option<(u16, u8)>,
}

/// The ports of `iblinkinfo -l` lines:
/// `0xGUID "name" LID PORT[ ] ==( 4X 53.125 Gbps Active/ LinkUp)==> 0xPEER PLID PPORT[ ] "peer" (…)`,
/// or `… PORT[ ] ==( Down/ Polling)==> [ ] "" ( )` for a port without a cable.
pub fn link_states(text: &str) -> Result<Vec<PortState>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.contains("==(")) {
        let bad = || Error::Parse {
            what: "iblinkinfo".into(),
            line: line.to_string(),
        };
        let (left, rest) = line.split_once("==(").ok_or_else(bad)?;
        let after_name = left.rsplit_once('"').ok_or_else(bad)?.1;
        let port = after_name
            .split('[')
            .next()
            .and_then(|p| p.split_whitespace().last())
            .and_then(|p| p.parse().ok())
            .ok_or_else(bad)?;
        let (state, right) = rest.split_once(")==>").ok_or_else(bad)?;
        let up = !state.contains("Down");
        let peer = if up {
            let mut it = right.split_whitespace();
            let _guid = it.next().filter(|g| g.starts_with("0x")).ok_or_else(bad)?;
            let lid = it.next().and_then(|l| l.parse().ok()).ok_or_else(bad)?;
            let pport = it
                .next()
                .and_then(|p| p.split('[').next())
                .and_then(|p| p.parse().ok())
                .ok_or_else(bad)?;
            Some((lid, pport))
        } else {
            None
        };
        out.push(PortState { port, up, peer });
    }
    Ok(out)
}

/// The LID of the local port from `ibaddr` (`GID fe80::… LID start 0x1 end 0x1`).
pub fn ibaddr_lid(text: &str) -> Result<u16> {
    text.split("LID start ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| match v.strip_prefix("0x") {
            Some(h) => u16::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        })
        .ok_or_else(|| Error::Parse {
            what: "ibaddr".into(),
            line: text.trim().to_string(),
        })
}

/// Every node's LID in an `ibnetdiscover` topology: a switch's from its header
/// (`… base port 0 lid 17 lmc 0`), a channel adapter's from its first cabled port
/// (`[1](guid) "S-…"[1] # lid 1 lmc 0 …`). Node → LID.
pub fn node_lids(text: &str) -> Result<BTreeMap<String, u16>> {
    let mut out = BTreeMap::new();
    let mut ca: Option<String> = None;
    let lid_after = |s: &str, key: &str| -> Option<u16> {
        s.split(key).nth(1)?.split_whitespace().next()?.parse().ok()
    };
    for line in text.lines() {
        let bad = || Error::Parse {
            what: "ibnetdiscover".into(),
            line: line.to_string(),
        };
        if line.starts_with("Switch") {
            let name = quoted(line).ok_or_else(bad)?.0.to_string();
            let comment = line.split_once('#').ok_or_else(bad)?.1;
            out.insert(name, lid_after(comment, " lid ").ok_or_else(bad)?);
            ca = None;
        } else if line.starts_with("Ca") || line.starts_with("Rt") {
            ca = Some(quoted(line).ok_or_else(bad)?.0.to_string());
        } else if let (Some(n), true) = (&ca, line.starts_with('['))
            && !out.contains_key(n)
        {
            let comment = line.split_once('#').ok_or_else(bad)?.1;
            let lid = comment
                .trim_start()
                .strip_prefix("lid ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .ok_or_else(bad)?;
            out.insert(n.clone(), lid);
        }
    }
    Ok(out)
}

/// Time of day of an OpenSM log line (`Nov 26 20:15:07 939143 [...] ...`), µs.
pub fn log_time_us(line: &str) -> Option<u64> {
    let mut it = line.split_whitespace().skip(2);
    let hms = it.next()?;
    let us: u64 = it.next()?.parse().ok()?;
    let mut f = hms.split(':').map(|x| x.parse::<u64>().ok());
    let (h, m, s) = (f.next()??, f.next()??, f.next()??);
    Some(((h * 60 + m) * 60 + s) * 1_000_000 + us)
}

/// µs from one log time of day to a later one (across midnight).
pub fn log_elapsed_us(from: u64, to: u64) -> u64 {
    const DAY: u64 = 86_400_000_000;
    (to + DAY - from) % DAY
}

/// The LID of the switch that sent a link-state trap, from OpenSM's
/// `Received Generic Notice type:1 num:128 (Link state change) … from LID:17` line.
pub fn trap128_lid(line: &str) -> Option<u16> {
    if !line.contains("num:128") {
        return None;
    }
    let rest = line.split("from LID:").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISC: &str = "vendid=0x0
switchguid=0x2c90300001000(2c90300001000)
Switch\t4 \"S-0002c90300001000\"\t\t# \"pod0-leaf0\" base port 0 lid 17 lmc 0
[1]\t\"H-0002c90300000000\"[1](2c90300000001) \t\t# \"host0-nic0\" lid 1 4xHDR
[4]\t\"S-0002c90300001900\"[1]\t\t# \"pod0-agg1\" lid 26 4xHDR

caguid=0x2c90300000000
Ca\t1 \"H-0002c90300000000\"\t\t# \"host0-nic0\"
[1](2c90300000001) \t\"S-0002c90300001000\"[1]\t\t# lid 1 lmc 0 \"pod0-leaf0\" lid 17 4xHDR
";

    #[test]
    fn cables_from_both_ends() {
        let c = cables(DISC).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(
            c[1],
            PortPeer {
                node: "S-0002c90300001000".into(),
                port: 4,
                peer: "S-0002c90300001900".into(),
                peer_port: 1
            }
        );
        assert_eq!(c[2].node, "H-0002c90300000000");
        assert_eq!((c[2].port, c[2].peer_port), (1, 1));
        assert!(cables("Switch 4 \"S-1\"\n[x]\t\"S-2\"[1]\n").is_err());
        let lids = node_lids(DISC).unwrap();
        assert_eq!(lids["S-0002c90300001000"], 17);
        assert_eq!(lids["H-0002c90300000000"], 1);
        assert_eq!(lids.len(), 2);
        assert!(node_lids("Switch 4 \"S-1\" # \"x\" base port 0 lid zz\n").is_err());
        assert_eq!(
            ibaddr_lid("GID fe80::2:c903:0:1 LID start 0x1 end 0x1\n").unwrap(),
            1
        );
        assert!(ibaddr_lid("nonsense").is_err());
    }

    #[test]
    fn link_states_of_one_switch() {
        let t = "0x0002c90300001000 \"                    pod0-leaf0\"     17    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x0002c90300000001      1    1[  ] \"host0-nic0\" (Could be 12X )
0x0002c90300001000 \"                    pod0-leaf0\"     17    3[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
0x0002c90300001000 \"                    pod0-leaf0\"     17   12[  ] ==( 4X        53.125 Gbps  Armed/  LinkUp)==>  0x0002c90300001900     26    1[  ] \"pod0-agg1\" (Could be 12X )
";
        let s = link_states(t).unwrap();
        assert_eq!(
            s,
            vec![
                PortState {
                    port: 1,
                    up: true,
                    peer: Some((1, 1))
                },
                PortState {
                    port: 3,
                    up: false,
                    peer: None
                },
                PortState {
                    port: 12,
                    up: true,
                    peer: Some((26, 1))
                },
            ]
        );
        assert!(link_states("0x1 \"x\" 17 1[ ] ==( Active/ LinkUp)==> garbage\n").is_err());
        assert!(link_states("no links here\n").unwrap().is_empty());
    }

    #[test]
    fn counters_and_log_lines() {
        let c = counters(
            "# Port counters: Lid 17 port 1 (CapMask: 0x1300)\nPortSelect:......................1\nCounterSelect:...................0x0100\nPortXmitData:....................238032\n",
        )
        .unwrap();
        assert_eq!(c["PortSelect"], 1);
        assert_eq!(c["CounterSelect"], 256);
        assert_eq!(c["PortXmitData"], 238032);
        assert!(counters("PortXmitData:....x\n").is_err());
        let by = counters_by_port(
            "# Port extended counters: Lid 17 port 1 (CapMask: 0x1300)\nPortXmitData:....4\n# Port extended counters: Lid 17 port 2 (CapMask: 0x1300)\nPortXmitData:....9\n",
        )
        .unwrap();
        assert_eq!(by[&1]["PortXmitData"], 4);
        assert_eq!(by[&2]["PortXmitData"], 9);
        let l = "Nov 26 20:15:07 939143 [321936C0] 0x01 -> log_trap_info: Received Generic Notice type:1 num:128 (Link state change) Producer:2 (Switch) from LID:17 TID:0x0";
        assert_eq!(
            log_time_us(l),
            Some((20 * 3600 + 15 * 60 + 7) * 1_000_000 + 939143)
        );
        assert_eq!(trap128_lid(l), Some(17));
        assert_eq!(log_elapsed_us(86_399_000_000, 1_000_000), 2_000_000);
    }
}
