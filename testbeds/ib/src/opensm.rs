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
//!
//! [`OpenSm::attach`] follows an OpenSM someone else runs (its pid and log): the same
//! log reading and `SIGHUP`, and nothing else — it is never stopped, restarted or
//! reconfigured, and dropping the value leaves it running.

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

/// A running OpenSM: ours (stopped on drop) or attached (left running).
#[derive(Debug)]
pub struct OpenSm {
    /// `None` when attached.
    child: Option<Child>,
    pid: u32,
    engine: Engine,
    log: PathBuf,
    /// Its dump directory (`OSM_TMP_DIR`), when ours.
    tmp: Option<PathBuf>,
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
            pid: child.pid(),
            child: Some(child),
            engine,
            log,
            tmp: Some(tmp),
        };
        sm.wait_line(0, FIRST_SWEEP, |l| l.contains("SUBNET UP"))?;
        Ok(sm)
    }

    /// Follows the OpenSM with process id `pid` that logs to `log` and loads `lfts`
    /// (`routing_engine file`); an error when `pid` is not an OpenSM, when its command
    /// line names another LFT file, or when the log cannot be read.
    pub fn attach(pid: u32, log: &Path, lfts: &Path) -> Result<OpenSm> {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm"))
            .map_err(|e| Error::Fabric(format!("OpenSM pid {pid}: no such process ({e})")))?;
        if comm.trim() != "opensm" {
            return Err(Error::Fabric(format!(
                "pid {pid} is {:?}, not opensm",
                comm.trim()
            )));
        }
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let cwd = fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
        if let Some(named) = lfts_arg(&args)
            && !same_file(&cwd.join(&named), lfts)
        {
            return Err(Error::Fabric(format!(
                "OpenSM pid {pid} loads the LFT file {named}, not {} (its -U / --lfts_file)",
                lfts.display()
            )));
        }
        fs::File::open(log).map_err(io(format!("OpenSM's log {}", log.display())))?;
        Ok(OpenSm {
            child: None,
            pid,
            engine: Engine::File(lfts.to_path_buf()),
            log: log.to_path_buf(),
            tmp: None,
        })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True when this process started it (it is stopped on drop).
    pub fn owned(&self) -> bool {
        self.child.is_some()
    }

    /// `Some(reason)` when it is no longer running.
    pub fn gone(&mut self) -> Option<String> {
        match &mut self.child {
            Some(c) => c.exited().map(|st| format!("exited ({st})")),
            None => {
                let stat = fs::read_to_string(format!("/proc/{}/stat", self.pid));
                // Field 3 is the state; Z: a zombie its parent has not reaped.
                match stat {
                    Ok(s)
                        if s.rsplit(')')
                            .next()
                            .is_some_and(|r| r.trim_start().starts_with('Z')) =>
                    {
                        Some("exited (zombie)".into())
                    }
                    Ok(_) => None,
                    Err(_) => Some("exited".into()),
                }
            }
        }
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
        match &self.child {
            Some(c) => c.signal(libc::SIGHUP),
            // SAFETY: kill(2) with a pid checked to be an opensm at attach time.
            None if unsafe { libc::kill(self.pid as i32, libc::SIGHUP) } == 0 => Ok(()),
            None => Err(io(format!("signalling OpenSM pid {}", self.pid))(
                std::io::Error::last_os_error(),
            )),
        }
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
            if let Some(why) = self.gone() {
                return Err(Error::Tool {
                    cmd: format!("opensm -R {}", self.engine.name()),
                    stderr: format!("{why}; see {}", self.log.display()),
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
        let tmp = self.tmp.as_ref().ok_or_else(|| {
            Error::Fabric("an attached OpenSM's dump directory is not known".into())
        })?;
        let p = tmp.join("opensm-lfts.dump");
        let text = fs::read_to_string(&p).map_err(io(p.display().to_string()))?;
        tables::parse(&text, "opensm-lfts.dump")
    }
}

/// The LFT file named on an OpenSM command line (`-U F`, `--lfts_file F`, `--lfts_file=F`).
fn lfts_arg(args: &[String]) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-U" || a == "--lfts_file" {
            return it.next().cloned();
        }
        if let Some(v) = a.strip_prefix("--lfts_file=") {
            return Some(v.to_string());
        }
    }
    None
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lft_file_on_an_opensm_command_line() {
        let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            lfts_arg(&v("opensm -s 1 -R file -U /x/lfts.dump -f log")).as_deref(),
            Some("/x/lfts.dump")
        );
        assert_eq!(lfts_arg(&v("opensm --lfts_file=/y")).as_deref(), Some("/y"));
        assert_eq!(lfts_arg(&v("opensm --lfts_file /z")).as_deref(), Some("/z"));
        assert_eq!(lfts_arg(&v("opensm -R ftree")), None);
    }

    #[test]
    fn attaching_to_what_is_not_an_opensm_is_refused() {
        let e = OpenSm::attach(
            std::process::id(),
            Path::new("/nonexistent"),
            Path::new("/x"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not opensm"), "{e}");
        let e = OpenSm::attach(u32::MAX - 1, Path::new("/x"), Path::new("/x")).unwrap_err();
        assert!(e.to_string().contains("no such process"), "{e}");
    }
}
