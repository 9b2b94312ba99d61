//! `veth-bench`: forwarding rate of the userspace switch against a direct veth path,
//! measured in the same run (root required).
//!
//! Five paths, each between fresh namespaces:
//! - direct: sender ns ──veth── receiver ns;
//! - switched: sender ns ──veth── switch ns ──veth── receiver ns, the switch being the
//!   engine's [`Switch`] core driven by the same AF_PACKET batched I/O as the
//!   congestion testbed (links paced at 400 Gb/s, i.e. not limiting);
//! - leaf–spine: the congestion testbed's fabric builder on a 2-leaf × 2-spine
//!   leaf–spine with one host per leaf: host 1 ──leaf 1──spine──leaf 0── host 0, three
//!   userspace switches (each in its own namespace, joined by veths) served by one loop
//!   (`veth_core::fabric::SwitchSet`), as the fabric runs are. Reported: frames received
//!   end to end, and frames forwarded by the loop (all switches; per switch = / 3);
//! - what-if: the same leaf–spine with its two switch-to-switch hops handed to the peer
//!   switch inside the loop instead of crossing a veth (see `leaf_spine`; not how the
//!   testbed runs), to measure what the kernel part of those hops costs;
//! - TX ring: the switched path with the switch sending through `PACKET_TX_RING`s
//!   ([`PacketSocket::send_ring`]) instead of `sendmmsg` (not how the engine sends:
//!   measured slower, see `PacketSocket::send_batch`).
//!
//! The sender blasts the same RoCEv2 frame with `sendmmsg` (batches of 64) for the
//! given time; the receiver counts frames from its receive ring. All paths use the
//! engine's I/O layer ([`PacketSocket`], [`afpacket::Waiter`] in the switch). Threads
//! are pinned so every trial places them alike (see `pin`), and every thread runs
//! `SCHED_FIFO` (see `realtime`): with only the switch real-time, as until session 8, a
//! loaded machine slowed the direct path's ordinary sender and receiver but not the
//! switch, and the ratios came out higher under load than on a quiet machine. Trials
//! alternate the paths, REPETITIONS times per frame size (the machine is shared and
//! noisy); reported are the medians of the received frames per second on each path, the
//! median of the per-trial ratios with its range, the direct sender's and the switch
//! thread's CPU time per frame (`getrusage(RUSAGE_THREAD)`): their quotient is what the
//! switch can reach whatever the load. Beside each, its user-space part (the kernel's
//! split of the same time, sampled at its tick): the user-space part is what the
//! switch's own code costs; the rest, the kernel's transmit and delivery, measured 1.04–
//! 1.10× the sender's whole CPU per frame (docs/veth.md, "Forwarding benchmark").
//! `VETH_BENCH_DEBUG=1` prints each trial.
//!
//! ```text
//! cargo run --release -p veth --bin veth-bench -- [SECONDS per trial] [REPETITIONS]
//! ```

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use cc_algos::{Bytes, Duration, Instant, Rate};
use veth::Testbed;
use veth::afpacket::{self, PacketSocket};
use veth::netns::Netns;
use veth_core::fabric::SwitchSet;
use veth_core::switch::{Switch, SwitchConfig};
use veth_core::wire::ib::{BthRepr, DEFAULT_PKEY, opcode};
use veth_core::wire::ipv4::Ecn;
use veth_core::wire::roce;

type BoxErr = Box<dyn std::error::Error + Send + Sync>;

/// The blasted frame: MACs of the `02:fb:…` device range, which no kernel interface of a
/// testbed carries (`congestion::star::device_mac`), so the frame is `PACKET_OTHERHOST`
/// for the first namespace on every path, as an emulated NIC's frames are.
fn frame(len: usize, dst: Ipv4Addr) -> Vec<u8> {
    let payload = len - roce::OVERHEAD;
    let r = roce::Repr {
        eth_dst: [2, 0xfb, 0xff, 0xff, 0xff, 0],
        eth_src: [2, 0xfb, 0xff, 0xff, 0xff, 1],
        ip_src: Ipv4Addr::new(10, 9, 0, 1),
        ip_dst: dst,
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        ident: 0,
        udp_src: 0xc001,
        bth: BthRepr {
            opcode: opcode::RC_SEND_ONLY,
            solicited: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            dest_qp: 17,
            ack_req: false,
            psn: 0,
        },
        aeth: None,
        payload_len: payload,
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b, &vec![0u8; payload]);
    b
}

