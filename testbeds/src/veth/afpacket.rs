//! AF_PACKET sockets with batched I/O: one socket per port for both directions, bound
//! to the port's interface, non-blocking, `recvmmsg`/`sendmmsg` with up to [`BATCH`]
//! frames per system call. NOTES.md measured ~110k pps for a one-frame-per-call
//! forwarder and ~320k pps with batches of 64 on this machine.
//!
//! Options set (see packet(7)): `PACKET_IGNORE_OUTGOING` (we must not read our own
//! transmissions back), `PACKET_QDISC_BYPASS` (the engine paces; the veth has no
//! queue anyway), 8 MiB receive and send buffers (`SO_*BUFFORCE`; the 212 KB default
//! overflows under load). Kernel-side receive drops are read with
//! `PACKET_STATISTICS` and accumulated in [`PacketSocket::kernel_drops`].

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::netns::{Netns, in_netns};
use super::{Error, Result};

/// Frames per `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 64;
/// Receive buffer size per frame slot (jumbo frames up to 9 KiB).
pub const SLOT: usize = 9216;

fn os(what: &str) -> Error {
    Error::Os {
        what: what.to_string(),
        source: std::io::Error::last_os_error(),
    }
}

fn setopt<T>(fd: RawFd, level: i32, name: i32, v: &T, what: &str) -> Result<()> {
    // SAFETY: v points to a live T of the given size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(os(what));
    }
    Ok(())
}

/// A raw packet socket on one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifname: String,
    rx_bufs: Vec<u8>,
    rx_lens: [usize; BATCH],
    /// Frames the kernel dropped because our receive buffer was full.
    pub kernel_drops: u64,
}

impl PacketSocket {
    /// Open a socket on `ifname` inside `ns`.
    pub fn open(ns: &Netns, ifname: &str) -> Result<PacketSocket> {
        in_netns(ns, || Self::open_here(ifname))?
    }

    /// Open a socket on `ifname` in the current namespace.
    pub fn open_here(ifname: &str) -> Result<PacketSocket> {
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2).
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto as i32,
            )
        };
        if raw < 0 {
            return Err(os("socket(AF_PACKET)"));
        }
        // SAFETY: raw is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let cname = std::ffi::CString::new(ifname)
            .map_err(|_| Error::Invalid(format!("interface name {ifname:?} contains NUL")))?;
        // SAFETY: valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(os(&format!("if_nametoindex({ifname})")));
        }
        let one: libc::c_int = 1;
        setopt(
            raw,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &one,
            "PACKET_IGNORE_OUTGOING",
        )?;
        setopt(
            raw,
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            &one,
            "PACKET_QDISC_BYPASS",
        )?;
        let sz: libc::c_int = 8 << 20;
        setopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &sz,
            "SO_RCVBUFFORCE",
        )?;
        setopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            &sz,
            "SO_SNDBUFFORCE",
        )?;
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: sll is a valid sockaddr_ll.
        let rc = unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(os(&format!("bind AF_PACKET to {ifname}")));
        }
        let mut s = PacketSocket {
            fd,
            ifname: ifname.to_string(),
            rx_bufs: vec![0u8; BATCH * SLOT],
            rx_lens: [0; BATCH],
            kernel_drops: 0,
        };
        // Discard anything queued before bind finished (frames of other interfaces).
        while s.recv_batch() > 0 {}
        s.kernel_drops = 0;
        s.read_kernel_drops();
        s.kernel_drops = 0;
        Ok(s)
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Receive up to [`BATCH`] frames without blocking; returns how many. Read them
    /// with [`PacketSocket::frame`].
    pub fn recv_batch(&mut self) -> usize {
        // SAFETY: zeroed mmsghdr/iovec arrays are valid; pointers reference rx_bufs,
        // which outlives the call.
        unsafe {
            let mut iov: [libc::iovec; BATCH] = std::mem::zeroed();
            let mut msgs: [libc::mmsghdr; BATCH] = std::mem::zeroed();
            for i in 0..BATCH {
                iov[i].iov_base = self.rx_bufs.as_mut_ptr().add(i * SLOT) as *mut libc::c_void;
                iov[i].iov_len = SLOT;
                msgs[i].msg_hdr.msg_iov = &mut iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            let n = libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            );
            if n <= 0 {
                return 0;
            }
            for (len, m) in self.rx_lens.iter_mut().zip(msgs.iter()).take(n as usize) {
                *len = m.msg_len as usize;
            }
            n as usize
        }
    }

    /// Frame `i` of the last [`PacketSocket::recv_batch`].
    pub fn frame(&self, i: usize) -> &[u8] {
        &self.rx_bufs[i * SLOT..i * SLOT + self.rx_lens[i].min(SLOT)]
    }

    /// Send frames with one `sendmmsg` per [`BATCH`]; returns how many the kernel took
    /// (fewer when its send buffer is full: the caller keeps the rest).
    pub fn send_batch<B: AsRef<[u8]>>(&mut self, frames: &[B]) -> usize {
        let mut sent = 0;
        for chunk in frames.chunks(BATCH) {
            // SAFETY: as in recv_batch; the iovecs point into `frames`, alive for the call.
            let n = unsafe {
                let mut iov: [libc::iovec; BATCH] = std::mem::zeroed();
                let mut msgs: [libc::mmsghdr; BATCH] = std::mem::zeroed();
                for (i, f) in chunk.iter().enumerate() {
                    let f = f.as_ref();
                    iov[i].iov_base = f.as_ptr() as *mut libc::c_void;
                    iov[i].iov_len = f.len();
                    msgs[i].msg_hdr.msg_iov = &mut iov[i];
                    msgs[i].msg_hdr.msg_iovlen = 1;
                }
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    chunk.len() as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if n <= 0 {
                break;
            }
            sent += n as usize;
            if (n as usize) < chunk.len() {
                break;
            }
        }
        sent
    }

    /// Add the kernel's receive drops since the last call to [`PacketSocket::kernel_drops`].
    pub fn read_kernel_drops(&mut self) -> u64 {
        let mut st: libc::tpacket_stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: st and len are valid out-parameters of the right size.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if rc == 0 {
            self.kernel_drops += st.tp_drops as u64;
        }
        self.kernel_drops
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Wait until one of `fds` is readable or `timeout_ns` passes (`ppoll`; 0 = just
/// look), and set `ready[i]` for each readable fd. One system call tells the event loop
/// which sockets to read, instead of one empty `recvmmsg` per socket.
pub fn wait_readable(fds: &[RawFd], timeout_ns: u64, ready: &mut [bool]) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: p and ts are valid for the call.
    let n = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    for (r, pf) in ready.iter_mut().zip(&p) {
        *r = n < 0 || pf.revents != 0;
    }
}

/// Run this thread under `SCHED_FIFO` at the lowest real-time priority, as userspace
/// switches are deployed. The switch is only lossless if it sees frames as they arrive:
/// while its thread waits for a CPU, frames pile up in the kernel's socket buffers where
/// PFC cannot count them, and reach the shared buffer in one burst when it runs again
/// (measured: 21 drops in an 8:1 incast with PFC while a build loaded both cores). The
/// loop sleeps in `ppoll` when idle, and the kernel's real-time throttling
/// (`sched_rt_runtime_us`, 95 % by default) keeps the rest of the system running.
/// Returns the OS error if the thread may not change its policy (e.g. not root).
pub fn set_realtime() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Ask for 1 µs timer slack on this thread, so short `ppoll` timeouts are honoured
/// (the default slack is 50 µs).
pub fn set_fine_timer_slack() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64, 0, 0, 0);
    }
}
