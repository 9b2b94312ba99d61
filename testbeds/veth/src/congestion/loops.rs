//! The two real-time event loops of a congestion run — one thread for the switch (all its
//! ports' sockets), one for all hosts — and the stop both obey: the hosts' loop ends the
//! run (all flows done, the scenario's stop, the wall limit, or a stop from outside) and
//! the switch loop stops with it; a switch loop that fails stops the hosts at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cc_algos::{Duration, Instant};
use veth_core::endpoint::{Completed, Host, TimeScale};
use veth_core::fabric::SwitchSet;
use veth_core::switch::PortCounters;

use super::CongestionConfig;
use super::capture::CaptureSpec;
use super::reaction::CcSample;
use super::star::Sockets;
use super::telemetry::Live;
use crate::afpacket::{self, PacketSocket};
use crate::{Error, Result};
use scenario::Workplan;

struct Clock(std::time::Instant);
impl Clock {
    fn now(&self) -> Instant {
        Instant::from_picos(self.0.elapsed().as_nanos() as u64 * 1000)
    }
}

/// How far an event loop fell behind (real time): for each iteration, the time from its
/// start to the next iteration's start minus the sleep it asked for — the iteration's
/// own work plus any delay of the OS in running it again. While a loop is behind, the
/// switch does not forward (its rings fill unseen by PFC and ECN) or the hosts do not
/// send, so a run with a large figure is not a faithful emulation; the report says so
/// instead of hiding it.
#[derive(Debug, Default)]
struct Lateness {
    start: Option<(std::time::Instant, std::time::Duration)>,
    max: std::time::Duration,
    /// Gaps over 500 µs: (when, how long), for `FABRIC_VETH_DEBUG`.
    long: Vec<(std::time::Instant, std::time::Duration)>,
}

impl Lateness {
    /// At the top of an iteration.
    fn on_wake(&mut self) {
        let now = std::time::Instant::now();
        if let Some((start, sleep)) = self.start {
            let behind = now.duration_since(start).saturating_sub(sleep);
            self.max = self.max.max(behind);
            if behind > std::time::Duration::from_micros(500) && self.long.len() < 64 {
                self.long.push((now, behind));
            }
        }
        self.start = Some((now, std::time::Duration::ZERO));
    }

    /// Before waiting: the loop asks to sleep at most `sleep`.
    fn sleeping(&mut self, sleep: std::time::Duration) {
        if let Some((_, s)) = &mut self.start {
            *s = sleep;
        }
    }

    fn debug(&self, what: &str, t0: std::time::Instant) {
        if std::env::var_os("FABRIC_VETH_DEBUG").is_some() {
            let v: Vec<String> = self
                .long
                .iter()
                .map(|(t, d)| format!("{:.1}ms:{}us", (*t - t0).as_secs_f64() * 1e3, d.as_micros()))
                .collect();
            eprintln!("{what} gaps > 500 us: {}", v.join(" "));
        }
    }

    fn max_us(&self) -> f64 {
        self.max.as_secs_f64() * 1e6
    }
}

/// What an event loop did and what it cost: its iterations, the frames it read and
/// sent, its `sendmmsg` calls and its thread's CPU time (`getrusage(RUSAGE_THREAD)`).
/// CPU per frame against the forwarding benchmark's says whether the loop pays only the
/// kernel's per-frame cost or more (per-iteration walks, wake-ups); its share of the
/// run's wall time says whether it was saturated (docs/veth.md, "Why the fabric loop
/// falls behind at 1 Gb/s").
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LoopLoad {
    pub iterations: u64,
    pub frames_in: u64,
    pub frames_out: u64,
    pub send_calls: u64,
    /// CPU time of the loop's thread (µs).
    pub cpu_us: f64,
    /// Wall time the loop ran (µs).
    pub wall_us: f64,
}

impl LoopLoad {
    /// Share of its wall time the loop's thread was on a CPU.
    pub fn busy(&self) -> f64 {
        if self.wall_us > 0.0 {
            self.cpu_us / self.wall_us
        } else {
            0.0
        }
    }

    /// CPU per frame sent (ns); 0 when nothing was sent.
    pub fn cpu_ns_per_frame_out(&self) -> f64 {
        if self.frames_out > 0 {
            self.cpu_us * 1e3 / self.frames_out as f64
        } else {
            0.0
        }
    }