/// Pin the calling thread to CPU `cpu` (modulo the CPUs there are), so every trial places
/// its threads the same way. Direct path: sender on CPU 0, receiver on CPU 1 (the
/// baseline gets a core each). Switched path: the switch alone on CPU 1 (real-time, as
/// in the engine: a receiver beside it was starved and its ring overflowed once the
/// switch saturated its core), sender and receiver on CPU 0.
fn pin(cpu: usize) {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % n, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The calling thread's CPU time so far: (user + system, user alone).
fn thread_cpu() -> (StdDuration, StdDuration) {
    // SAFETY: getrusage fills a zeroed rusage for the calling thread.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| StdDuration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime) + tv(ru.ru_stime), tv(ru.ru_utime))
}

/// Run the calling thread under `SCHED_FIFO` at `prio`, so a loaded machine's other
/// (normal) tasks do not decide the figures: every thread of every path gets the CPU it
/// asks for, as the engine's switch thread does. The kernel's real-time throttling
/// (`sched_rt_runtime_us`) still leaves 5 % of each CPU to the rest.
fn realtime(prio: i32) {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        eprintln!(
            "warning: bench thread not real-time ({}); figures will follow the machine's load",
            std::io::Error::last_os_error()
        );
    }
}

/// Frames a thread handled while counting, and its CPU time meanwhile.
#[derive(Debug, Clone, Copy, Default)]
struct Work {
    frames: u64,
    cpu: StdDuration,
    /// The part of `cpu` spent in user space (the rest is the kernel's).
    user: StdDuration,
}

impl Work {
    fn cpu_ns_per_frame(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.frames.max(1) as f64
    }

    fn user_ns_per_frame(&self) -> f64 {
        self.user.as_nanos() as f64 / self.frames.max(1) as f64
    }
}

/// Notes a thread's frame count and CPU time when counting starts, and gives the
/// difference at the end.
#[derive(Debug, Default)]
struct Meter(Option<(u64, (StdDuration, StdDuration))>);

impl Meter {
    fn tick(&mut self, counting: &AtomicBool, frames: u64) {
        if self.0.is_none() && counting.load(Ordering::Relaxed) {
            self.0 = Some((frames, thread_cpu()));
        }
    }

    fn done(&self, frames: u64) -> Work {
        self.0.map_or(Work::default(), |(f0, (c0, u0))| {
            let (c, u) = thread_cpu();
            Work {
                frames: frames - f0,
                cpu: c - c0,
                user: u - u0,
            }
        })
    }
}

