//! A real OpenSM on the simulator: `opensm -s SWEEP -R ENGINE` with a private cache
//! (`OSM_CACHE_DIR`, holding the design's `guid2lid` so it keeps the design's LIDs),
//! dump directory (`OSM_TMP_DIR`) and log (flushed after every line, so the log can be
//! followed while it runs).
//!
//! OpenSM 3.3.23 facts this module relies on (measured, see docs/infiniband.md): a trap
//! 128 from a switch forces a heavy sweep within milliseconds; the `file` engine re-reads
//! its dump on every heavy sweep (a trap, or `SIGHUP`) and loads it unchecked; `ftree`
//! refuses a fat-tree with a failed link and falls back to `minhop`. Every routing pass
//! ends with `<engine> tables configured on all switches`, then `SUBNET UP` once every
//! switch has acknowledged its blocks.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::ibsim::Ibsim;
use crate::process::Child;
use crate::tables::{self, Lfts};
use crate::{Error, Result, io};

/// OpenSM's routing engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// `-R file -U DUMP`: load the tables in DUMP (fabric's) on every heavy sweep.
    File(PathBuf),
    /// Fat-tree routing (falls back to minhop on a fabric that is not a complete fat-tree).
    Ftree,
    /// Up*/down*.
    Updn,
    /// Min-hop (OpenSM's default).
    Minhop,
}

impl Engine {
    /// OpenSM's name for it.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::File(_) => "file",
            Engine::Ftree => "ftree",
            Engine::Updn => "updn",
            Engine::Minhop => "minhop",
        }
    }

    /// By name (`ftree`, `updn`, `minhop`; `file` needs a dump and is not parsed).
    pub fn parse(s: &str) -> Option<Engine> {
        Some(match s {
            "ftree" => Engine::Ftree,
            "updn" => Engine::Updn,
            "minhop" => Engine::Minhop,
            _ => return None,
        })
    }
}

/// How long the first sweep may take (k=24: a few seconds on a busy machine).
pub const FIRST_SWEEP: Duration = Duration::from_secs(180);

/// A running OpenSM.
#[derive(Debug)]
pub struct OpenSm {
    child: Child,
    engine: Engine,
    log: PathBuf,
    tmp: PathBuf,
}

/// Options of [`OpenSm::start`].
#[derive(Debug, Clone)]
pub struct SmOptions {
    /// Seconds between light sweeps (`-s`).
    pub sweep_s: u32,
    /// Write OpenSM's own dumps (`opensm-lfts.dump`, …) after every routing pass
    /// (`-D 0x43`); off, the log level is `0x03` and routing is not slowed by the dumps.
    pub dumps: bool,
}

impl Default for SmOptions {
    fn default() -> Self {
        SmOptions {
            sweep_s: 1,
            dumps: false,
        }
    }
}

impl OpenSm {
    /// Starts OpenSM with `engine` on `sim`, its files under `dir` (created), the design's
    /// LIDs from `guid2lid`; waits for the first `SUBNET UP`.
    pub fn start(
        sim: &Ibsim,
        dir: &Path,
        engine: Engine,
        guid2lid: &Path,
        opt: &SmOptions,
    ) -> Result<OpenSm> {
        let (cache, tmp) = (dir.join("cache"), dir.join("tmp"));
        for d in [&cache, &tmp] {
            fs::create_dir_all(d).map_err(io(d.display().to_string()))?;
        }
        fs::copy(guid2lid, cache.join("guid2lid")).map_err(io("copying guid2lid"))?;
        let conf = dir.join("opensm.conf");
        fs::write(&conf, "force_log_flush TRUE\n").map_err(io(conf.display().to_string()))?;
        let log = dir.join("opensm.log");
        let mut cmd = sim.command("opensm");
        cmd.arg("-F")
            .arg(&conf)
            .args(["-s", &opt.sweep_s.to_string(), "-R", engine.name()]);
        if let Engine::File(dump) = &engine {
            cmd.arg("-U").arg(dump);
        }
        cmd.arg("-f")
            .arg(&log)
            .args(["-D", if opt.dumps { "0x43" } else { "0x03" }])
            .env("OSM_CACHE_DIR", &cache)
            .env("OSM_TMP_DIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = Child::spawn(&mut cmd, "opensm")?;
        let mut sm = OpenSm {
            child,
            engine,
            log,
            tmp,
        };
        sm.wait_line(0, FIRST_SWEEP, |l| l.contains("SUBNET UP"))?;
        Ok(sm)
    }

    /// The routing engine it was started with.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Forces a heavy sweep (`SIGHUP`): the `file` engine re-reads its dump.
    pub fn hup(&self) -> Result<()> {
        self.child.signal(libc::SIGHUP)
    }

    /// The log's length now: lines after it are new.
    pub fn log_end(&self) -> u64 {
        fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    /// The log's complete lines from `offset` on, and the offset after them.
    pub fn lines_from(&self, offset: u64) -> Result<(Vec<String>, u64)> {
        let mut f = match fs::File::open(&self.log) {
            Ok(f) => f,
            // Not created yet: OpenSM is starting.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), offset)),
            Err(e) => return Err(io(self.log.display().to_string())(e)),
        };
        f.seek(SeekFrom::Start(offset))
            .map_err(io(self.log.display().to_string()))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)
            .map_err(io(self.log.display().to_string()))?;
        let complete = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let text = String::from_utf8_lossy(&buf[..complete]);
        Ok((
            text.lines().map(str::to_string).collect(),
            offset + complete as u64,
        ))
    }

    /// Waits for the first line after `offset` that `pred` accepts; the line and the
    /// offset just after it. Fails if OpenSM exits or nothing comes within `timeout`.
    pub fn wait_line(
        &mut self,
        mut offset: u64,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<(String, u64)> {
        let t0 = Instant::now();
        loop {
            let (lines, _) = self.lines_from(offset)?;
            for l in lines {
                offset += l.len() as u64 + 1;
                if pred(&l) {
                    return Ok((l, offset));
                }
            }
            if let Some(st) = self.child.exited() {
                return Err(Error::Tool {
                    cmd: format!("opensm -R {}", self.engine.name()),
                    stderr: format!("exited ({st}); see {}", self.log.display()),
                });
            }
            if t0.elapsed() > timeout {
                return Err(Error::Timeout {
                    what: format!("opensm -R {}", self.engine.name()),
                    secs: t0.elapsed().as_secs_f64(),
                    log: self.log.clone(),
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until the log has been quiet for `quiet` (sweeps that traps queued are over);
    /// gives up silently after `timeout`.
    pub fn settle(&self, quiet: Duration, timeout: Duration) {
        let t0 = Instant::now();
        let (mut len, mut since) = (self.log_end(), Instant::now());
        while since.elapsed() < quiet && t0.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(50));
            let now = self.log_end();
            if now != len {
                (len, since) = (now, Instant::now());
            }
        }
    }

    /// The tables OpenSM programmed in its last routing pass (`opensm-lfts.dump`; needs
    /// [`SmOptions::dumps`]).
    pub fn programmed(&self) -> Result<Lfts> {
        let p = self.tmp.join("opensm-lfts.dump");
        let text = fs::read_to_string(&p).map_err(io(p.display().to_string()))?;
        tables::parse(&text, "opensm-lfts.dump")
    }
}

/// True for the line that ends a routing pass.
pub fn is_configured(line: &str) -> bool {
    line.contains("tables configured on all switches")
}

/// True for the line that ends a sweep.
pub fn is_subnet_up(line: &str) -> bool {
    line.contains("SUBNET UP")
}
