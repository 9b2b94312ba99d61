//! AF_PACKET sockets for the engine: one socket per port for both directions, bound to
//! the port's interface, non-blocking. Frames are received through a memory-mapped
//! `PACKET_RX_RING` (TPACKET_V2) and sent with `sendmmsg` batches of up to [`BATCH`].
//!
//! Why a ring: with `recvmmsg` every frame is queued as an skb on the socket, and the
//! reader pays a system call per batch plus a copy, a free and a wake-up per frame; the
//! forwarding benchmark found the switch thread spending ~95 % of its time in the kernel
//! that way. With the ring the kernel copies each frame into a shared slot while it
//! delivers it (in the sender's context) and the switch reads it in place; checking for
//! new frames is a memory read, so a busy loop needs no system call to receive.
//! A socket may also get a `PACKET_TX_RING` ([`PacketSocket::open_with_tx_ring`],
//! [`PacketSocket::send_ring`]); the engine does not use it (see `send_batch`).
//! TPACKET_V2 rather than V3: V3 hands frames over a block at a time, and a block is only
//! retired when full or when its timer (whole milliseconds) fires — a PFC pause or an
//! ACK could wait a millisecond; V2 hands every slot over as soon as it is written.
//! NOTES.md measured ~110k pps for a one-frame-per-call forwarder and ~320k pps with
//! batches of 64 on this machine.
//!
//! Options set (see packet(7)): `PACKET_IGNORE_OUTGOING` (we must not read our own
//! transmissions back), `PACKET_QDISC_BYPASS` (the engine paces; the veth has no
//! queue anyway), an 8 MiB send buffer (`SO_SNDBUFFORCE`). Kernel-side receive drops
//! (ring full) are read with `PACKET_STATISTICS` and accumulated in
//! [`PacketSocket::kernel_drops`]; frames longer than a ring slot are dropped and counted
//! in [`PacketSocket::truncated`].

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::netns::{Netns, in_netns};
use super::{Error, Result};

/// Frames per receive batch and per `sendmmsg`.
pub const BATCH: usize = 64;
/// Memory of one receive ring (per socket).
pub const RING_BYTES: usize = 4 << 20;
/// Size of one ring block (frames never straddle blocks).
const RING_BLOCK: usize = 128 << 10;
/// Memory of one transmit ring (sockets opened with one).
const TX_RING_BYTES: usize = 1 << 20;

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

/// Ask the CPU to start loading the first 128 bytes of a received frame (at `mac` bytes
/// into `slot`) while the rest of the batch is gathered: the kernel wrote them on
/// another CPU, so the first touch is a cache miss the switch would otherwise wait for
/// frame after frame when it copies them out.
fn prefetch(slot: *const u8, mac: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = slot.wrapping_add(mac) as *const i8;
        _mm_prefetch::<_MM_HINT_T0>(p);
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slot, mac);
}

/// The TPACKET_V2 receive ring inside the socket's mapping.
#[derive(Debug)]
struct Ring {
    base: *mut u8,
    frame_size: usize,
    /// Each slot's offset from `base` (slots do not straddle blocks, so a block may end
    /// in a gap): a table, not a division per lookup on the per-frame path.
    offsets: Box<[usize]>,
    /// Next slot to look at.
    head: usize,
}

// SAFETY: the ring points into a mapping owned by the same PacketSocket, only touched
// through it.
unsafe impl Send for Ring {}

impl Ring {
    /// Ring geometry for frames up to `mtu` bytes of payload (plus Ethernet/VLAN
    /// headers) in about `bytes` of memory: the kernel puts the MAC header of a received
    /// frame at `TPACKET_ALIGN(TPACKET2_HDRLEN + 16)` minus 14 for SOCK_RAW, so a slot
    /// needs that offset plus the frame.
    fn request(mtu: usize, bytes: usize) -> libc::tpacket_req {
        let align = |x: usize| (x + libc::TPACKET_ALIGNMENT - 1) & !(libc::TPACKET_ALIGNMENT - 1);
        let frame_size = align(align(libc::TPACKET2_HDRLEN + 16) + mtu + 18);
        // A block holds at least one frame (whole pages, so the kernel can allocate it).
        let block = RING_BLOCK.max(frame_size.div_ceil(4096) * 4096);
        let blocks = (bytes / block).max(1);
        libc::tpacket_req {
            tp_block_size: block as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: ((block / frame_size) * blocks) as u32,
        }
    }