/// Blast `f` on `sock` until `stop` (CPU 0, real-time priority 1); returns the frames
/// the kernel took and the sender's CPU time while counting.
fn sender(
    mut sock: PacketSocket,
    f: Vec<u8>,
    counting: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Work {
    pin(0);
    realtime(1);
    let batch: Vec<&[u8]> = (0..afpacket::BATCH).map(|_| &f[..]).collect();
    let (mut sent, mut meter) = (0u64, Meter::default());
    while !stop.load(Ordering::Relaxed) {
        meter.tick(&counting, sent);
        let n = sock.send_batch(&batch);
        sent += n as u64;
        if n == 0 {
            std::thread::yield_now();
        }
    }
    meter.done(sent)
}

/// How long the receiver sleeps once its ring is empty. It is a counting sink, not part
/// of what is measured: on the switched paths it shares CPU 0 with the sender, and with
/// the engine's 40 µs nap its wake-ups (timer interrupt, two context switches: costly
/// in this VM) took the sender ~40 % of CPU 0 — 1.9 µs of sender CPU per frame
/// against 1.0 µs on the direct path. Its ring holds ~2,500 frames: 250 µs at 1 Mpps
/// fill a tenth of it.
const RX_NAP: StdDuration = StdDuration::from_micros(250);

/// Count frames on `sock` between `start` and `stop` flags, at real-time priority 2:
/// it must get the CPU the moment its nap ends or its ring overflows (it did, under
/// load, at normal priority). Returns the frames its ring dropped.
fn receiver(
    mut sock: PacketSocket,
    cpu: usize,
    counting: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    count: Arc<AtomicU64>,
) -> u64 {
    pin(cpu);
    realtime(2);
    let mut counted = false;
    while !stop.load(Ordering::Relaxed) {
        let n = sock.recv_batch();
        if !counted && counting.load(Ordering::Relaxed) {
            // Drops before counting began are not this trial's.
            sock.read_kernel_drops();
            sock.kernel_drops = 0;
            counted = true;
        }
        if counting.load(Ordering::Relaxed) {
            count.fetch_add(n as u64, Ordering::Relaxed);
        }
        if !sock.readable() {
            std::thread::sleep(RX_NAP);
        }
    }
    sock.read_kernel_drops()
}

struct Measured {
    /// Frames received end to end per second.
    pps: f64,
    /// Seconds counted.
    secs: f64,
    /// The sender's frames and CPU while counting.
    sender: Work,
    /// The switch thread's frames forwarded (sent by any switch port) and CPU while
    /// counting (none on the direct path).
    switch: Option<Work>,
}

impl Measured {
    /// Frames sent by all switch ports per second (hops × end-to-end on a chain).
    fn forwarded_pps(&self) -> f64 {
        self.switch.map_or(0.0, |w| w.frames as f64 / self.secs)
    }

    fn switch_cpu_ns_per_frame(&self) -> f64 {
        self.switch.map_or(0.0, |w| w.cpu_ns_per_frame())
    }
}

/// The switches of a switched path, their sockets (by global port), and the global port
/// each port hands its frames to inside the loop instead of sending them on its veth
/// (only on the what-if path; see [`leaf_spine`]).
struct Switched {
    set: SwitchSet,
    socks: Vec<PacketSocket>,
    handoff: Vec<Option<usize>>,
}

impl Switched {
    /// Every port sends on its veth, as the engine's do.
    fn on_veths(set: SwitchSet, socks: Vec<PacketSocket>) -> Switched {
        let handoff = vec![None; socks.len()];
        Switched {
            set,
            socks,
            handoff,
        }
    }
}

/// The switch thread: every port of every switch of `set` served by one loop, as in the
/// engine. Returns the frames forwarded (sent by any switch port) while counting, and the
/// thread's CPU time meanwhile.
fn switch_loop(sw: Switched, stop: Arc<AtomicBool>, counting: Arc<AtomicBool>) -> Work {
    let Switched {
        mut set,
        mut socks,
        handoff,
    } = sw;
    afpacket::set_fine_timer_slack();
    pin(1);
    if let Err(e) = afpacket::set_realtime() {
        eprintln!("warning: the switch thread is not real-time ({e}); the engine's is");
    }
    let mut waiter = afpacket::Waiter::new(socks.iter().map(|s| s.raw_fd()).collect());
    let t0 = StdInstant::now();
    let mut pool = afpacket::FramePool::default();
    let n = socks.len();
    let mut out: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
    let (mut fwd, mut meter) = (0u64, Meter::default());
    // sendmmsg calls while counting: the frames per call say how far the switch's
    // syscalls are amortised (the sender's carry 64 frames each).
    let mut sends = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let metering = meter.0.is_some();
        meter.tick(&counting, fwd);
        if !metering && meter.0.is_some() {
            sends = 0;
        }
        let now = Instant::from_picos(t0.elapsed().as_nanos() as u64 * 1000);
        let mut moved = false;
        for (p, s) in socks.iter_mut().enumerate() {
            let k = s.recv_batch();
            moved |= k > 0;
            for i in 0..k {
                let f = pool.copy(s.frame(i));
                set.on_frame(now, p, f);
            }
        }
        let mut backlog = false;
        for (p, s) in socks.iter_mut().enumerate() {
            if let Some(q) = handoff[p] {
                // What-if: the peer switch takes the frame as if it came off the veth.
                for _ in 0..afpacket::BATCH {
                    let Some(f) = set.poll_transmit(now, p) else {
                        break;
                    };
                    set.on_frame(now, q, f);
                    fwd += 1;
                    moved = true;
                }
                continue;
            }
            while out[p].len() < afpacket::BATCH {
                match set.poll_transmit(now, p) {
                    Some(f) => out[p].push(f),
                    None => break,
                }
            }
            let k = s.send_ring(&out[p]);
            sends += u64::from(!out[p].is_empty());
            fwd += k as u64;
            moved |= k > 0;
            pool.recycle(out[p].drain(..k));
            backlog |= !out[p].is_empty();
        }
        // Never spin at real-time priority: only a readable ring skips the nap; frames
        // the kernel did not take wait for the next round.
        let more = socks.iter().any(|s| s.readable());
        let timeout = if more {
            0
        } else if backlog || set.next_wakeup(now).is_some() {
            afpacket::NAP.as_nanos() as u64
        } else {
            1_000_000
        };
        waiter.wait(moved || more, timeout);
    }
    let work = meter.done(fwd);
    if std::env::var_os("VETH_BENCH_DEBUG").is_some() {
        let drops: u64 = socks
            .iter_mut()
            .map(|s| {
                s.read_kernel_drops();
                s.kernel_drops
            })
            .sum();
        eprintln!(
            "switch: ring drops {drops} forwarded {} in {sends} sends cpu {:?} ({:.0} ns/frame, {:.0} of it user)",
            work.frames,
            work.cpu,
            work.cpu_ns_per_frame(),
            work.user_ns_per_frame()
        );
    }
    work
}

