//! fabric as OpenSM's brain: OpenSM runs the `file` routing engine on tables fabric
//! computes; when a cable fails or returns, fabric finds which one (`ibnetdiscover`
//! against the links it believes up), re-routes incrementally
//! ([`topo::Routes::fail_links`], [`Lft::update`]), writes the new dump and has OpenSM
//! load it (`SIGHUP` forces the heavy sweep that re-reads it). A sweep that a trap started
//! before the new dump was written loads the old one: after each `SUBNET UP` one changed
//! entry is read back from its switch, and OpenSM is signalled again until it holds the
//! new value.

use std::sync::Arc;
use std::time::{Duration, Instant};

use topo::lft::Lft;
use topo::{Fabric, LinkId, Routes};

use crate::opensm::{self, Engine, SmOptions};
use crate::parse::{self, PortPeer};
use crate::subnet::Subnet;
use crate::tables::{self, EntryDiff, LftDiff, Lfts};
use crate::{Error, Result};

/// Sweeps waited for before giving up on OpenSM loading new tables.
const MAX_SWEEPS: u32 = 8;
/// How long one sweep may take (k=24 on a loaded machine: several seconds).
const SWEEP_TIMEOUT: Duration = Duration::from_secs(120);

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
}

/// OpenSM on ibsim, routed by fabric.
#[derive(Debug)]
pub struct Brain {
    net: Subnet,
    routes: Routes,
    lft: Lft,
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
        let want = net.write_tables(&routes, &lft)?;
        let path = net.lfts_path();
        net.start_sm(Engine::File(path), &SmOptions::default())?;
        Ok(Brain {
            net,
            routes,
            lft,
            want,
        })
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

    /// Re-routes around (or back over) `changes`, writes the tables and waits until
    /// OpenSM has loaded them into every switch.
    pub fn answer(&mut self, changes: &[LinkChange]) -> Result<Answer> {
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
        let new = self.net.write_tables(&self.routes, &self.lft)?;
        let write_us = t.elapsed().as_micros() as u64;
        let changed = tables::diff(&new, &self.want);
        self.want = new;
        let d = self.net.design();
        let mut switches_changed: Vec<topo::NodeId> = changed
            .entries
            .iter()
            .filter_map(|e| d.node_of_guid(e.switch))
            .collect();
        switches_changed.dedup();
        let t = Instant::now();
        let (subnet_up, sweeps) = self.load(&changed)?;
        Ok(Answer {
            changes: changes.to_vec(),
            entries_changed: changed.entries.len(),
            switches_changed,
            compute_us,
            write_us,
            load_us: t.elapsed().as_micros() as u64,
            subnet_up,
            sweeps,
        })
    }

    /// Signals OpenSM and waits for a sweep after which a switch holds the new value of
    /// one changed entry (any sweep when nothing changed).
    fn load(&mut self, changed: &LftDiff) -> Result<(String, u32)> {
        let probe: Option<EntryDiff> = changed.entries.first().cloned();
        let sm = self
            .net
            .sm()
            .ok_or_else(|| Error::Fabric("no OpenSM running".into()))?;
        let mut offset = sm.log_end();
        sm.hup()?;
        for sweep in 1..=MAX_SWEEPS {
            let sm = self.net.sm().expect("checked above");
            let (line, after) = sm.wait_line(offset, SWEEP_TIMEOUT, opensm::is_subnet_up)?;
            offset = after;
            let Some(e) = &probe else {
                return Ok((line, sweep));
            };
            let d = self.net.design();
            let s = d
                .node_of_guid(e.switch)
                .ok_or_else(|| Error::Fabric(format!("no switch 0x{:016x}", e.switch)))?;
            if self.net.read_entry(&self.routes, s, e.lid)? == e.want {
                return Ok((line, sweep));
            }
            // That sweep read the old dump (it began before the rename): ask again.
            self.net.sm().expect("checked above").hup()?;
        }
        Err(Error::Fabric(format!(
            "OpenSM did not load the new tables in {MAX_SWEEPS} sweeps"
        )))
    }

    /// Writes the tables again and has OpenSM load them (a switch whose table was
    /// changed behind fabric's back gets fabric's back).
    pub fn reload(&mut self) -> Result<(String, u32)> {
        self.want = self.net.write_tables(&self.routes, &self.lft)?;
        self.load(&LftDiff::default())
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