    fn len(req: &libc::tpacket_req) -> usize {
        req.tp_block_size as usize * req.tp_block_nr as usize
    }

    /// The ring described by `req` at `base`.
    fn at(base: *mut u8, req: &libc::tpacket_req) -> Ring {
        let block = req.tp_block_size as usize;
        let frame_size = req.tp_frame_size as usize;
        let frames_per_block = block / frame_size;
        let offsets = (0..req.tp_frame_nr as usize)
            .map(|i| (i / frames_per_block) * block + (i % frames_per_block) * frame_size)
            .collect();
        Ring {
            base,
            frame_size,
            offsets,
            head: 0,
        }
    }

    /// Slots in the ring.
    fn frames(&self) -> usize {
        self.offsets.len()
    }

    fn slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: every offset is < the ring's length by construction of the geometry.
        unsafe { self.base.add(self.offsets[i]) as *mut libc::tpacket2_hdr }
    }

    /// The slot after `i`.
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.frames() { 0 } else { i + 1 }
    }

    /// Slot `k` places after `i` (`k` ≤ the ring's size).
    fn advance(&self, i: usize, k: usize) -> usize {
        let j = i + k;
        if j >= self.frames() {
            j - self.frames()
        } else {
            j
        }
    }

    fn status_word(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: tp_status is the first, aligned u32 of a live slot; AtomicU32 has its
        // layout; the kernel and we hand the slot over through this word.
        unsafe { &*(self.slot(i) as *const std::sync::atomic::AtomicU32) }
    }

    /// The status word of slot `i`, read with acquire ordering (the writer fills the
    /// slot, then sets the status).
    fn status(&self, i: usize) -> u32 {
        self.status_word(i)
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Set the status of slot `i` with release ordering (after our reads or writes).
    fn set_status(&self, i: usize, v: u32) {
        self.status_word(i)
            .store(v, std::sync::atomic::Ordering::Release);
    }

    fn ready(&self) -> bool {
        self.status(self.head) & libc::TP_STATUS_USER != 0
    }
}

/// The socket's mapping of its receive ring.
#[derive(Debug)]
struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: owned exclusively by one PacketSocket.
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

/// A raw packet socket on one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifname: String,
    ring: Ring,
    /// The transmit ring, if the socket was opened with one.
    tx: Option<Ring>,
    // Unmapped when the socket goes.
    _map: Mapping,
    /// Slots of the current batch: (data offset from the slot, frame length).
    batch: [(u32, u32); BATCH],
    /// First slot and size of the current batch (handed back on the next receive).
    batch_start: usize,
    batch_len: usize,
    /// Frames the kernel dropped because our receive ring was full.
    pub kernel_drops: u64,
    /// Frames longer than a ring slot (dropped, not delivered).
    pub truncated: u64,
}

impl PacketSocket {
    /// Open a socket on `ifname` inside `ns`.
    pub fn open(ns: &Netns, ifname: &str) -> Result<PacketSocket> {
        in_netns(ns, || Self::open_here(ifname))?
    }

    /// Open a socket on `ifname` in the current namespace.
    pub fn open_here(ifname: &str) -> Result<PacketSocket> {
        Self::open_here_with(ifname, false)
    }

    /// Open a socket on `ifname` inside `ns` with a `PACKET_TX_RING` as well (see
    /// [`PacketSocket::send_ring`]).
    pub fn open_with_tx_ring(ns: &Netns, ifname: &str) -> Result<PacketSocket> {
        in_netns(ns, || Self::open_here_with(ifname, true))?
    }

