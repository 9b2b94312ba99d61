//! ibsim on a private socket, and OpenSM's LFT dump format read back: the start-up that
//! topo's export tests (`tests/export_tools.rs`) and `examples/opensm_balance.rs` share
//! (the example includes this file with `#[path]`). The `ib-testbed` crate runs whole
//! subnets, but topo is a pure core and cannot depend on a driver (DESIGN.md), so the few
//! lines both need live here.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The preload library that connects the IB tools to ibsim (Debian `libumad2sim0`).
pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// How long ibsim may take to build a fabric (k=24 takes seconds, k=48 longer).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running ibsim on socket `sock`, killed on drop.
pub struct Ibsim {
    child: Child,
    sock: String,
    dir: PathBuf,
}

impl Ibsim {
    /// Starts ibsim on `net` (its logs in `dir`, node tables sized for k=48 fat-trees),
    /// waits until it is ready, and fails if it warned about the file.
    pub fn start(dir: &Path, net: &Path, sock: &str) -> Result<Ibsim, String> {
        let log = dir.join("ibsim.log");
        let err = dir.join("ibsim.err");
        let file = |p: &Path| fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
        let child = Command::new("ibsim")
            .args(["-s", "-n", "-N", "65536", "-S", "4096", "-P", "262144"])
            .arg(net)
            .env("IBSIM_SOCKNAME", sock)
            .stdin(Stdio::null())
            .stdout(file(&log)?)
            .stderr(file(&err)?)
            .current_dir(dir)
            .spawn()
            .map_err(|e| format!("ibsim: {e} (install ibsim-utils)"))?;
        let sim = Ibsim {
            child,
            sock: sock.to_string(),
            dir: dir.to_path_buf(),
        };
        let t0 = Instant::now();
        while !fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("Network simulator ready")
        {
            if t0.elapsed() > START_TIMEOUT {
                return Err(format!("ibsim did not start; see {}", log.display()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let warned = fs::read_to_string(&err).unwrap_or_default();
        if warned.contains("ibwarn") || warned.contains("ibpanic") {
            return Err(format!(
                "ibsim complained about {}:\n{warned}",
                net.display()
            ));
        }
        Ok(sim)
    }

    /// `cmd` set up to reach the simulator (`LD_PRELOAD`, `IBSIM_SOCKNAME`), run in its
    /// directory with no standard input.
    pub fn command(&self, cmd: &str) -> Command {
        let mut c = Command::new(cmd);
        c.env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sock)
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        c
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The LFT blocks of an OpenSM or `ibroute` dump (topo's own reader), `what` naming the
/// source in errors.
pub fn parse_lft_dump(text: &str, what: &str) -> Result<BTreeMap<u64, BTreeMap<u16, u8>>, String> {
    topo::export::opensm::parse_lft_dump(text).map_err(|e| format!("{what} {e}"))
}
