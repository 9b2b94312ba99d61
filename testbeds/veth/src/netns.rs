//! Named network namespaces created and destroyed by our own code (no `ip`).
//!
//! A namespace is created the way `ip netns add` does it (iproute2 ip/ipnetns.c,
//! `netns_add`): `/run/netns` is first made a shared mount point (bind-mounted onto
//! itself if it is not one yet), then a helper thread calls `unshare(CLONE_NEWNET)` and
//! its `/proc/thread-self/ns/net` is bind-mounted on `/run/netns/NAME` so the namespace
//! outlives the thread. Without the first step, an `ip netns add` run later bind-mounts
//! `/run/netns` onto itself recursively, copying our mounts, and our single unmount then
//! leaves a copy behind (the unlink fails with EBUSY and the namespace lives on).
//! Deleting is `umount2` until nothing is mounted there, then `unlink`; the kernel then
//! destroys the namespace and every veth inside it (a veth pair dies when either end's
//! namespace dies), so deleting our namespaces removes every link we made.
//!
//! Names are `fab-<pid36>_<seq>-<role>`: prefixed (so `fabric testbed clean` touches only
//! ours) and unique per process and run (so parallel runs never collide). The owning
//! pid is part of the name, which lets `clean` leave namespaces of live runs alone.
//!
//! [`in_netns`] runs a closure with the current thread switched into a namespace and
//! switches back afterwards: sockets (AF_PACKET, netlink) created inside belong to that
//! namespace for their whole life and can be used from any thread.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{Error, Result};

/// Directory where named namespaces are bind-mounted (as iproute2 does).
pub const NETNS_DIR: &str = "/run/netns";
/// Prefix of every namespace this crate creates.
pub const PREFIX: &str = "fab-";

static SEQ: AtomicU32 = AtomicU32::new(0);
/// Every namespace created by this process and not yet deleted: the Ctrl-C handler
/// (see [`install_signal_cleanup`]) deletes them before exiting.
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn base36(mut n: u64) -> String {
    const D: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = Vec::new();
    loop {
        s.push(D[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    s.reverse();
    String::from_utf8(s).expect("ascii")
}

/// A fresh run id, unique within this process and across live processes:
/// `<pid in base 36>_<sequence>` (the separator must not be a base-36 digit).
pub fn new_run_id() -> String {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!(
        "{}_{}",
        base36(std::process::id() as u64),
        base36(seq as u64)
    )
}

/// The pid encoded in one of our namespace names, if it is one of ours.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let pid36 = rest.split('_').next()?;
    u32::from_str_radix(pid36, 36).ok()
}

/// Whether we are root (namespaces, veths and AF_PACKET need CAP_SYS_ADMIN/CAP_NET_ADMIN).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn os_err(what: impl Into<String>) -> Error {
    Error::Os {
        what: what.into(),
        source: std::io::Error::last_os_error(),
    }
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).expect("path without NUL")
}

