//! A subnet in a private directory: ibsim on the design's `.net`, at most one OpenSM,
//! and the tools that read it back. Everything stops, and the directory goes, on drop.
//!
//! Or a subnet someone else runs ([`Subnet::attach`]): the tools reach it through its
//! umad port, the OpenSM there is followed (its log, `SIGHUP`) and never stopped, and
//! fabric's only write is the LFT file that OpenSM's `file` engine reads.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use topo::lft::Lft;
use topo::{Fabric, LinkId, NodeId, Routes};

use crate::design::Design;
use crate::dump::Dump;
use crate::ibsim::Ibsim;
use crate::opensm::{Engine, OpenSm, SmOptions};
use crate::parse::{self, PortPeer};
use crate::tables::{self, Lfts};
use crate::tools::{Tools, UmadPort};
use crate::{Error, Result, io};

/// Subnets started by this process (names stay unique within a run).
static STARTED: AtomicU64 = AtomicU64::new(0);

/// What [`Subnet::attach`] needs of a running subnet and its OpenSM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    /// The umad port the tools use.
    pub port: UmadPort,
    /// OpenSM's process id (it gets `SIGHUP` to re-sweep).
    pub sm_pid: u32,
    /// OpenSM's log (`-f`), followed for traps and sweeps; `force_log_flush TRUE` in its
    /// configuration, or lines arrive late.
    pub sm_log: PathBuf,
    /// The file OpenSM's `file` engine loads (`-U`, `lfts_file`): fabric writes it.
    pub lfts: PathBuf,
}

/// ibsim, OpenSM and the files they read.
#[derive(Debug)]
pub struct Subnet {
    design: Design,
    dir: PathBuf,
    lfts: PathBuf,
    // Field order is drop order: OpenSM before the simulator it talks to.
    sm: Option<OpenSm>,
    sms_started: u32,
    sim: Ibsim,
}

