//! fabric as OpenSM's brain: OpenSM runs the `file` routing engine on tables fabric
//! computes; when a cable fails or returns, fabric finds which one — the ports of the
//! switches that sent the trap (`iblinkinfo` on each, over directed routes), or, when
//! that cannot tell, `ibnetdiscover` against the links it believes up — re-routes
//! incrementally ([`topo::Routes::fail_links`], [`Lft::update`]), writes the new dump
//! ([`Dump`]: only the switches whose block changed are re-read) and has OpenSM load it.
//! The heavy sweep the trap started re-reads the dump when it reaches routing: if it has
//! not ended when the dump is written, fabric waits for it instead of asking for another;
//! after each `SUBNET UP` one changed entry is read back from its switch, and OpenSM is
//! signalled (`SIGHUP`, a heavy sweep) until the switch holds the new value.

use std::sync::Arc;
use std::time::{Duration, Instant};

use topo::lft::Lft;
use topo::{Fabric, LinkId, Routes};

use crate::dump::Dump;
use crate::opensm::{self, Engine, SmOptions};
use crate::parse::{self, PortPeer};
use crate::subnet::{Attach, Subnet};
use crate::tables::{self, EntryDiff, LftDiff, Lfts};
use crate::{Error, Result};

/// Sweeps waited for before giving up on OpenSM loading new tables.
const MAX_SWEEPS: u32 = 8;
/// How long one sweep may take (k=24 on a loaded machine: several seconds).
const SWEEP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long to wait for the end of the sweep a trap started before asking for another.
const TRAP_SWEEP_WAIT: Duration = Duration::from_secs(5);

/// A cable that changed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChange {
    /// The design's link.
    pub link: LinkId,
    /// Up (returned) or down (failed).
    pub up: bool,
}

/// How fabric answered link changes.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The changes answered.
    pub changes: Vec<LinkChange>,
    /// LFT entries that changed (host and switch LIDs, all switches).
    pub entries_changed: usize,
    /// Switches whose table changed.
    pub switches_changed: Vec<topo::NodeId>,
    /// Re-routing (routes and LFTs), µs.
    pub compute_us: u64,
    /// Writing the dump, µs.
    pub write_us: u64,
    /// From `SIGHUP` to the `SUBNET UP` of the sweep that loaded the new tables, µs.
    pub load_us: u64,
    /// OpenSM's `SUBNET UP` line of that sweep (its time stamp is the load time).
    pub subnet_up: String,
    /// Heavy sweeps OpenSM ran before it held the new tables (1: the first).
    pub sweeps: u32,
    /// `SIGHUP`s sent (0: the sweep the trap started loaded the new tables).
    pub hups: u32,
}

/// OpenSM on ibsim, routed by fabric.
#[derive(Debug)]
pub struct Brain {
    net: Subnet,
    routes: Routes,
    lft: Lft,
    /// The dump last written, and its tables.
    dump: Dump,
    want: Lfts,
}

impl Brain {
    /// Starts the subnet of `f`, computes its tables, and OpenSM with the `file` engine
    /// on them (first `SUBNET UP` awaited).
    pub fn start(f: Arc<Fabric>, tag: &str) -> Result<Brain> {
        let mut net = Subnet::start(f, tag)?;
        let fab = net.design().fabric.clone();
        let routes = Routes::compute(&fab);
        let lft = Lft::compute(&fab, &routes);
        let dump = Dump::render(net.design(), &routes, &lft)?;
        dump.write(&net.lfts_path())?;
        let want = dump.tables()?;
        let path = net.lfts_path();
        net.start_sm(Engine::File(path), &SmOptions::default())?;
        Ok(Brain {
            net,
            routes,
            lft,
            dump,
            want,
        })
    }

    /// Fabric as the brain of an OpenSM someone else runs (`a`; its `file` engine on
    /// `a.lfts`): nothing is started, written or signalled yet — [`Self::adopt`] does.
    pub fn attach(f: Arc<Fabric>, a: &Attach) -> Result<Brain> {
        let net = Subnet::attach(f, a)?;
        let fab = net.design().fabric.clone();
        let routes = Routes::compute(&fab);
        let lft = Lft::compute(&fab, &routes);
        Ok(Brain {
            net,
            routes,
            lft,
            dump: Dump::default(),
            want: Lfts::new(),
        })
    }

    /// Takes the subnet over as found: routes around the links `down` (cables found
    /// down), writes the tables and has OpenSM load them.
    pub fn adopt(&mut self, down: &[LinkId]) -> Result<(String, u32)> {
        let f = self.net.design().fabric.clone();
        if !down.is_empty() {
            self.routes.fail_links(&f, down);
            self.lft.recompute(&f, &self.routes);
        }
        self.reload()
    }

    /// The subnet.
    pub fn subnet(&mut self) -> &mut Subnet {
        &mut self.net
    }

    /// The subnet, read-only.
    pub fn net(&self) -> &Subnet {
        &self.net
    }