/// One trial: blast frames to `dst` on `tx_sock` for `secs`, count them on `rx_sock`,
/// through `sw` (switches and their sockets) or directly.
fn run_path(
    tx_sock: PacketSocket,
    rx_sock: PacketSocket,
    dst: Ipv4Addr,
    sw: Option<Switched>,
    len: usize,
    secs: f64,
) -> Result<Measured, BoxErr> {
    let stop = Arc::new(AtomicBool::new(false));
    let counting = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let sw_handle = match sw {
        Some(sw) => {
            let (stop, counting) = (stop.clone(), counting.clone());
            Some(
                std::thread::Builder::new()
                    .name("bench-switch".into())
                    .spawn(move || switch_loop(sw, stop, counting))?,
            )
        }
        None => None,
    };
    let rx_cpu = if sw_handle.is_some() { 0 } else { 1 };
    let rx_t = {
        let (c, s, n) = (counting.clone(), stop.clone(), count.clone());
        std::thread::Builder::new()
            .name("bench-rx".into())
            .spawn(move || receiver(rx_sock, rx_cpu, c, s, n))?
    };
    let f = frame(len, dst);
    let tx_t = {
        let (c, s) = (counting.clone(), stop.clone());
        std::thread::Builder::new()
            .name("bench-tx".into())
            .spawn(move || sender(tx_sock, f, c, s))?
    };
    // Warm up, then count for `secs`.
    std::thread::sleep(StdDuration::from_millis(300));
    let backlog0 = backlog_drops();
    counting.store(true, Ordering::Relaxed);
    let t = StdInstant::now();
    std::thread::sleep(StdDuration::from_secs_f64(secs));
    let got = count.load(Ordering::Relaxed);
    let el = t.elapsed().as_secs_f64();
    let backlog = backlog_drops() - backlog0;
    stop.store(true, Ordering::Relaxed);
    let sender = tx_t.join().expect("sender thread");
    let rx_drops = rx_t.join().expect("receiver thread");
    if std::env::var_os("VETH_BENCH_DEBUG").is_some() {
        eprintln!(
            "sent {} received {got} in {el:.2}s (receiver ring drops {rx_drops}, backlog drops {backlog}); sender CPU {:.0} ns/frame, {:.0} of it user",
            sender.frames,
            sender.cpu_ns_per_frame(),
            sender.user_ns_per_frame()
        );
    }
    let switch = sw_handle.map(|h| h.join().expect("switch thread"));
    Ok(Measured {
        pps: got as f64 / el,
        secs: el,
        sender,
        switch,
    })
}

