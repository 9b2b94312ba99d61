//! Convergence side by side on one fabric: a switch–switch link fails (set by another
//! program — the `ip` or `tc` command — never by the repairing code), and the time until
//! every switch's FIB equals the tables of the live topology is measured, then the same
//! for the link coming back. Three repairers on the same design:
//!
//! - **BGP with BFD**: the FRR testbed with the export's BFD (300 ms × 3);
//! - **BGP alone**: the same without BFD (the hold timer, `timers 3 9`);
//! - **central**: fabric's own repair on the routed testbed — the carrier event from the
//!   kernel's multicast link group, then an incremental re-route in `topo` and the
//!   changed entries programmed (what `fabric serve --testbed` does).
//!
//! Two kinds of failure: **carrier** (`ip link set IF down` on one end: the other end
//! loses carrier) and **silent** (`tc qdisc replace dev IF root pfifo limit 0` on both
//! ends: carrier stays up, every packet is dropped — there is no netem here). The FRR
//! times are observed by polling every FIB (a full check per round; its duration is the
//! resolution, reported) until every prefix leaves through the ports the live topology's
//! tables want — shares aside, since BGP weights the survivors by link bandwidth (1:2
//! after an aggregation–core failure) where topo's tables split equally; central repair is synchronous, so its time is when the last
//! switch's routes were acknowledged. A failure not repaired within the timeout is
//! counted as such, not timed.
//!
//! Meanwhile a [`LossProbe`] sends a datagram between every pair of hosts on different
//! leaves every [`PROBE_INTERVAL`]; each failure reports what the rounds sent between
//! the failure and the last FIB repaired lost (until the link came back when it was not
//! repaired), and the same for the return.

use std::time::{Duration, Instant};

use topo::{Fabric, LinkId, Routes};

use super::probe_loss::{Loss, LossProbe};
use super::procs::run;
use super::{FrrOptions, FrrTestbed};
use crate::routed::{RoutedTestbed, ifname};
use crate::{Error, Result};

/// Who repairs the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repairer {
    /// FRR, eBGP with BFD.
    BgpBfd,
    /// FRR, eBGP without BFD.
    Bgp,
    /// fabric's central repair.
    Central,
}

impl Repairer {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Repairer::BgpBfd => "BGP + BFD",
            Repairer::Bgp => "BGP alone",
            Repairer::Central => "fabric central repair",
        }
    }
}

/// How the link fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// One end set administratively down: the other loses carrier.
    Carrier,
    /// Carrier stays, every packet is dropped (both ends).
    Silent,
}

/// One failure and its return.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The link.
    pub link: LinkId,
    /// Failure → every FIB repaired, s (`None`: not within the timeout).
    pub down_s: Option<f64>,
    /// Return → every FIB back to the healthy tables, s (`None`: not within the timeout).
    pub up_s: Option<f64>,
    /// Probes lost from the failure until repaired (or until the link came back).
    pub down_loss: Loss,
    /// Probes lost from the return until every FIB was back (or the timeout).
    pub up_loss: Loss,
}

/// The time between two rounds of the loss probe (one datagram per host pair each).
pub const PROBE_INTERVAL: Duration = Duration::from_millis(20);

/// The end of a window that starts at `t0` and lasted `s` seconds, or `fallback` when
/// it never ended.
fn window_end(t0: Instant, s: Option<f64>, fallback: Instant) -> Instant {
    s.map_or(fallback, |s| t0 + Duration::from_secs_f64(s))
}

/// The runs of one repairer.
#[derive(Debug, Clone, PartialEq)]
pub struct Runs {
    /// Who repaired.
    pub repairer: Repairer,
    /// How links failed.
    pub kind: FailureKind,
    /// One per failure.
    pub timings: Vec<Timing>,
    /// Longest FIB check round seen (the polling resolution), s; 0 for central repair.
    pub resolution_s: f64,
    /// Probes lost on the healthy fabric in the second before the first failure (0 when
    /// the probe stream itself is sound).
    pub idle_lost: u64,
}

/// Starts the loss probe on `rt` and measures it for a second on the healthy fabric
/// (after a second of warm-up: neighbours resolved): the probe and its idle loss.
fn start_probe(rt: &RoutedTestbed) -> Result<(LossProbe, u64)> {
    let probe = LossProbe::start(rt, PROBE_INTERVAL)?;
    std::thread::sleep(Duration::from_secs(1));
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let idle = probe.loss(t, t + Duration::from_millis(700)).lost;
    Ok((probe, idle))
}