    /// The routes fabric holds (its view of which links are up).
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The tables fabric last wrote.
    pub fn tables(&self) -> &Lfts {
        &self.want
    }

    /// Discovers the cabling and returns the links whose state differs from fabric's
    /// view, with the ports found.
    pub fn detect(&self) -> Result<(Vec<LinkChange>, Vec<PortPeer>)> {
        let peers = self.net.discover()?;
        let live = self.net.live_links(&peers);
        let f = &self.net.design().fabric;
        let changes = (0..f.num_links() as u32)
            .map(LinkId)
            .filter(|&l| self.routes.link_is_up(l) != live.contains(&l))
            .map(|l| LinkChange {
                link: l,
                up: live.contains(&l),
            })
            .collect();
        Ok((changes, peers))
    }

    /// The cable changes at the switches with LIDs `lids` (those that sent a trap): each
    /// switch's ports read with one `iblinkinfo` over directed routes and compared with
    /// the links fabric holds up. `None` when that cannot tell — a LID that is not a
    /// switch, a switch that does not answer (its path crossed the cut cable), a path that
    /// reached another switch, a port cabled other than the design says — and
    /// [`Self::detect`] must run.
    pub fn detect_at(&self, lids: &[u16]) -> Result<Option<Vec<LinkChange>>> {
        let d = self.net.design();
        let f = &d.fabric;
        let paths = d.dr_paths(&self.routes);
        let mut changes: Vec<LinkChange> = Vec::new();
        for &lid in lids {
            let Some(s) = d.node_of_lid(lid).filter(|&n| !f.is_host(n)) else {
                return Ok(None);
            };
            let Some(path) = &paths[s.idx()] else {
                return Ok(None);
            };
            let Ok(text) = self
                .net
                .tools()
                .run("iblinkinfo", &["-D", path, "-n", "0", "-l"])
            else {
                return Ok(None);
            };
            // The path reached `s` itself (not another switch over a re-cabled port).
            let me = format!("0x{:016x} ", d.addr.node_guid(s));
            let lines = text.lines().filter(|l| l.contains("==("));
            if lines.clone().next().is_none() || !lines.clone().all(|l| l.starts_with(&me)) {
                return Ok(None);
            }
            let states = parse::link_states(&text)?;
            for st in states {
                let Some(l) = d.link_at(s, st.port) else {
                    continue; // a port the design leaves empty
                };
                if st.up == self.routes.link_is_up(l) {
                    continue;
                }
                if st.up {
                    let k = f.link(l);
                    let (peer, pport) = if k.a == s {
                        (k.b, k.b_port)
                    } else {
                        (k.a, k.a_port)
                    };
                    if st.peer != Some((d.lid(peer), crate::design::ib_port(pport))) {
                        return Ok(None); // cabled elsewhere: the full check names it
                    }
                }
                if !changes.iter().any(|c| c.link == l) {
                    changes.push(LinkChange { link: l, up: st.up });
                }
            }
        }
        Ok(Some(changes))
    }

    /// Re-routes around (or back over) `changes`, writes the tables and waits until
    /// OpenSM has loaded them into every switch.
    pub fn answer(&mut self, changes: &[LinkChange]) -> Result<Answer> {
        self.answer_after(changes, None)
    }

    /// [`Self::answer`] to changes a trap announced: `trap_end` is the offset in
    /// OpenSM's log just after the trap line. If the heavy sweep the trap started has
    /// not ended when the new dump is in place, that sweep may load it: it is awaited
    /// (and the new tables probed) before OpenSM is asked for another.
    pub fn answer_after(
        &mut self,
        changes: &[LinkChange],
        trap_end: Option<u64>,
    ) -> Result<Answer> {
        let f = self.net.design().fabric.clone();
        let t = Instant::now();
        let down: Vec<LinkId> = changes.iter().filter(|c| !c.up).map(|c| c.link).collect();
        let up: Vec<LinkId> = changes.iter().filter(|c| c.up).map(|c| c.link).collect();
        if !up.is_empty() {
            self.routes.restore_links(&f, &up);
            if !down.is_empty() {
                self.routes.fail_links(&f, &down);
            }
            self.lft.recompute(&f, &self.routes);
        } else if !down.is_empty() {
            let rep = self.routes.fail_links(&f, &down);
            self.lft.update(&f, &self.routes, &rep.changed);
        }
        let compute_us = t.elapsed().as_micros() as u64;
        let t = Instant::now();
        let dump = Dump::render(self.net.design(), &self.routes, &self.lft)?;
        dump.write(&self.net.lfts_path())?;
        let write_us = t.elapsed().as_micros() as u64;
        let changed = self.take_dump(dump)?;
        let d = self.net.design();
        let mut switches_changed: Vec<topo::NodeId> = changed
            .entries
            .iter()
            .filter_map(|e| d.node_of_guid(e.switch))
            .collect();
        switches_changed.dedup();
        let t = Instant::now();
        let (subnet_up, sweeps, hups) = self.load(&changed, trap_end)?;
        Ok(Answer {
            changes: changes.to_vec(),
            entries_changed: changed.entries.len(),
            switches_changed,
            compute_us,
            write_us,
            load_us: t.elapsed().as_micros() as u64,
            subnet_up,
            sweeps,
            hups,
        })
    }