    /// Frames sent per iteration.
    pub fn frames_per_iteration(&self) -> f64 {
        if self.iterations > 0 {
            self.frames_out as f64 / self.iterations as f64
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for LoopLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} iterations, {} frames in, {} out ({:.2} per iteration, {} sendmmsg), CPU {:.1} ms of {:.1} ms ({:.0} %), {:.0} ns per frame out",
            self.iterations,
            self.frames_in,
            self.frames_out,
            self.frames_per_iteration(),
            self.send_calls,
            self.cpu_us / 1e3,
            self.wall_us / 1e3,
            self.busy() * 100.0,
            self.cpu_ns_per_frame_out()
        )
    }
}

/// CPU time of the calling thread.
fn thread_cpu() -> std::time::Duration {
    // SAFETY: getrusage fills a zeroed rusage for the calling thread.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Measures a loop from its start: see [`LoopLoad`].
struct LoadMeter {
    load: LoopLoad,
    cpu0: std::time::Duration,
    wall0: std::time::Instant,
}

impl LoadMeter {
    fn start() -> LoadMeter {
        LoadMeter {
            load: LoopLoad::default(),
            cpu0: thread_cpu(),
            wall0: std::time::Instant::now(),
        }
    }

    fn finish(mut self) -> LoopLoad {
        self.load.cpu_us = (thread_cpu().saturating_sub(self.cpu0)).as_secs_f64() * 1e6;
        self.load.wall_us = self.wall0.elapsed().as_secs_f64() * 1e6;
        self.load
    }
}

/// Frames one emulated host may send per visit of the host loop.
const HOST_BATCH: usize = 16;

/// Wait until `next` (at most 500 µs) for the loop's sockets; `busy`: this iteration
/// moved frames. A ring that already holds frames means no wait at all.
fn sleep_until(
    waiter: &mut afpacket::Waiter,
    busy: bool,
    readable: bool,
    now: Instant,
    next: Option<Instant>,
) -> std::time::Duration {
    let max = Duration::micros(500);
    let wait = match next {
        _ if readable => Duration::ZERO,
        Some(t) if t <= now => Duration::ZERO,
        Some(t) => (t - now).min(max),
        None => max,
    };
    waiter.wait(busy || readable, wait.as_nanos())
}

/// What the switch loop hands back.
pub(super) struct SwitchRan {
    pub switch: SwitchSet,
    pub sockets: Vec<PacketSocket>,
    /// Each port's counters at each sample.
    pub port_series: Vec<Vec<PortSample>>,
    /// How far (real µs) the loop fell behind at worst.
    pub late_us: f64,
    pub load: LoopLoad,
}

/// One port's counters at one sample: its queue now, and cumulative ECN marks, PAUSE
/// frames sent and time held by a received PAUSE (real time).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PortSample {
    pub queue_bytes: u64,
    pub ecn_marks: u64,
    pub pauses_sent: u64,
    pub paused: Duration,
}

impl PortSample {
    fn of(switch: &SwitchSet, port: usize, now: Instant) -> PortSample {
        let c = switch.counters(port);
        PortSample {
            queue_bytes: c.queue_bytes,
            ecn_marks: c.ecn_marks,
            pauses_sent: c.pauses_sent,
            paused: switch.paused_time_at(port, now),
        }
    }
}

/// What the hosts' loop hands back.
pub(super) struct HostsRan {
    pub hosts: Vec<Host>,
    pub sockets: Vec<PacketSocket>,
    /// Bytes delivered per flow per sample.
    pub delivered_series: HashMap<u32, Vec<u64>>,
    /// When each sample was taken (the run's clock): at or after its slot on the
    /// sampling grid, later when the loop ran late.
    pub sample_times: Vec<Instant>,
    /// Controller state per flow per sample.
    pub cc_series: HashMap<u32, Vec<CcSample>>,
    pub completed: Completed,
    /// When the run ended (real clock of the run).
    pub end: Instant,
    pub late_us: f64,
    pub load: LoopLoad,
    /// The live telemetry, for the run's last snapshot.
    pub live: Live,
}

/// Both loops' results.
pub(super) struct Ran {
    pub switch: SwitchRan,
    pub hosts: HostsRan,
}

/// The switch's per-port counters as of its latest sample, for the hosts' loop to put in
/// the live snapshots.
type SharedCounters = Arc<Mutex<Vec<PortCounters>>>;