/// The `p`-th percentile (0..=100, nearest rank) of `v`; `None` when empty.
pub fn percentile(v: &[f64], p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    Some(s[rank.min(s.len()) - 1])
}

impl Runs {
    /// The repaired failures' times, s.
    pub fn down(&self) -> Vec<f64> {
        self.timings.iter().filter_map(|t| t.down_s).collect()
    }

    /// The returns' times, s.
    pub fn up(&self) -> Vec<f64> {
        self.timings.iter().filter_map(|t| t.up_s).collect()
    }

    /// Probes lost per failure (every failure, repaired or not).
    pub fn lost_down(&self) -> Vec<f64> {
        self.timings
            .iter()
            .map(|t| t.down_loss.lost as f64)
            .collect()
    }

    /// Probes lost per return.
    pub fn lost_up(&self) -> Vec<f64> {
        self.timings.iter().map(|t| t.up_loss.lost as f64).collect()
    }

    /// The longest outage of one host pair per failure, s.
    pub fn outage_down(&self) -> Vec<f64> {
        self.timings
            .iter()
            .map(|t| t.down_loss.worst_outage_s)
            .collect()
    }
}

/// The switch–switch links, in id order (the failures cycle through them).
pub fn fabric_links(f: &Fabric) -> Vec<LinkId> {
    f.links()
        .iter()
        .enumerate()
        .filter(|(_, l)| !f.is_host(l.a) && !f.is_host(l.b))
        .map(|(i, _)| LinkId(i as u32))
        .collect()
}

/// The commands that fail and restore link `l` (another program than the repairer).
fn set_link(rt: &RoutedTestbed, l: LinkId, kind: FailureKind, fail: bool) -> Result<()> {
    let f = rt.fabric();
    let link = *f.link(l);
    match kind {
        FailureKind::Carrier => {
            let ns = rt.netns(link.a).name();
            let state = if fail { "down" } else { "up" };
            run(
                None,
                "ip",
                &["-n", ns, "link", "set", &ifname(link.a_port), state],
            )?;
        }
        FailureKind::Silent => {
            for (n, p) in [(link.a, link.a_port), (link.b, link.b_port)] {
                let ns = rt.netns(n).name();
                let dev = ifname(p);
                if fail {
                    run(
                        None,
                        "tc",
                        &[
                            "-n", ns, "qdisc", "replace", "dev", &dev, "root", "pfifo", "limit",
                            "0",
                        ],
                    )?;
                } else {
                    run(None, "tc", &["-n", ns, "qdisc", "del", "dev", &dev, "root"])?;
                }
            }
        }
    }
    Ok(())
}

/// Polls `tb`'s FIBs until every prefix leaves through the ports `routes` want (shares
/// aside: BGP weights by link bandwidth, topo's tables split equally): the time since
/// `t0`, or `None` after `timeout`; raises `resolution` to the longest check round.
fn until_fibs(
    tb: &FrrTestbed,
    routes: &Routes,
    t0: Instant,
    timeout: Duration,
    resolution: &mut f64,
) -> Result<Option<f64>> {
    loop {
        let c = Instant::now();
        let d = tb.fib_check_ports(routes)?;
        *resolution = resolution.max(c.elapsed().as_secs_f64());
        if d.entries.is_empty() {
            return Ok(Some(t0.elapsed().as_secs_f64()));
        }
        if t0.elapsed() > timeout {
            return Ok(None);
        }
    }
}