    /// Makes `dump` the tables fabric holds; the entries that changed (only the
    /// switches whose block differs are parsed).
    fn take_dump(&mut self, dump: Dump) -> Result<LftDiff> {
        let new = dump.changed_tables(&self.dump)?;
        let old: Lfts = new
            .keys()
            .map(|g| (*g, self.want.get(g).cloned().unwrap_or_default()))
            .collect();
        let changed = tables::diff(&new, &old);
        self.want.extend(new);
        self.dump = dump;
        Ok(changed)
    }

    /// Waits for a sweep after which a switch holds the new value of one changed entry
    /// (any sweep when nothing changed): the one a trap started (`trap_end`) if it has
    /// not ended yet, else one asked for with `SIGHUP`, again until the entry is held.
    /// The `SUBNET UP` line, the sweeps waited for and the `SIGHUP`s sent.
    fn load(&mut self, changed: &LftDiff, trap_end: Option<u64>) -> Result<(String, u32, u32)> {
        let probe: Option<EntryDiff> = changed.entries.first().cloned();
        let sm = self
            .net
            .sm()
            .ok_or_else(|| Error::Fabric("no OpenSM running".into()))?;
        let mut offset = sm.log_end();
        let (mut asked, mut hups) = (true, 1);
        match trap_end {
            Some(from) => {
                let (lines, end) = sm.lines_from(from)?;
                if lines.iter().any(|l| opensm::is_subnet_up(l)) {
                    sm.hup()?;
                } else {
                    (offset, asked, hups) = (end, false, 0);
                }
            }
            None => sm.hup()?,
        }
        for sweep in 1..=MAX_SWEEPS {
            let sm = self.net.sm().expect("checked above");
            let waited = if asked {
                sm.wait_line(offset, SWEEP_TIMEOUT, opensm::is_subnet_up)
            } else {
                match sm.wait_line(offset, TRAP_SWEEP_WAIT, opensm::is_subnet_up) {
                    Err(Error::Timeout { .. }) => {
                        // No end in sight of the trap's sweep (or it had none): ask.
                        sm.hup()?;
                        hups += 1;
                        sm.wait_line(offset, SWEEP_TIMEOUT, opensm::is_subnet_up)
                    }
                    r => r,
                }
            };
            let (line, after) = waited?;
            offset = after;
            let Some(e) = &probe else {
                return Ok((line, sweep, hups));
            };
            let d = self.net.design();
            let s = d
                .node_of_guid(e.switch)
                .ok_or_else(|| Error::Fabric(format!("no switch 0x{:016x}", e.switch)))?;
            if self.net.read_entry(&self.routes, s, e.lid)? == e.want {
                return Ok((line, sweep, hups));
            }
            // That sweep read the old dump (it began before the rename): ask again.
            self.net.sm().expect("checked above").hup()?;
            (asked, hups) = (true, hups + 1);
        }
        Err(Error::Fabric(format!(
            "OpenSM did not load the new tables in {MAX_SWEEPS} sweeps"
        )))
    }

    /// Writes the tables again and has OpenSM load them (a switch whose table was
    /// changed behind fabric's back gets fabric's back).
    pub fn reload(&mut self) -> Result<(String, u32)> {
        let dump = Dump::render(self.net.design(), &self.routes, &self.lft)?;
        dump.write(&self.net.lfts_path())?;
        self.want = dump.tables()?;
        self.dump = dump;
        let (line, sweeps, _) = self.load(&LftDiff::default(), None)?;
        Ok((line, sweeps))
    }

    /// Reads every switch's table back and compares it with fabric's; also the
    /// `(switch, LID)` pairs a switch lacks although it reaches the LID.
    pub fn verify(&self) -> Result<(LftDiff, Vec<(topo::NodeId, u16)>)> {
        let got = self.net.read_lfts(&self.routes)?;
        let d = tables::diff(&self.want, &got);
        let unreached = tables::unreached(self.net.design(), &self.routes, &got);
        Ok((d, unreached))
    }
}

/// Waits for OpenSM's next trap-128 line after `offset`; the line, its LID, and the offset
/// after it.
pub fn wait_trap(net: &mut Subnet, offset: u64, timeout: Duration) -> Result<(String, u16, u64)> {
    let sm = net
        .sm()
        .ok_or_else(|| Error::Fabric("no OpenSM running".into()))?;
    let (line, after) = sm.wait_line(offset, timeout, |l| parse::trap128_lid(l).is_some())?;
    let lid = parse::trap128_lid(&line).unwrap_or(0);
    Ok((line, lid, after))
}
