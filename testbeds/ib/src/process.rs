//! Children that never outlive their owner: a [`Child`] is stopped (SIGTERM, then
//! SIGKILL after a grace period) when dropped — including while a panic unwinds — and
//! [`kill_children_on_signal`] stops every live one when the program gets SIGINT,
//! SIGTERM or SIGHUP, for programs (tests, benches) without signal handling of their own.
//! A daemon with its own handler (`fabric serve`) drops its subnet on shutdown instead.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Live children's pids (0: free slot), read by the signal handler.
static LIVE: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// How long a child has to exit after SIGTERM before it gets SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// A running program, stopped on drop.
#[derive(Debug)]
pub struct Child {
    inner: std::process::Child,
    name: &'static str,
    slot: Option<usize>,
}

impl Child {
    /// Spawns `cmd`; `name` names it in errors.
    pub fn spawn(cmd: &mut std::process::Command, name: &'static str) -> crate::Result<Child> {
        let inner = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                crate::Error::Missing(name.to_string())
            } else {
                crate::io(format!("starting {name}"))(e)
            }
        })?;
        let pid = inner.id() as i32;
        let slot = LIVE.iter().position(|s| {
            s.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        Ok(Child { inner, name, slot })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.inner.id()
    }

    /// Sends `signal` (e.g. `libc::SIGHUP`).
    pub fn signal(&self, signal: i32) -> crate::Result<()> {
        // SAFETY: kill(2) on our own child's pid, which has not been reaped (we hold it).
        if unsafe { libc::kill(self.inner.id() as i32, signal) } != 0 {
            return Err(crate::io(format!("signalling {}", self.name))(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// `Some(status)` when the program has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.inner.try_wait().ok().flatten()
    }

    /// Standard input, when it was piped.
    pub fn stdin(&mut self) -> Option<&mut std::process::ChildStdin> {
        self.inner.stdin.as_mut()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.inner.try_wait().ok().flatten().is_none() {
            let _ = self.signal(libc::SIGTERM);
            let t = Instant::now();
            while self.inner.try_wait().ok().flatten().is_none() {
                if t.elapsed() > GRACE {
                    let _ = self.inner.kill();
                    let _ = self.inner.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if let Some(s) = self.slot {
            LIVE[s].store(0, Ordering::SeqCst);
        }
    }
}

extern "C" fn on_signal(sig: i32) {
    for s in &LIVE {
        let pid = s.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill(2) is async-signal-safe.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    // SAFETY: signal(2) and raise(3) are async-signal-safe; the default action ends us.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that kill every live [`Child`] and
/// then end the program with the signal's default action. Temp directories are left
/// (they are named `fabric-ib-*` under the temp dir).
pub fn kill_children_on_signal() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only calls async-signal-safe functions.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}