impl Subnet {
    /// Writes the design's `.net` and `guid2lid` into a new directory
    /// (`$TMPDIR/fabric-ib-PID-N-TAG`) and starts ibsim on it (socket named the same way).
    pub fn start(f: Arc<Fabric>, tag: &str) -> Result<Subnet> {
        let design = Design::new(f)?;
        let (name, dir) = private_dir(tag)?;
        let started = (|| {
            write_file(&dir.join("fabric.net"), |w| design.write_net(w))?;
            write_file(&dir.join("guid2lid"), |w| design.write_guid2lid(w))?;
            Ibsim::start(&dir, &dir.join("fabric.net"), &name)
        })();
        match started {
            Ok(sim) => Ok(Subnet {
                design,
                lfts: dir.join("lfts.dump"),
                dir,
                sm: None,
                sms_started: 0,
                sim,
            }),
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    /// Attaches to a running subnet of `f` and its OpenSM (`a`); starts nothing. The
    /// tools' node is found by its LID (`ibaddr`); the private directory holds only the
    /// tools' scratch files.
    pub fn attach(f: Arc<Fabric>, a: &Attach) -> Result<Subnet> {
        let mut design = Design::new(f)?;
        let sm = OpenSm::attach(a.sm_pid, &a.sm_log, &a.lfts)?;
        let (_, dir) = private_dir("attach")?;
        let sim = Ibsim::attached(Tools::new(a.port.clone(), &dir));
        let found = sim
            .tool("ibaddr", &[])
            .and_then(|t| parse::ibaddr_lid(&t))
            .and_then(|lid| design.set_origin(lid));
        if let Err(e) = found {
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(Subnet {
            design,
            dir,
            lfts: a.lfts.clone(),
            sm: Some(sm),
            sms_started: 0,
            sim,
        })
    }

    /// True when this process started the subnet (ibsim and OpenSM stop on drop); false
    /// when attached (nothing is stopped).
    pub fn owned(&self) -> bool {
        self.sim.owned()
    }

    /// The design.
    pub fn design(&self) -> &Design {
        &self.design
    }

    /// The directory holding the files and logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The simulator.
    pub fn sim(&mut self) -> &mut Ibsim {
        &mut self.sim
    }

    /// The running OpenSM.
    pub fn sm(&mut self) -> Option<&mut OpenSm> {
        self.sm.as_mut()
    }

    /// Where fabric's tables for the `file` engine are written.
    pub fn lfts_path(&self) -> PathBuf {
        self.lfts.clone()
    }

    /// Stops the running OpenSM (if any) and starts one with `engine`, in its own cache
    /// and dump directories; waits for its first `SUBNET UP`.
    pub fn start_sm(&mut self, engine: Engine, opt: &SmOptions) -> Result<&mut OpenSm> {
        if !self.owned() {
            return Err(Error::Fabric(
                "attached: the OpenSM of this subnet is not fabric's to restart".into(),
            ));
        }
        self.sm = None;
        self.sms_started += 1;
        let dir = self
            .dir
            .join(format!("sm{}-{}", self.sms_started, engine.name()));
        let sm = OpenSm::start(&self.sim, &dir, engine, &self.dir.join("guid2lid"), opt)?;
        Ok(self.sm.insert(sm))
    }

    /// Writes fabric's tables for the `file` engine (to a new file renamed into place,
    /// so OpenSM never reads half of it); the tables as written.
    pub fn write_tables(&self, routes: &Routes, lft: &Lft) -> Result<Lfts> {
        let dump = Dump::render(&self.design, routes, lft)?;
        dump.write(&self.lfts)?;
        dump.tables()
    }

    /// The tools' way to the subnet.
    pub fn tools(&self) -> &Tools {
        self.sim.tools()
    }

    /// Cuts link `l` on ibsim's console (at its switch end).
    pub fn unlink(&mut self, l: LinkId) -> Result<()> {
        let (n, p) = self.design.switch_end(l)?;
        let name = self.design.ib_name(n);
        self.sim.unlink(&name, p)
    }

    /// Restores link `l` on ibsim's console.
    pub fn relink(&mut self, l: LinkId) -> Result<()> {
        let (n, p) = self.design.switch_end(l)?;
        let name = self.design.ib_name(n);
        self.sim.relink(&name, p)
    }

    /// Every connected port, as `ibnetdiscover` finds them.
    pub fn discover(&self) -> Result<Vec<PortPeer>> {
        parse::cables(&self.sim.tool("ibnetdiscover", &[])?)
    }

    /// Every connected port and every node's LID, from one `ibnetdiscover`.
    pub fn discover_with_lids(&self) -> Result<(Vec<PortPeer>, BTreeMap<String, u16>)> {
        let text = self.sim.tool("ibnetdiscover", &[])?;
        Ok((parse::cables(&text)?, parse::node_lids(&text)?))
    }

    /// The design's nodes that `found` (node → LID, from [`Self::discover_with_lids`])
    /// holds with another LID than the design export assigns, one line each.
    pub fn lid_mismatches(&self, found: &BTreeMap<String, u16>) -> Vec<String> {
        let d = &self.design;
        let mut out = Vec::new();
        for (name, &lid) in found {
            let Some(n) = d.node_of_ib_name(name) else {
                continue; // a node the design lacks: the cabling check names it
            };
            if d.lid(n) != lid {
                out.push(format!(
                    "{} ({name}): the design export assigns LID {}, the running subnet has {lid}",
                    d.fabric.node_name(n),
                    d.lid(n)
                ));
            }
        }
        out
    }

    /// The design's links that `peers` shows cabled as designed (both ends agree).
    pub fn live_links(&self, peers: &[PortPeer]) -> BTreeSet<LinkId> {
        let d = &self.design;
        let mut out = BTreeSet::new();
        for p in peers {
            let (Some(a), Some(b)) = (d.node_of_ib_name(&p.node), d.node_of_ib_name(&p.peer))
            else {
                continue;
            };
            let (Some(la), Some(lb)) = (d.link_at(a, p.port), d.link_at(b, p.peer_port)) else {
                continue;
            };
            if la == lb {
                out.insert(la);
            }
        }
        out
    }

    /// Reads every switch's forwarding table with `ibroute`, over directed routes on the
    /// links `routes` holds up (so a switch is read whatever the tables hold); switches
    /// cut off from the SM's node are left out.
    pub fn read_lfts(&self, routes: &Routes) -> Result<Lfts> {
        let paths = self.design.dr_paths(routes);
        let mut out = Lfts::new();
        for s in self.design.fabric.switches() {
            if let Some(p) = &paths[s.idx()] {
                let text = self.sim.tool("ibroute", &["-n", "-D", p])?;
                out.extend(tables::parse(&text, "ibroute")?);
            }
        }
        Ok(out)
    }

    /// Reads `lid`'s entry of switch `s` alone (one `ibroute` block); `None` when it
    /// holds none or is cut off.
    pub fn read_entry(&self, routes: &Routes, s: NodeId, lid: u16) -> Result<Option<u8>> {
        let paths = self.design.dr_paths(routes);
        let Some(p) = &paths[s.idx()] else {
            return Ok(None);
        };
        let l = lid.to_string();
        let text = self.sim.tool("ibroute", &["-n", "-D", p, &l, &l])?;
        let t = tables::parse(&text, "ibroute")?;
        Ok(t.values().next().and_then(|e| e.get(&lid).copied()))
    }

    /// Extended counters (`perfquery -x -l`) of every port of node `n`, by IB port.
    pub fn node_counters(
        &self,
        n: NodeId,
    ) -> Result<std::collections::BTreeMap<u8, std::collections::BTreeMap<String, u64>>> {
        let f = &self.design.fabric;
        let lid = self.design.lid(n);
        if lid == 0 || f.degree(n) == 0 {
            return Err(Error::Fabric(format!("{} has no LID", f.node_name(n))));
        }
        let ports = format!("1-{}", f.degree(n));
        parse::counters_by_port(
            &self
                .sim
                .tool("perfquery", &["-x", "-l", &lid.to_string(), &ports])?,
        )
    }

    /// Port counters of `n`'s IB `port` (`perfquery`, LID-routed through the SM's tables).
    pub fn counters(&self, n: NodeId, port: u8) -> Result<std::collections::BTreeMap<String, u64>> {
        let lid = self.design.lid(n);
        if lid == 0 {
            return Err(Error::Fabric(format!(
                "{} has no LID",
                self.design.fabric.node_name(n)
            )));
        }
        parse::counters(
            &self
                .sim
                .tool("perfquery", &[&lid.to_string(), &port.to_string()])?,
        )
    }
}

/// A new private directory `$TMPDIR/fabric-ib-PID-N-TAG` and its name.
fn private_dir(tag: &str) -> Result<(String, PathBuf)> {
    let n = STARTED.fetch_add(1, Ordering::Relaxed);
    let name = format!("fabric-ib-{}-{n}-{tag}", std::process::id());
    let dir = std::env::temp_dir().join(&name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(io(dir.display().to_string()))?;
    Ok((name, dir))
}

impl Drop for Subnet {
    fn drop(&mut self) {
        self.sm = None;
        if std::env::var_os("FABRIC_KEEP_IB").is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn write_file(
    path: &Path,
    body: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    let f = fs::File::create(path).map_err(io(path.display().to_string()))?;
    let mut w = std::io::BufWriter::new(f);
    body(&mut w)?;
    w.flush().map_err(io(path.display().to_string()))
}