    fn open_here_with(ifname: &str, tx_ring: bool) -> Result<PacketSocket> {
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
        let mtu = interface_mtu(raw, ifname)?;
        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setopt(
            raw,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &version,
            "PACKET_VERSION",
        )?;
        let rx_req = Ring::request(mtu, RING_BYTES);
        setopt(
            raw,
            libc::SOL_PACKET,
            libc::PACKET_RX_RING,
            &rx_req,
            "PACKET_RX_RING",
        )?;
        let tx_req = Ring::request(mtu, TX_RING_BYTES);
        if tx_ring {
            setopt(
                raw,
                libc::SOL_PACKET,
                libc::PACKET_TX_RING,
                &tx_req,
                "PACKET_TX_RING",
            )?;
        }
        let rx_len = Ring::len(&rx_req);
        let len = rx_len + if tx_ring { Ring::len(&tx_req) } else { 0 };
        // SAFETY: mapping the rings the kernel just allocated for this socket.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(os("mmap the receive ring"));
        }
        let map = Mapping {
            base: base as *mut u8,
            len,
        };
        let ring = Ring::at(map.base, &rx_req);
        // SAFETY: the transmit ring follows the receive ring inside the mapping.
        let tx = tx_ring.then(|| Ring::at(unsafe { map.base.add(rx_len) }, &tx_req));
        let mut s = PacketSocket {
            fd,
            ifname: ifname.to_string(),
            ring,
            tx,
            _map: map,
            batch: [(0, 0); BATCH],
            batch_start: 0,
            batch_len: 0,
            kernel_drops: 0,
            truncated: 0,
        };
        // Discard anything queued before bind finished (frames of other interfaces).
        while s.recv_batch() > 0 {}
        s.release_batch();
        s.kernel_drops = 0;
        s.truncated = 0;
        s.read_kernel_drops();
        s.kernel_drops = 0;
        Ok(s)
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Receive up to [`BATCH`] frames without blocking; returns how many. Read them
    /// with [`PacketSocket::frame`]; their ring slots go back to the kernel on the next
    /// call (or [`PacketSocket::release_batch`]).
    pub fn recv_batch(&mut self) -> usize {
        self.release_batch();
        let r = &mut self.ring;
        self.batch_start = r.head;
        let mut n = 0;
        while n < BATCH {
            let st = r.status(r.head);
            if st & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot is ours (TP_STATUS_USER) until released.
            let h = unsafe { &*r.slot(r.head) };
            if st & libc::TP_STATUS_COPY != 0 || h.tp_snaplen < h.tp_len {
                // Longer than a slot: the kernel kept only a prefix.
                self.truncated += 1;
                self.batch[n] = (0, 0);
            } else {
                self.batch[n] = (h.tp_mac as u32, h.tp_snaplen);
                prefetch(
                    h as *const libc::tpacket2_hdr as *const u8,
                    h.tp_mac as usize,
                );
            }
            n += 1;
            r.head = r.next(r.head);
        }
        self.batch_len = n;
        // Truncated slots are skipped by `frame` (empty) and counted above.
        n
    }

    /// Hand the current batch's slots back to the kernel.
    pub fn release_batch(&mut self) {
        for k in 0..self.batch_len {
            self.ring.set_status(
                self.ring.advance(self.batch_start, k),
                libc::TP_STATUS_KERNEL,
            );
        }
        self.batch_len = 0;
    }

    /// Slots in the receive ring: frames the kernel can hold for us before it drops.
    pub fn ring_frames(&self) -> usize {
        self.ring.frames()
    }

    /// Whether a frame is waiting in the ring (a memory read, no system call).
    pub fn readable(&self) -> bool {
        self.ring.ready()
    }

    /// Frame `i` of the last [`PacketSocket::recv_batch`] (empty if it was truncated).
    pub fn frame(&self, i: usize) -> &[u8] {
        let (off, len) = self.batch[i];
        if len == 0 {
            return &[];
        }
        let slot = self.ring.slot(self.ring.advance(self.batch_start, i)) as *const u8;
        let len = (len as usize).min(self.ring.frame_size - off as usize);
        // SAFETY: the slot belongs to us until release_batch; off + len stays inside it.
        unsafe { std::slice::from_raw_parts(slot.add(off as usize), len) }
    }