/// A named network namespace under `/run/netns`. Dropping it does NOT delete it;
/// ownership and deletion are the job of [`super::Testbed`] (or call [`Netns::delete`]).
#[derive(Debug, Clone)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Create `/run/netns/NAME` holding a new, empty network namespace, with `lo` up.
    pub fn create(name: &str) -> Result<Netns> {
        if name.len() > 64 || name.contains('/') || name.is_empty() {
            return Err(Error::Invalid(format!(
                "namespace name {name:?}: expected 1..=64 characters without '/'"
            )));
        }
        prepare_run_dir()?;
        let path = Path::new(NETNS_DIR).join(name);
        // O_EXCL: never adopt someone else's namespace.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::Os {
                what: format!("create {}", path.display()),
                source: e,
            })?;
        LIVE.lock().expect("netns registry").push(name.to_string());
        let p2 = path.clone();
        let res = std::thread::spawn(move || -> Result<()> {
            // SAFETY: unshare on this (short-lived, dedicated) thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(os_err("unshare(CLONE_NEWNET)"));
            }
            let src = CString::new("/proc/thread-self/ns/net").expect("static");
            let dst = cstr(&p2);
            // SAFETY: valid C strings; a bind mount of our own namespace file.
            let rc = unsafe {
                libc::mount(
                    src.as_ptr(),
                    dst.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            };
            if rc != 0 {
                return Err(os_err(format!("bind-mount netns on {}", p2.display())));
            }
            Ok(())
        })
        .join()
        .map_err(|_| Error::Invalid("netns creation thread panicked".into()))?;
        let ns = Netns {
            name: name.to_string(),
        };
        if let Err(e) = res {
            let _ = ns.delete();
            return Err(e);
        }
        // Bring up loopback and switch off IPv6 autoconf noise (router solicitations,
        // MLD reports) on every link made later: only our frames appear on the wire.
        ns.sysctl("net/ipv6/conf/all/disable_ipv6", "1")?;
        ns.sysctl("net/ipv6/conf/default/disable_ipv6", "1")?;
        crate::netlink::set_up_by_name(&ns, "lo")?;
        Ok(ns)
    }

    /// Refer to an existing namespace by name (no check).
    pub fn from_name(name: &str) -> Netns {
        Netns {
            name: name.to_string(),
        }
    }

    /// The namespace the calling process runs in (`/proc/self/ns/net`): a daemon on a
    /// Linux router, or started with `ip netns exec`. Not to be deleted.
    pub fn current() -> Netns {
        Netns {
            name: "/proc/self/ns/net".to_string(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/run/netns/NAME`, or the file itself for [`Netns::current`].
    pub fn path(&self) -> PathBuf {
        if self.name.starts_with('/') {
            PathBuf::from(&self.name)
        } else {
            Path::new(NETNS_DIR).join(&self.name)
        }
    }

    /// Open the namespace file (for `setns` or `IFLA_NET_NS_FD`).
    pub fn open(&self) -> Result<File> {
        File::open(self.path()).map_err(|e| Error::Os {
            what: format!("open {}", self.path().display()),
            source: e,
        })
    }

    /// Write a sysctl under `/proc/sys/` as seen from inside this namespace
    /// (e.g. `net/ipv4/ip_forward`). `/proc/sys/net` resolves to the namespace of the
    /// task that opens it, so the file is opened inside the namespace.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let path = format!("/proc/sys/{key}");
        in_netns(self, || {
            std::fs::write(&path, value).map_err(|e| Error::Os {
                what: format!("write {value} to {path} in netns {}", self.name),
                source: e,
            })
        })?
    }

    /// Unmount (until nothing is mounted there any more) and remove the namespace file.
    /// The kernel destroys the namespace (and its veths) once nothing else holds it.
    /// Missing namespaces are not an error; a namespace that could not be removed stays
    /// in [`live`].
    pub fn delete(&self) -> Result<()> {
        if self.name.starts_with('/') {
            return Err(Error::Invalid(format!(
                "{}: not a named namespace, not deleted",
                self.name
            )));
        }
        let path = self.path();
        let umount_err = unmount_all(&path).err();
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let also = umount_err.map_or(String::new(), |u| format!(" (umount: {u})"));
                return Err(Error::Os {
                    what: format!("remove {}{also}", path.display()),
                    source: e,
                });
            }
        }
        if let Some(e) = umount_err {
            return Err(Error::Os {
                what: format!("umount {}", path.display()),
                source: e,
            });
        }
        LIVE.lock()
            .expect("netns registry")
            .retain(|n| n != &self.name);
        Ok(())
    }
}

/// Make [`NETNS_DIR`] a shared mount point, as iproute2's `netns_add` does before it
/// mounts a namespace: mark it `MS_SHARED | MS_REC`; if that fails with EINVAL (not a
/// mount point), bind-mount the directory onto itself (`MS_BIND | MS_REC`) and mark it
/// again. Once it is a shared mount point, a later `ip netns add` finds nothing to copy,
/// and an unmount done here propagates to every mount namespace that sees it.
pub fn prepare_run_dir() -> Result<()> {
    std::fs::create_dir_all(NETNS_DIR).map_err(|e| Error::Os {
        what: format!("create {NETNS_DIR}"),
        source: e,
    })?;
    let dir = cstr(Path::new(NETNS_DIR));
    let none = CString::new("none").expect("static");
    let empty = CString::new("").expect("static");
    let mut made_mount_point = false;
    loop {
        // SAFETY: valid C strings; changes the propagation of an existing mount.
        let rc = unsafe {
            libc::mount(
                empty.as_ptr(),
                dir.as_ptr(),
                none.as_ptr(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) || made_mount_point {
            return Err(Error::Os {
                what: format!("make {NETNS_DIR} a shared mount"),
                source: e,
            });
        }
        // SAFETY: valid C strings; bind-mounts the directory onto itself.
        let rc = unsafe {
            libc::mount(
                dir.as_ptr(),
                dir.as_ptr(),
                none.as_ptr(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(os_err(format!("bind-mount {NETNS_DIR} onto itself")));
        }
        made_mount_point = true;
    }
}

/// Most mounts stacked on one namespace file that [`unmount_all`] takes off.
const MAX_STACKED_MOUNTS: usize = 64;

/// Unmount `path` until nothing is mounted there (EINVAL: not a mount point; ENOENT:
/// no such file). A mount stacked by someone else is taken off too.
fn unmount_all(path: &Path) -> std::io::Result<()> {
    let c = cstr(path);
    for _ in 0..MAX_STACKED_MOUNTS {
        // SAFETY: valid C string.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINVAL) | Some(libc::ENOENT) => Ok(()),
                _ => Err(e),
            };
        }
    }
    Err(std::io::Error::other(format!(
        "still mounted after {MAX_STACKED_MOUNTS} unmounts"
    )))
}

/// Run `f` with the current thread inside `ns`, then switch back (also on panic).
pub fn in_netns<R>(ns: &Netns, f: impl FnOnce() -> R) -> Result<R> {
    let here = File::open("/proc/thread-self/ns/net").map_err(|e| Error::Os {
        what: "open /proc/thread-self/ns/net".into(),
        source: e,
    })?;
    let target = ns.open()?;
    // SAFETY: valid fds of namespace files.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(os_err(format!("setns into {}", ns.name)));
    }
    struct Back(File);
    impl Drop for Back {
        fn drop(&mut self) {
            // SAFETY: fd of our original namespace, still open.
            let rc = unsafe { libc::setns(self.0.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns back to the original namespace failed");
        }
    }
    let _back = Back(here);
    Ok(f())
}

/// Namespace names currently under `/run/netns` that start with [`PREFIX`].
pub fn list_ours() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(NETNS_DIR)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(PREFIX))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Delete leftovers of crashed runs: our namespaces whose owning process is gone
/// (or all of ours with `all`). Returns the names removed.
pub fn clean(all: bool) -> Result<Vec<String>> {
    let me = std::process::id();
    let mut removed = Vec::new();
    for name in list_ours() {
        let stale = match owner_pid(&name) {
            Some(pid) => all || (pid != me && !pid_alive(pid)),
            None => all,
        };
        if stale {
            Netns::from_name(&name).delete()?;
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Stop tracking `name` for the Ctrl-C cleanup (it is meant to outlive the process).
pub fn forget_live(name: &str) {
    if let Ok(mut v) = LIVE.lock() {
        v.retain(|n| n != name);
    }
}

/// Namespaces this process created and has not deleted (or failed to delete).
pub fn live() -> Vec<String> {
    LIVE.lock().map(|v| v.clone()).unwrap_or_default()
}

/// Delete every namespace this process created and has not deleted yet; every failure
/// (`name: error`), empty when nothing is left.
pub fn delete_all_live() -> Vec<String> {
    live()
        .into_iter()
        .filter_map(|n| {
            Netns::from_name(&n)
                .delete()
                .err()
                .map(|e| format!("{n}: {e}"))
        })
        .collect()
}

/// Install a SIGINT/SIGTERM/SIGHUP handler (once) that deletes this process's namespaces and
/// exits with status 130. Used by the `fabric testbed` commands that hold no run of their
/// own to stop; tests rely on `Drop` (which also runs on panic). A program that can stop
/// its work and let the [`crate::Testbed`] guard tear down (a daemon, a live run) uses
/// [`on_signal`] instead.
pub fn install_signal_cleanup() -> Result<()> {
    on_signal(|_| {
        let failures = delete_all_live();
        for f in &failures {
            eprintln!("fabric: namespace left behind: {f}");
        }
        // SAFETY: ends the process (1 if a namespace of ours is left, else 130).
        unsafe { libc::_exit(if failures.is_empty() { 130 } else { 1 }) }
    })
}

/// Call `handler` (once, on a dedicated thread) when SIGINT, SIGTERM or SIGHUP (its
/// terminal closed) arrives, instead of
/// dying: the graceful path, where the handler asks the program to stop and the program
/// tears down through its normal guards. Only the first handler installed in a process
/// takes effect.
pub fn on_signal(handler: impl FnOnce(libc::c_int) + Send + 'static) -> Result<()> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let mut res = Ok(());
    ONCE.call_once(|| {
        // Block the signals in this thread (inherited by threads spawned later) and
        // wait for them synchronously in a dedicated thread: no async-signal-safety issues.
        // SAFETY: plain sigset manipulation on local storage.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            // A closed terminal: a testbed started from it must not outlive it half-way.
            libc::sigaddset(&mut set, libc::SIGHUP);
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                res = Err(os_err("pthread_sigmask"));
                return;
            }
            set
        };
        std::thread::spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is a valid signal set; `sig` is written by the call.
            unsafe { libc::sigwait(&set, &mut sig) };
            eprintln!("fabric: signal {sig}: stopping");
            handler(sig);
        });
    });
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_unique_and_carry_the_pid() {
        let a = new_run_id();
        let b = new_run_id();
        assert_ne!(a, b);
        let name = format!("{PREFIX}{a}-s0");
        assert_eq!(owner_pid(&name), Some(std::process::id()));
        assert_eq!(owner_pid("other-ns"), None);
    }

    /// `x` is a base-36 digit: pid 26781 is `klx`, which an `x` separator cut to `kl`
    /// (743), so `clean` could take a live run for a dead one.
    #[test]
    fn pids_with_any_base36_digit_round_trip() {
        for pid in [26_781u32, 33, 35, 1, 4_194_304] {
            let name = format!("{PREFIX}{}_{}-h0", base36(pid as u64), base36(7));
            assert_eq!(owner_pid(&name), Some(pid), "{name}");
        }
    }

    #[test]
    fn base36_roundtrip() {
        for n in [0u64, 1, 35, 36, 4_194_304] {
            assert_eq!(u64::from_str_radix(&base36(n), 36).unwrap(), n);
        }
    }
}
