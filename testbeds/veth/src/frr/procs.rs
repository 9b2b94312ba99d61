//! The daemons a testbed starts (FRR, lldpd, node_exporter, Prometheus): each one a
//! child process run in the foreground (never daemonized), so its pid is known from the
//! start and [`Daemons`] stops every one of them — SIGTERM, then SIGKILL after a grace
//! period — on drop, panic and teardown. A child also gets `PR_SET_PDEATHSIG` (SIGTERM),
//! so it dies with the test even when the test is killed by SIGKILL (FRR's daemons drop
//! that setting when they switch to user `frr`; the drop path covers them).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::netns::Netns;
use crate::{Error, Result};

/// How long a daemon has to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// One started daemon.
#[derive(Debug)]
struct Daemon {
    /// What it is, for messages (`zebra@fab-…-s3`).
    label: String,
    child: Child,
}

/// Every daemon a run started, stopped in reverse order on drop.
#[derive(Debug, Default)]
pub struct Daemons {
    list: Vec<Daemon>,
}

impl Daemons {
    /// Starts `program args…` inside `ns` (`ip netns exec`, which also mounts the
    /// namespace's own `/sys`, as node_exporter's netclass collector needs) or in the
    /// current namespace when `ns` is `None`; its stdout and stderr go to `log`.
    pub fn spawn(
        &mut self,
        label: &str,
        ns: Option<&Netns>,
        program: &str,
        args: &[String],
        log: &Path,
    ) -> Result<u32> {
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns.name(), program]);
                c
            }
            None => Command::new(program),
        };
        let out = std::fs::File::create(log).map_err(|source| Error::Os {
            what: format!("creating {}", log.display()),
            source,
        })?;
        let err = out.try_clone().map_err(|source| Error::Os {
            what: format!("duplicating {}", log.display()),
            source,
        })?;
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|source| Error::Os {
            what: format!(
                "starting {program} ({label}); is it installed? (scripts/install-deps.sh)"
            ),
            source,
        })?;
        let pid = child.id();
        self.list.push(Daemon {
            label: label.to_string(),
            child,
        });
        Ok(pid)
    }

    /// The daemons that exited already, with their status and the tail of their log
    /// (`logs`: the directory holding `<label>.log`).
    pub fn exited(&mut self, logs: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for d in &mut self.list {
            if let Ok(Some(st)) = d.child.try_wait() {
                let log = std::fs::read_to_string(log_path(logs, &d.label)).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                out.push(format!(
                    "{} exited ({st}): {}",
                    d.label,
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
            }
        }
        out
    }

    /// Number of daemons started.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when none was started.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Pids of the daemons started (the `ip netns exec` process execs the daemon, so the
    /// pid is the daemon's).
    pub fn pids(&self) -> Vec<u32> {
        self.list.iter().map(|d| d.child.id()).collect()
    }

    /// Stops every daemon: SIGTERM to all, wait up to [`GRACE`], SIGKILL the rest, reap.
    pub fn stop_all(&mut self) {
        for d in &self.list {
            // SAFETY: signalling a child we own and have not reaped (its pid is ours).
            unsafe { libc::kill(d.child.id() as libc::pid_t, libc::SIGTERM) };
        }
        let t = Instant::now();
        for mut d in self.list.drain(..).rev() {
            loop {
                match d.child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if t.elapsed() > GRACE => {
                        let _ = d.child.kill();
                        let _ = d.child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// `<dir>/<label>.log` (`/` and `@` in a label become `-`).
pub fn log_path(dir: &Path, label: &str) -> PathBuf {
    dir.join(format!("{}.log", label.replace(['/', '@'], "-")))
}

/// Runs `program args…` to completion (in `ns` if given) and returns its stdout; a
/// non-zero exit is an error carrying its stderr.
pub fn run(ns: Option<&Netns>, program: &str, args: &[&str]) -> Result<String> {
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns.name(), program]);
            c
        }
        None => Command::new(program),
    };
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::Os {
            what: format!("running {program}; is it installed? (scripts/install-deps.sh)"),
            source,
        })?;
    if !out.status.success() {
        return Err(Error::Invalid(format!(
            "{program} {}: {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