    /// Send frames with one `sendmmsg` per [`BATCH`]; returns how many the kernel took
    /// (fewer when its send buffer is full: the caller keeps the rest).
    ///
    /// Not a `PACKET_TX_RING`: measured with `veth-bench` (three runs, loaded machine), a
    /// transmit ring cost the switch 4.1–7.3 µs of CPU per forwarded frame against
    /// 2.9–4.9 µs with `sendmmsg` in the same hour, because the veth must copy the ring's
    /// user pages out of every skb (`skb_copy_ubufs`, a page allocation per frame)
    /// before handing it to the peer. Re-measured in session 9 with the kernel and code
    /// of today ([`PacketSocket::send_ring`], `veth-bench`'s fifth path, 9 alternating
    /// trials, two runs at load 11–28): no gain, 1,242 / 990 against 1,163 / 1,015 ns of
    /// switch CPU per forwarded 64 B frame and 1,549 / 1,544 against 1,491 / 1,465 ns at
    /// 1500 B.
    pub fn send_batch<B: AsRef<[u8]>>(&mut self, frames: &[B]) -> usize {
        let mut sent = 0;
        for chunk in frames.chunks(BATCH) {
            // SAFETY: zeroed mmsghdr/iovec arrays are valid; the iovecs point into
            // `frames`, alive for the call.
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

    /// Send frames through the transmit ring: copy each into a free slot, mark it
    /// `TP_STATUS_SEND_REQUEST`, then one `sendto` for all of them (the kernel sends every
    /// requested slot before it returns, as the socket is non-blocking). Returns how many
    /// were handed over (fewer when the ring has no free slot). Without a transmit ring,
    /// [`PacketSocket::send_batch`].
    pub fn send_ring<B: AsRef<[u8]>>(&mut self, frames: &[B]) -> usize {
        let Some(tx) = self.tx.as_mut() else {
            return self.send_batch(frames);
        };
        // Where V2 expects a frame to send: right after the aligned header.
        let data = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();
        let mut queued = 0;
        for f in frames {
            let f = f.as_ref();
            let i = tx.head;
            if tx.status(i) != libc::TP_STATUS_AVAILABLE || data + f.len() > tx.frame_size {
                break;
            }
            let h = tx.slot(i);
            // SAFETY: the slot is ours (TP_STATUS_AVAILABLE); the frame fits in it.
            unsafe {
                std::ptr::copy_nonoverlapping(f.as_ptr(), (h as *mut u8).add(data), f.len());
                (*h).tp_len = f.len() as u32;
                (*h).tp_snaplen = f.len() as u32;
            }
            tx.set_status(i, libc::TP_STATUS_SEND_REQUEST);
            tx.head = tx.next(i);
            queued += 1;
        }
        if queued > 0 {
            // SAFETY: sendto with no buffer: the kernel takes the ring's requested slots.
            unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                );
            }
        }
        queued
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

/// MTU of `ifname` (`SIOCGIFMTU` on the socket).
fn interface_mtu(fd: RawFd, ifname: &str) -> Result<usize> {
    // SAFETY: a zeroed ifreq is valid; the name is copied with its NUL terminator inside
    // bounds (IFNAMSIZ checked).
    unsafe {
        let mut ifr: libc::ifreq = std::mem::zeroed();
        let b = ifname.as_bytes();
        if b.len() >= ifr.ifr_name.len() {
            return Err(Error::Invalid(format!(
                "interface name {ifname:?} is too long"
            )));
        }
        for (d, s) in ifr.ifr_name.iter_mut().zip(b) {
            *d = *s as libc::c_char;
        }
        if libc::ioctl(fd, libc::SIOCGIFMTU, &mut ifr) != 0 {
            return Err(os(&format!("SIOCGIFMTU {ifname}")));
        }
        Ok(ifr.ifr_ifru.ifru_mtu.max(1500) as usize)
    }
}

/// Wait until one of `fds` is readable or `timeout_ns` passes (`ppoll`; 0 = just
/// look), and set `ready[i]` for each readable fd: one system call for all of a loop's
/// sockets. (A socket with a receive ring is readable while its head slot is ours.)
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

/// Frame buffers a forwarding loop reuses: each received frame is copied out of its ring
/// slot into a recycled buffer, and the buffer comes back once the frame has been sent,
/// so the switch's hot path allocates nothing per frame.
#[derive(Debug, Default)]
pub struct FramePool(Vec<Vec<u8>>);

impl FramePool {
    /// Buffers kept at most (the rest are freed).
    const KEEP: usize = 4096;

    /// `frame` in a buffer of the pool (a new one if the pool is empty).
    pub fn copy(&mut self, frame: &[u8]) -> Vec<u8> {
        let mut b = self.0.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(frame);
        b
    }

    /// Give sent frames' buffers back.
    pub fn recycle(&mut self, bufs: impl IntoIterator<Item = Vec<u8>>) {
        for b in bufs {
            if self.0.len() >= Self::KEEP {
                break;
            }
            self.0.push(b);
        }
    }
}

/// How long after its last activity an event loop keeps napping instead of blocking.
pub const NAP_WINDOW: std::time::Duration = std::time::Duration::from_millis(2);
/// One nap while traffic flows.
pub const NAP: std::time::Duration = std::time::Duration::from_micros(40);

/// How an event loop waits for frames without paying a wake-up per frame.
///
/// A loop blocked in `ppoll` is woken by every frame the kernel delivers to its sockets,
/// and that wake-up (wait-queue lock, inter-processor interrupt, two context switches)
/// cost the forwarding benchmark more than the forwarding itself. So, as NAPI does with
/// interrupts, a loop that saw traffic within the last [`NAP_WINDOW`] sleeps on a short
/// timer ([`NAP`], or less when its next deadline is sooner) and then looks at its
/// rings — a memory read; the kernel's deliveries find nobody to wake. Only a loop
/// idle for longer blocks in `ppoll` on its sockets (no busy timer when nothing
/// happens). A nap of 10 µs is 0.1 µs of virtual time at the default scale of 100.
#[derive(Debug)]
pub struct Waiter {
    fds: Vec<RawFd>,
    ready: Vec<bool>,
    last_busy: std::time::Instant,
}

impl Waiter {
    pub fn new(fds: Vec<RawFd>) -> Waiter {
        let n = fds.len();
        Waiter {
            fds,
            ready: vec![true; n],
            last_busy: std::time::Instant::now(),
        }
    }

    /// Wait at most `timeout_ns` (0: return at once). `busy`: this iteration moved
    /// frames (or a ring still holds some), so the loop counts as active. Returns the
    /// longest sleep it asked the OS for.
    pub fn wait(&mut self, busy: bool, timeout_ns: u64) -> std::time::Duration {
        let now = std::time::Instant::now();
        if busy {
            self.last_busy = now;
        }
        if timeout_ns == 0 {
            return std::time::Duration::ZERO;
        }
        if now.duration_since(self.last_busy) < NAP_WINDOW {
            let t = (NAP.as_nanos() as u64).min(timeout_ns);
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: t as libc::c_long,
            };
            // SAFETY: a valid timespec; an interrupted sleep just returns early.
            unsafe {
                libc::nanosleep(&ts, std::ptr::null_mut());
            }
            std::time::Duration::from_nanos(t)
        } else {
            wait_readable(&self.fds, timeout_ns, &mut self.ready);
            std::time::Duration::from_nanos(timeout_ns)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_pool_reuses_buffers_and_stays_bounded() {
        let mut pool = FramePool::default();
        let a = pool.copy(&[1, 2, 3]);
        assert_eq!(a, [1, 2, 3]);
        let ptr = a.as_ptr();
        pool.recycle([a]);
        // The same allocation comes back, holding only the new frame.
        let b = pool.copy(&[9]);
        assert_eq!((b.as_slice(), b.as_ptr()), (&[9u8][..], ptr));
        pool.recycle((0..FramePool::KEEP + 10).map(|_| Vec::new()));
        assert_eq!(pool.0.len(), FramePool::KEEP);
    }

    #[test]
    fn ring_slots_sit_where_the_kernel_puts_them_and_wrap() {
        // A 9000 B MTU leaves a gap at the end of each 128 KiB block: slots never
        // straddle blocks (packet_mmap.rst), so slot i is in block i / per_block.
        for mtu in [1500, 4096, 9000] {
            let req = Ring::request(mtu, 1 << 20);
            let ring = Ring::at(std::ptr::null_mut(), &req);
            let (block, size) = (req.tp_block_size as usize, req.tp_frame_size as usize);
            let per_block = block / size;
            assert_eq!(ring.frames(), req.tp_frame_nr as usize);
            for i in 0..ring.frames() {
                let off = ring.offsets[i];
                assert_eq!(
                    off,
                    (i / per_block) * block + (i % per_block) * size,
                    "mtu {mtu} slot {i}"
                );
                assert!(
                    off + size <= Ring::len(&req),
                    "mtu {mtu}: slot {i} ends past the ring"
                );
            }
            let last = ring.frames() - 1;
            assert_eq!((ring.next(last), ring.next(0)), (0, 1));
            assert_eq!(ring.advance(last, 1), 0);
            assert_eq!(ring.advance(last, ring.frames()), last);
            assert_eq!(ring.advance(3, 4), 7 % ring.frames());
        }
    }
}