/// Frames the kernel dropped from its per-CPU input backlogs (`/proc/net/softnet_stat`,
/// second column, all CPUs): a veth hands every frame to the backlog of the sending CPU,
/// and the backlog overflows when its softirq is deferred to a `ksoftirqd` that cannot run.
fn backlog_drops() -> u64 {
    softnet_drops(&std::fs::read_to_string("/proc/net/softnet_stat").unwrap_or_default())
}

/// The sum of the second (hexadecimal) column of a `softnet_stat` text, one line per CPU.
fn softnet_drops(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|d| u64::from_str_radix(d, 16).ok())
        .sum()
}

/// The 1-minute load average (`/proc/loadavg`), for the record beside each figure.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The single-switch path's switch: port 0 in, port 1 out toward `dst`. `tx_ring`: its
/// sockets send through a `PACKET_TX_RING` ([`PacketSocket::send_ring`]) instead of
/// `sendmmsg` — the experiment of the fifth path; the engine uses `sendmmsg`.
fn one_switch(
    ns: &Netns,
    mac_in: [u8; 6],
    mac_out: [u8; 6],
    dst: Ipv4Addr,
    tx_ring: bool,
) -> Result<Switched, BoxErr> {
    let open = if tx_ring {
        PacketSocket::open_with_tx_ring
    } else {
        PacketSocket::open
    };
    let socks = vec![open(ns, "s0")?, open(ns, "s1")?];
    let routes = HashMap::from([(dst, vec![1usize])]);
    let mut c = SwitchConfig::new(
        vec![mac_in, mac_out],
        Rate::gbps(400),
        Bytes(4_000_000),
        routes,
    );
    c.pfc_priorities = 0;
    c.pacing_burst = Duration::micros(100);
    Ok(Switched::on_veths(SwitchSet::single(Switch::new(c)), socks))
}

/// A 2-leaf × 2-spine leaf–spine with one host per leaf, built as the congestion
/// testbed builds it (links at 400 Gb/s: not limiting; no ECN, no PFC): host 1 sends to
/// host 0 through leaf 1, one spine and leaf 0, three userspace switches in one loop.
///
/// `in_loop`: the what-if path — a frame from one switch to another is handed to the
/// peer switch inside the loop (`Switch::on_frame` on the peer's port) instead of
/// crossing their veth; only the hosts' links carry frames. This is *not* how the
/// testbed runs (every hop there is a real frame on a veth): it measures what the
/// kernel's part of the two inner hops costs.
fn leaf_spine(in_loop: bool) -> Result<(Testbed, PacketSocket, PacketSocket, Switched), BoxErr> {
    use veth::congestion::{CongestionConfig, fabric};
    let mut cfg = CongestionConfig::on(fabric::Topology::LeafSpine {
        leaves: 2,
        spines: 2,
        hosts_per_leaf: 1,
    });
    cfg.link_rate = Rate::gbps(400);
    cfg.virtual_rate = cfg.link_rate;
    cfg.ecn = None;
    cfg.pfc = None;
    cfg.switch_pacing_burst = Duration::micros(100);
    let b = fabric::build(&cfg, &scenario::Workplan::default(), cfg.scale()?)?;
    let mut hosts = b.sockets.hosts.into_iter();
    let rx = hosts.next().ok_or("host 0")?;
    let tx = hosts.next().ok_or("host 1")?;
    let mut sw = Switched::on_veths(b.switches, b.sockets.switch);
    if in_loop {
        // The port at the other end of a switch-to-switch cable: the peer's port whose
        // peer is us (one cable per leaf–spine pair here).
        let names = &b.port_names;
        for (g, n) in names.iter().enumerate() {
            sw.handoff[g] = names
                .iter()
                .position(|m| n.peer_tier > 0 && m.switch == n.peer && m.peer == n.switch);
        }
        if sw.handoff.iter().filter(|h| h.is_some()).count() != 8 {
            return Err("leaf–spine 2×2: expected 8 switch-to-switch ports".into());
        }
    }
    Ok((b.tb, tx, rx, sw))
}