/// Run both loops until the run ends; see the module docs.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    cfg: &CongestionConfig,
    plan: &Workplan,
    scale: TimeScale,
    stop: &Arc<AtomicBool>,
    sockets: Sockets,
    switch: SwitchSet,
    hosts: Vec<Host>,
    live: Live,
    capture: Option<CaptureSpec>,
) -> Result<Ran> {
    let clock = Arc::new(Clock(std::time::Instant::now()));
    let sample_real = scale.dur_to_real(cfg.sample);
    let shared: SharedCounters = Arc::new(Mutex::new(Vec::new()));
    let sw = SwitchLoop {
        switch,
        sockets: sockets.switch,
        capture,
        sample_real,
        clock: clock.clone(),
        stop: stop.clone(),
        shared: shared.clone(),
    };
    let sw_thread = std::thread::Builder::new()
        .name("veth-switch".into())
        .spawn(move || sw.run())
        .map_err(|e| Error::Os {
            what: "spawn switch thread".into(),
            source: e,
        })?;
    let hl = HostsLoop {
        hosts,
        sockets: sockets.hosts,
        sized: plan
            .flows
            .iter()
            .filter(|f| f.size.is_some())
            .map(|f| (f.id, f.dst))
            .collect(),
        flow_ids: plan.flows.iter().map(|f| f.id).collect(),
        real_stop: plan.stop.map(|s| scale.to_real(s)),
        sample_real,
        wall_limit: cfg.wall_limit,
        clock,
        stop: stop.clone(),
        shared,
        live,
    };
    let host_thread = std::thread::Builder::new()
        .name("veth-hosts".into())
        .spawn(move || hl.run())
        .map_err(|e| Error::Os {
            what: "spawn host thread".into(),
            source: e,
        })?;
    let host_res = host_thread.join();
    stop.store(true, Ordering::Relaxed);
    let sw_res = sw_thread.join();
    // The switch's error first: when it failed, the hosts stopped because of it.
    let switch = sw_res.map_err(|_| Error::Invalid("switch thread panicked".into()))??;
    let hosts = host_res.map_err(|_| Error::Invalid("host thread panicked".into()))??;
    Ok(Ran { switch, hosts })
}

/// The switch thread: its sockets, the switch, the capture of some ports.
struct SwitchLoop {
    switch: SwitchSet,
    sockets: Vec<PacketSocket>,
    capture: Option<CaptureSpec>,
    sample_real: Duration,
    clock: Arc<Clock>,
    stop: Arc<AtomicBool>,
    shared: SharedCounters,
}

impl SwitchLoop {
    /// Run until stopped; on failure, stop the hosts too.
    fn run(self) -> Result<SwitchRan> {
        let stop = self.stop.clone();
        let r = self.forward();
        if r.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        r
    }

    fn forward(mut self) -> Result<SwitchRan> {
        afpacket::set_fine_timer_slack();
        afpacket::set_realtime().map_err(|e| Error::Os {
            what: "SCHED_FIFO for the switch thread".into(),
            source: e,
        })?;
        let mut pcap = self.capture.as_ref().map(CaptureSpec::open).transpose()?;
        let (clock, switch, socks) = (&self.clock, &mut self.switch, &mut self.sockets);
        let n = socks.len();
        let mut waiter = afpacket::Waiter::new(socks.iter().map(|s| s.raw_fd()).collect());
        let mut pool = afpacket::FramePool::default();
        let mut pending: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        let mut port_series: Vec<Vec<PortSample>> = vec![Vec::new(); n];
        let mut next_sample = Instant::ZERO;
        let mut late = Lateness::default();
        let mut meter = LoadMeter::start();
        while !self.stop.load(Ordering::Relaxed) {
            let now = clock.now();
            late.on_wake();
            meter.load.iterations += 1;
            let mut busy = false;
            for (p, s) in socks.iter_mut().enumerate() {
                let k = s.recv_batch();
                busy |= k > 0;
                meter.load.frames_in += k as u64;
                for i in 0..k {
                    let f = pool.copy(s.frame(i));
                    if let Some(c) = pcap.as_mut() {
                        c.frame(p, now, &f);
                    }
                    switch.on_frame(now, p, f);
                }
            }
            switch.on_timeout(now);
            for p in 0..n {
                while pending[p].len() < afpacket::BATCH {
                    match switch.poll_transmit(now, p) {
                        Some(f) => pending[p].push(f),
                        None => break,
                    }
                }
                if pending[p].is_empty() {
                    continue;
                }
                let sent = socks[p].send_batch(&pending[p]);
                busy |= sent > 0;
                meter.load.send_calls += pending[p].len().div_ceil(afpacket::BATCH) as u64;
                meter.load.frames_out += sent as u64;
                if let Some(c) = pcap.as_mut() {
                    for f in &pending[p][..sent] {
                        c.frame(p, now, f);
                    }
                }
                pool.recycle(pending[p].drain(..sent));
            }
            if now >= next_sample {
                for (p, q) in port_series.iter_mut().enumerate() {
                    q.push(PortSample::of(switch, p, now));
                }
                publish(&self.shared, switch);
                next_sample += self.sample_real;
            }
            let mut next = switch.next_wakeup(now);
            if pending.iter().any(|p| !p.is_empty()) {
                next = Some(now + Duration::micros(20));
            }
            let next = Some(next.map_or(next_sample, |t| t.min(next_sample)));
            let readable = socks.iter().any(|s| s.readable());
            let slept = sleep_until(&mut waiter, busy, readable, clock.now(), next);
            late.sleeping(slept);
        }
        if let Some(c) = pcap.as_mut() {
            c.finish()?;
        }
        for s in socks.iter_mut() {
            s.read_kernel_drops();
        }
        publish(&self.shared, switch);
        late.debug("switch", clock.0);
        let load = meter.finish();
        if std::env::var_os("FABRIC_VETH_DEBUG").is_some() {
            eprintln!("switch loop: {load}");
        }
        Ok(SwitchRan {
            switch: self.switch,
            sockets: self.sockets,
            port_series,
            late_us: late.max_us(),
            load,
        })
    }
}