/// `n` failures (and returns) of switch–switch links under FRR, with or without BFD.
/// `progress` hears each timing as it is taken.
pub fn run_frr(
    f: &Fabric,
    bfd: bool,
    kind: FailureKind,
    n: usize,
    timeout: Duration,
    mut progress: impl FnMut(&Timing),
) -> Result<Runs> {
    let opts = FrrOptions {
        bfd,
        lldpd: false,
        exporters: false,
        ..FrrOptions::default()
    };
    let tb = FrrTestbed::converged(f.clone(), &opts, Duration::from_secs(120))?;
    let healthy = Routes::compute(f);
    let links = fabric_links(f);
    let mut runs = Runs {
        repairer: if bfd { Repairer::BgpBfd } else { Repairer::Bgp },
        kind,
        timings: Vec::new(),
        resolution_s: 0.0,
        idle_lost: 0,
    };
    let (probe, idle) = start_probe(tb.routed())?;
    runs.idle_lost = idle;
    for i in 0..n {
        let l = links[i % links.len()];
        let mut failed = healthy.clone();
        failed.fail_links(f, &[l]);
        let t0 = Instant::now();
        set_link(tb.routed(), l, kind, true)?;
        let down_s = until_fibs(&tb, &failed, t0, timeout, &mut runs.resolution_s)?;
        let t1 = Instant::now();
        set_link(tb.routed(), l, kind, false)?;
        let up_s = until_fibs(&tb, &healthy, t1, timeout, &mut runs.resolution_s)?;
        let t2 = Instant::now();
        // Let the sessions (and BFD) settle before the next failure, and the last probes
        // arrive.
        std::thread::sleep(Duration::from_secs(1));
        let t = Timing {
            link: l,
            down_s,
            up_s,
            down_loss: probe.loss(t0, window_end(t0, down_s, t1)),
            up_loss: probe.loss(t1, window_end(t1, up_s, t2)),
        };
        progress(&t);
        runs.timings.push(t);
        if up_s.is_none() {
            // Not back: later failures would start from a broken fabric.
            break;
        }
    }
    probe.stop();
    tb.teardown()?;
    Ok(runs)
}

/// `n` failures (and returns) of switch–switch links under fabric's central repair.
pub fn run_central(
    f: &Fabric,
    kind: FailureKind,
    n: usize,
    timeout: Duration,
    mut progress: impl FnMut(&Timing),
) -> Result<Runs> {
    let mut rt = RoutedTestbed::build(f.clone())?;
    let mut w = rt.watch()?;
    let links = fabric_links(f);
    let mut runs = Runs {
        repairer: Repairer::Central,
        kind,
        timings: Vec::new(),
        resolution_s: 0.0,
        idle_lost: 0,
    };
    let (probe, idle) = start_probe(&rt)?;
    runs.idle_lost = idle;
    for i in 0..n {
        let l = links[i % links.len()];
        let t0 = Instant::now();
        set_link(&rt, l, kind, true)?;
        let down_s = repair_on_event(&mut rt, &mut w, l, false, t0, timeout)?;
        let t1 = Instant::now();
        set_link(&rt, l, kind, false)?;
        let up_s = if down_s.is_some() {
            repair_on_event(&mut rt, &mut w, l, true, t1, timeout)?
        } else {
            // Never seen down (a silent failure keeps carrier): nothing to restore.
            Some(0.0)
        };
        let d = rt.drift()?;
        if !d.entries.is_empty() {
            return Err(Error::Invalid(format!(
                "central repair of link {} left {} FIB entries wrong",
                l.0,
                d.entries.len()
            )));
        }
        let t2 = Instant::now();
        // The last probes arrive (and the next failure starts from a quiet fabric).
        std::thread::sleep(Duration::from_millis(500));
        let t = Timing {
            link: l,
            down_s,
            up_s: if down_s.is_some() { up_s } else { None },
            down_loss: probe.loss(t0, window_end(t0, down_s, t1)),
            up_loss: probe.loss(t1, window_end(t1, up_s, t2)),
        };
        progress(&t);
        runs.timings.push(t);
    }
    probe.stop();
    rt.teardown()?;
    Ok(runs)
}

/// Waits for link `l`'s carrier event (`up` or down) and repairs: the time from `t0`
/// until the repair has programmed every switch, or `None` when no event came within
/// `timeout`.
fn repair_on_event(
    rt: &mut RoutedTestbed,
    w: &mut crate::routed::LinkWatcher,
    l: LinkId,
    up: bool,
    t0: Instant,
    timeout: Duration,
) -> Result<Option<f64>> {
    let f = rt.fabric().clone();
    while t0.elapsed() < timeout {
        for c in w.poll(&f, Duration::from_millis(50))? {
            if c.link != l || c.up != up {
                continue;
            }
            if up {
                rt.repair_up(l, c.detected)?;
            } else {
                rt.repair_down(l, c.detected)?;
            }
            return Ok(Some(t0.elapsed().as_secs_f64()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(10.0));
        assert_eq!(percentile(&v, 99.0), Some(20.0));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn failures_cycle_through_switch_links() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(100)).unwrap();
        let l = fabric_links(&f);
        assert_eq!(l.len(), 32);
        assert!(l.iter().all(|&l| {
            let x = f.link(l);
            !f.is_host(x.a) && !f.is_host(x.b)
        }));
    }
}