fn main() -> Result<(), BoxErr> {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1.0);
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(5);
    if reps == 0 || secs.is_nan() || secs <= 0.0 {
        return Err("usage: veth-bench [SECONDS per trial > 0] [REPETITIONS >= 1]".into());
    }
    veth::netns::install_signal_cleanup()?;
    let mut tb = Testbed::new()?;
    let a = tb.add_netns("ba")?;
    let b = tb.add_netns("bb")?;
    let sa = tb.add_netns("sa")?;
    let ss = tb.add_netns("ss")?;
    let sb = tb.add_netns("sb")?;
    tb.connect(&a, "d0", &b, "d1")?;
    let l_in = tb.connect(&sa, "e0", &ss, "s0")?;
    let l_out = tb.connect(&ss, "s1", &sb, "e1")?;
    println!(
        "{reps} alternating trials of {secs} s per path and size; medians (ratio: median of the per-trial ratios, min–max in brackets)"
    );
    println!(
        "| frame | direct veth (pps) | sender CPU per frame (direct) | via userspace switch (pps) | ratio | switch CPU per forwarded frame | via leaf–spine, 3 switches (pps) | ratio | fabric loop: frames forwarded/s (all switches) | per switch | CPU per forwarded frame |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let dst = Ipv4Addr::new(10, 9, 0, 2);
    let fabric_dst = veth::congestion::star::host_ip(0);
    let mut what_if = Vec::new();
    let mut tx_ring = Vec::new();
    for len in [64usize, 1500] {
        let mut m: [Vec<f64>; 16] = Default::default();
        for _ in 0..reps {
            let d = run_path(
                PacketSocket::open(&a, "d0")?,
                PacketSocket::open(&b, "d1")?,
                dst,
                None,
                len,
                secs,
            )?;
            let s = run_path(
                PacketSocket::open(&sa, "e0")?,
                PacketSocket::open(&sb, "e1")?,
                dst,
                Some(one_switch(&ss, l_in.b_mac, l_out.a_mac, dst, false)?),
                len,
                secs,
            )?;
            let r = run_path(
                PacketSocket::open(&sa, "e0")?,
                PacketSocket::open(&sb, "e1")?,
                dst,
                Some(one_switch(&ss, l_in.b_mac, l_out.a_mac, dst, true)?),
                len,
                secs,
            )?;
            let (fab_tb, tx, rx, sw) = leaf_spine(false)?;
            let f = run_path(tx, rx, fabric_dst, Some(sw), len, secs)?;
            drop(fab_tb);
            let (fab_tb, tx, rx, sw) = leaf_spine(true)?;
            let h = run_path(tx, rx, fabric_dst, Some(sw), len, secs)?;
            drop(fab_tb);
            for (v, x) in m.iter_mut().zip([
                d.pps,
                s.pps,
                s.pps / d.pps,
                s.switch_cpu_ns_per_frame(),
                f.pps,
                f.pps / d.pps,
                f.forwarded_pps(),
                f.switch_cpu_ns_per_frame(),
                d.sender.cpu_ns_per_frame(),
                h.pps / d.pps,
                h.switch_cpu_ns_per_frame() * h.forwarded_pps() / h.pps.max(1.0),
                f.switch_cpu_ns_per_frame() * f.forwarded_pps() / f.pps.max(1.0),
                r.pps / d.pps,
                r.switch_cpu_ns_per_frame(),
                s.switch.map_or(0.0, |w| w.user_ns_per_frame()),
                d.sender.user_ns_per_frame(),
            ]) {
                v.push(x);
            }
            if std::env::var_os("VETH_BENCH_DEBUG").is_some() {
                eprintln!(
                    "trial: direct {:.0} pps (sender {:.0} ns/frame), 1 switch {:.2} ({:.0} ns/frame), 3 switches {:.2} ({:.0} ns per forwarded frame), inner hops in the loop {:.2}; load {}",
                    d.pps,
                    d.sender.cpu_ns_per_frame(),
                    s.pps / d.pps,
                    s.switch_cpu_ns_per_frame(),
                    f.pps / d.pps,
                    f.switch_cpu_ns_per_frame(),
                    h.pps / d.pps,
                    loadavg()
                );
            }
        }
        let range = |v: &[f64]| {
            v.iter()
                .fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)))
        };
        let ((lo, hi), (flo, fhi), (hlo, hhi)) = (range(&m[2]), range(&m[5]), range(&m[9]));
        let (rlo, rhi) = range(&m[12]);
        let med: Vec<f64> = m.iter().map(|v| median(v.clone())).collect();
        println!(
            "| {len} B | {:.0} | {:.0} ns ({:.0} user) | {:.0} | {:.2} [{lo:.2}–{hi:.2}] | {:.0} ns ({:.0} user) | {:.0} | {:.2} [{flo:.2}–{fhi:.2}] | {:.0} | {:.0} | {:.0} ns |",
            med[0],
            med[8],
            med[15],
            med[1],
            med[2],
            med[3],
            med[14],
            med[4],
            med[5],
            med[6],
            med[6] / 3.0,
            med[7],
        );
        what_if.push(format!(
            "| {len} B | {:.0} ns | {:.2} [{flo:.2}–{fhi:.2}] | {:.0} ns | {:.2} [{hlo:.2}–{hhi:.2}] | {:.0} ns |",
            med[8], med[5], med[11], med[9], med[10],
        ));
        tx_ring.push(format!(
            "| {len} B | {:.2} [{lo:.2}–{hi:.2}] | {:.0} ns | {:.2} [{rlo:.2}–{rhi:.2}] | {:.0} ns |",
            med[2], med[3], med[12], med[13],
        ));
    }
    println!();
    println!(
        "Leaf–spine, 3 switches: every hop on a veth (as the testbed runs) vs the two switch-to-switch hops handed over inside the loop (what-if)"
    );
    println!(
        "| frame | sender CPU per frame (direct) | ratio, veths | loop CPU per end-to-end frame, veths | ratio, inner hops in the loop | loop CPU per end-to-end frame, inner hops in the loop |"
    );
    println!("|---|---|---|---|---|---|");
    for row in what_if {
        println!("{row}");
    }
    println!();
    println!("One switch: sending with sendmmsg (as the engine does) vs through a PACKET_TX_RING");
    println!(
        "| frame | ratio, sendmmsg | switch CPU per forwarded frame | ratio, TX ring | switch CPU per forwarded frame |"
    );
    println!("|---|---|---|---|---|");
    for row in tx_ring {
        println!("{row}");
    }
    println!("load average at the end: {}", loadavg());
    tb.teardown()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softnet_drops_sums_the_hex_drop_column_of_every_cpu() {
        let text = "00a1b2c3 0000001f 00000000 00000000\n0002f0aa 00000100 00000003 00000000\n";
        assert_eq!(softnet_drops(text), 0x1f + 0x100);
        assert_eq!(softnet_drops(""), 0);
    }

    #[test]
    fn a_meter_that_never_saw_counting_reports_nothing() {
        let m = Meter::default();
        let w = m.done(1000);
        assert_eq!((w.frames, w.cpu), (0, StdDuration::ZERO));
        // Counting from the start: frames since the tick, CPU never negative.
        let counting = AtomicBool::new(true);
        let mut m = Meter::default();
        m.tick(&counting, 10);
        m.tick(&counting, 50);
        assert_eq!(m.done(110).frames, 100);
    }
}