/// Copy the switch's port counters where the hosts' loop reads them.
fn publish(shared: &SharedCounters, switch: &SwitchSet) {
    let c: Vec<PortCounters> = (0..switch.num_ports())
        .map(|p| switch.counters(p).clone())
        .collect();
    if let Ok(mut g) = shared.lock() {
        *g = c;
    }
}

/// The hosts' thread: every emulated NIC and its flows.
struct HostsLoop {
    hosts: Vec<Host>,
    sockets: Vec<PacketSocket>,
    /// (flow, destination) of the sized flows.
    sized: Vec<(u32, u32)>,
    flow_ids: Vec<u32>,
    real_stop: Option<Instant>,
    sample_real: Duration,
    wall_limit: std::time::Duration,
    clock: Arc<Clock>,
    stop: Arc<AtomicBool>,
    shared: SharedCounters,
    live: Live,
}

impl HostsLoop {
    fn run(mut self) -> Result<HostsRan> {
        afpacket::set_fine_timer_slack();
        // The hosts' loop is real-time too: when a build or another test took its CPU,
        // the emulated NICs fell below line rate together (an 8:1 incast that never
        // congested) or their receive rings overflowed.
        if let Err(e) = afpacket::set_realtime() {
            self.stop.store(true, Ordering::Relaxed);
            return Err(Error::Os {
                what: "SCHED_FIFO for the hosts thread".into(),
                source: e,
            });
        }
        let clock = self.clock.clone();
        let mut waiter = afpacket::Waiter::new(self.sockets.iter().map(|s| s.raw_fd()).collect());
        let mut completed: Completed = Completed::new();
        let mut next_sample = Instant::ZERO;
        let mut pending: Vec<Vec<Vec<u8>>> = vec![Vec::new(); self.hosts.len()];
        let mut delivered_series: HashMap<u32, Vec<u64>> =
            self.flow_ids.iter().map(|&f| (f, Vec::new())).collect();
        let mut cc_series: HashMap<u32, Vec<CcSample>> =
            self.flow_ids.iter().map(|&f| (f, Vec::new())).collect();
        let mut sample_times = Vec::new();
        let wall_start = std::time::Instant::now();
        let mut late = Lateness::default();
        let mut meter = LoadMeter::start();
        let end = loop {
            late.on_wake();
            meter.load.iterations += 1;
            let busy = self.visit_hosts(&completed, &mut pending, &mut meter.load);
            let now = clock.now();
            self.note_completions(&mut completed);
            if now >= next_sample {
                self.sample(now, &mut delivered_series, &mut cc_series);
                sample_times.push(now);
                next_sample += self.sample_real;
            }
            let all_done = completed.len() == self.sized.len()
                && self.hosts.iter().all(|h| h.senders_done(now));
            let past_stop = self.real_stop.is_some_and(|s| now >= s);
            let stopped = self.stop.load(Ordering::Relaxed);
            if all_done || past_stop || stopped || wall_start.elapsed() > self.wall_limit {
                break now;
            }
            let mut next = self
                .hosts
                .iter()
                .filter_map(|h| h.next_wakeup(now, &completed))
                .min();
            if pending.iter().any(|p| !p.is_empty()) {
                next = Some(now + Duration::micros(20));
            }
            let next = Some(next.map_or(next_sample, |t| t.min(next_sample)));
            let readable = self.sockets.iter().any(|s| s.readable());
            let slept = sleep_until(&mut waiter, busy, readable, clock.now(), next);
            late.sleeping(slept);
        };
        self.stop.store(true, Ordering::Relaxed);
        late.debug("hosts", clock.0);
        let load = meter.finish();
        if std::env::var_os("FABRIC_VETH_DEBUG").is_some() {
            eprintln!("hosts loop: {load}");
        }
        for s in &mut self.sockets {
            s.read_kernel_drops();
        }
        Ok(HostsRan {
            hosts: self.hosts,
            sockets: self.sockets,
            delivered_series,
            sample_times,
            cc_series,
            completed,
            end,
            late_us: late.max_us(),
            load,
            live: self.live,
        })
    }

