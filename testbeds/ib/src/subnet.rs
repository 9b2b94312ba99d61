//! A subnet in a private directory: ibsim on the design's `.net`, at most one OpenSM,
//! and the tools that read it back. Everything stops, and the directory goes, on drop.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use topo::lft::Lft;
use topo::{Fabric, LinkId, NodeId, Routes};

use crate::design::Design;
use crate::ibsim::Ibsim;
use crate::opensm::{Engine, OpenSm, SmOptions};
use crate::parse::{self, PortPeer};
use crate::tables::{self, Lfts};
use crate::{Error, Result, io};

/// Subnets started by this process (names stay unique within a run).
static STARTED: AtomicU64 = AtomicU64::new(0);

/// ibsim, OpenSM and the files they read.
#[derive(Debug)]
pub struct Subnet {
    design: Design,
    dir: PathBuf,
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
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let name = format!("fabric-ib-{}-{n}-{tag}", std::process::id());
        let dir = std::env::temp_dir().join(&name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(io(dir.display().to_string()))?;
        let started = (|| {
            write_file(&dir.join("fabric.net"), |w| design.write_net(w))?;
            write_file(&dir.join("guid2lid"), |w| design.write_guid2lid(w))?;
            Ibsim::start(&dir, &dir.join("fabric.net"), &name)
        })();
        match started {
            Ok(sim) => Ok(Subnet {
                design,
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
        self.dir.join("lfts.dump")
    }

    /// Stops the running OpenSM (if any) and starts one with `engine`, in its own cache
    /// and dump directories; waits for its first `SUBNET UP`.
    pub fn start_sm(&mut self, engine: Engine, opt: &SmOptions) -> Result<&mut OpenSm> {
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
        let path = self.lfts_path();
        let new = self.dir.join("lfts.dump.new");
        let mut text = Vec::new();
        self.design.write_lfts(&mut text, routes, lft)?;
        fs::write(&new, &text).map_err(io(new.display().to_string()))?;
        fs::rename(&new, &path).map_err(io(path.display().to_string()))?;
        tables::parse(&String::from_utf8_lossy(&text), "lfts.dump")
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
