//! The simulator: `ibsim -s NET` with its console on a pipe, and the IB tools run
//! against it (`LD_PRELOAD=libumad2sim.so`, `IBSIM_SOCKNAME`).
//!
//! Console commands (ibsim 0.10, `sim_cmd.c`): `Unlink "NODE"[PORT]` cuts a cable and
//! makes the switch send trap 128 to the SM, `ReLink "NODE"[PORT]` restores it,
//! `Error "NODE"[PORT] RATE` drops MADs at that rate and raises the port's receive-error
//! counter, `PerformanceSet "NODE"[PORT] PortCounters.NAME=VALUE` sets a counter.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::Child;
use crate::tools::{Tools, UmadPort};
use crate::{Error, Result, io};

/// How long ibsim may take to build its fabric (k=24: a few seconds; k=48 longer).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running ibsim (ours, with its console), or an attached subnet (no console).
#[derive(Debug)]
pub struct Ibsim {
    child: Option<Child>,
    tools: Tools,
    log: PathBuf,
}

impl Ibsim {
    /// Starts ibsim on `net` in `dir` (its logs and the tools' scratch files go there) on
    /// socket `sock`; waits until it is ready and fails if it complained about the file.
    pub fn start(dir: &Path, net: &Path, sock: &str) -> Result<Ibsim> {
        let log = dir.join("ibsim.log");
        let err = dir.join("ibsim.err");
        let mut cmd = Command::new("ibsim");
        cmd.args(["-s", "-N", "65536", "-S", "8192", "-P", "524288"])
            .arg(net)
            .env("IBSIM_SOCKNAME", sock)
            .stdin(Stdio::piped())
            .stdout(fs::File::create(&log).map_err(io(log.display().to_string()))?)
            .stderr(fs::File::create(&err).map_err(io(err.display().to_string()))?)
            .current_dir(dir);
        let mut child = Child::spawn(&mut cmd, "ibsim")?;
        let t0 = Instant::now();
        loop {
            let text = fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Network simulator ready") {
                break;
            }
            if child.exited().is_some() || t0.elapsed() > START_TIMEOUT {
                let e = fs::read_to_string(&err).unwrap_or_default();
                return Err(Error::Timeout {
                    what: format!("ibsim did not start ({})", e.trim()),
                    secs: t0.elapsed().as_secs_f64(),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let e = fs::read_to_string(&err).unwrap_or_default();
        if e.contains("ibpanic") || e.contains("ibwarn") {
            return Err(Error::Tool {
                cmd: format!("ibsim {}", net.display()),
                stderr: e,
            });
        }
        Ok(Ibsim {
            child: Some(child),
            tools: Tools::new(
                UmadPort::Sim {
                    sock: sock.to_string(),
                },
                dir,
            ),
            log,
        })
    }

    /// A subnet this process did not start, reached by `tools`: no console, and nothing
    /// to stop on drop.
    pub fn attached(tools: Tools) -> Ibsim {
        Ibsim {
            child: None,
            tools,
            log: PathBuf::new(),
        }
    }

    /// The tools' way to the subnet.
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// True while the simulator this process started runs (false when attached).
    pub fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.exited().is_none())
    }

    /// True when this process started the simulator (it has a console).
    pub fn owned(&self) -> bool {
        self.child.is_some()
    }

    /// Sends one console command.
    pub fn console(&mut self, line: &str) -> Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Err(Error::Tool {
                cmd: line.to_string(),
                stderr: "attached to a subnet this process did not start: no ibsim console".into(),
            });
        };
        if child.exited().is_some() {
            return Err(Error::Tool {
                cmd: line.to_string(),
                stderr: format!("ibsim has exited; see {}", self.log.display()),
            });
        }
        let stdin = child.stdin().ok_or_else(|| Error::Tool {
            cmd: line.to_string(),
            stderr: "ibsim's console is not connected".into(),
        })?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(io(format!("ibsim console: {line}")))
    }

    /// Cuts the cable at `node`'s `port` (ibsim name).
    pub fn unlink(&mut self, node: &str, port: u8) -> Result<()> {
        self.console(&format!("Unlink \"{node}\"[{port}]"))
    }

    /// Restores the cable at `node`'s `port`.
    pub fn relink(&mut self, node: &str, port: u8) -> Result<()> {
        self.console(&format!("ReLink \"{node}\"[{port}]"))
    }

    /// Makes `node`'s `port` drop MADs at `rate` (0–100, 0 clears it).
    pub fn set_error(&mut self, node: &str, port: u8, rate: u8) -> Result<()> {
        self.console(&format!("Error \"{node}\"[{port}] {rate}"))
    }

    /// Sets a port counter (`SymbolErrorCounter`, `PortRcvErrors`, …) of `node`'s `port`.
    pub fn set_counter(&mut self, node: &str, port: u8, counter: &str, value: u64) -> Result<()> {
        self.console(&format!(
            "PerformanceSet \"{node}\"[{port}] PortCounters.{counter}={value}"
        ))
    }

    /// A command for an IB program that talks to this simulator.
    pub fn command(&self, program: &str) -> Command {
        self.tools.command(program)
    }

    /// Runs an infiniband-diags tool against the simulator; its standard output.
    pub fn tool(&self, program: &str, args: &[&str]) -> Result<String> {
        self.tools.run(program, args)
    }
}