    /// One visit of every host. Each host reads its own ring right before it sends, so a
    /// PAUSE (or a CNP, a credit) that arrived while the other hosts were busy is obeyed
    /// before its next frame, as a NIC would; and it sends at most HOST_BATCH frames per
    /// visit, which bounds what it can put on the wire after a PAUSE reached it. Returns
    /// whether any frame moved.
    fn visit_hosts(
        &mut self,
        completed: &Completed,
        pending: &mut [Vec<Vec<u8>>],
        load: &mut LoopLoad,
    ) -> bool {
        let mut busy = false;
        let mut out: Vec<Vec<u8>> = Vec::new();
        for (i, h) in self.hosts.iter_mut().enumerate() {
            let now = self.clock.now();
            let s = &mut self.sockets[i];
            let k = s.recv_batch();
            busy |= k > 0;
            load.frames_in += k as u64;
            for j in 0..k {
                h.on_frame(now, s.frame(j));
            }
            s.release_batch();
            h.on_timeout(now);
            if pending[i].len() < HOST_BATCH {
                out.clear();
                h.poll_transmit(now, completed, &mut out, HOST_BATCH - pending[i].len());
                pending[i].append(&mut out);
            }
            if !pending[i].is_empty() {
                let sent = s.send_batch(&pending[i]);
                busy |= sent > 0;
                load.send_calls += pending[i].len().div_ceil(afpacket::BATCH) as u64;
                load.frames_out += sent as u64;
                pending[i].drain(..sent);
            }
        }
        busy
    }

    /// Mark the sized flows whose receiver has every byte.
    fn note_completions(&self, completed: &mut Completed) {
        for &(id, dst) in &self.sized {
            if !completed.contains(&id)
                && self.hosts[dst as usize]
                    .recv
                    .get(&id)
                    .is_some_and(|r| r.completed.is_some())
            {
                completed.insert(id);
            }
        }
    }

    /// Record the series and send a live snapshot.
    fn sample(
        &mut self,
        now: Instant,
        delivered: &mut HashMap<u32, Vec<u64>>,
        cc: &mut HashMap<u32, Vec<CcSample>>,
    ) {
        for h in &self.hosts {
            for (id, r) in &h.recv {
                if let Some(v) = delivered.get_mut(id) {
                    v.push(r.bytes);
                }
            }
            for f in &h.flows {
                if let Some(v) = cc.get_mut(&f.id) {
                    v.push(CcSample::of(&f.cc, f.cnps));
                }
            }
        }
        let ports = self.shared.lock().map(|g| g.clone()).unwrap_or_default();
        self.live.send(now, &ports, &self.hosts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_load_divides_cpu_by_frames_and_wall_time() {
        let l = LoopLoad {
            iterations: 100,
            frames_in: 900,
            frames_out: 1000,
            send_calls: 200,
            cpu_us: 3_500.0,
            wall_us: 5_000.0,
        };
        assert_eq!(l.busy(), 0.7);
        assert_eq!(l.cpu_ns_per_frame_out(), 3_500.0);
        assert_eq!(l.frames_per_iteration(), 10.0);
        let s = l.to_string();
        assert!(
            s.contains("10.00 per iteration") && s.contains("(70 %)"),
            "{s}"
        );
        // Nothing sent, nothing run: no division by zero.
        let idle = LoopLoad::default();
        assert_eq!(
            (
                idle.busy(),
                idle.cpu_ns_per_frame_out(),
                idle.frames_per_iteration()
            ),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn the_meter_counts_this_thread_s_cpu() {
        let m = LoadMeter::start();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(20) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let l = m.finish();
        assert!(l.cpu_us > 0.0 && l.wall_us >= 20_000.0, "{l:?}");
    }
}
