//! The report of a congestion run, assembled from what the two loops handed back.

use cc_algos::{Instant, SenderCc};
use veth_core::endpoint::TimeScale;
use veth_core::switch::PortCounters;

use super::loops::{PortSample, Ran};
use super::reaction::{self, Reaction};
use super::{CongestionConfig, CongestionReport, FlowResult};
use scenario::Workplan;

/// Drops counted outside the switch.
#[derive(Debug, Clone, Copy)]
pub(super) struct OutsideDrops {
    /// Frames the kernel dropped at our sockets (receive buffer full).
    pub kernel: u64,
    /// Frames dropped inside the veths.
    pub veth: u64,
}

/// The report in virtual time.
pub(super) fn assemble(
    cfg: &CongestionConfig,
    plan: &Workplan,
    scale: TimeScale,
    ran: &Ran,
    drops: OutsideDrops,
) -> CongestionReport {
    let (sw, h) = (&ran.switch, &ran.hosts);
    if std::env::var_os("FABRIC_VETH_DEBUG").is_some() {
        for host in &h.hosts {
            for f in &host.flows {
                eprintln!("{}", f.state());
            }
            for (id, r) in &host.recv {
                eprintln!("receiver of flow {id}: {r:?}");
            }
        }
    }
    let to_us = |t: Instant| scale.to_virtual(t).picos() as f64 / 1e6;
    let sample_us = cfg.sample.as_micros_f64();
    let flows = plan
        .flows
        .iter()
        .map(|f| flow_result(f, ran, sample_us, cfg.virtual_rate, &to_us))
        .collect();
    let ports: Vec<PortCounters> = (0..sw.switch.num_ports())
        .map(|p| sw.switch.counters(p).clone())
        .collect();
    let sum = |f: fn(&PortCounters) -> u64| ports.iter().map(f).sum::<u64>();
    let sample_real_us = scale.dur_to_real(cfg.sample).as_micros_f64();
    CongestionReport {
        scale: scale.0,
        link_rate_gbps: cfg.link_rate.as_gbps_f64(),
        virtual_rate_gbps: cfg.virtual_rate.as_gbps_f64(),
        duration_us: to_us(h.end),
        sample_us,
        flows,
        switch_drops: sum(|p| p.drops),
        link_down_drops: sum(|p| p.link_down_drops),
        unroutable: sum(|p| p.unroutable),
        pfcwd_drops: sum(|p| p.pfcwd_drops),
        pfcwd_storms: sum(|p| p.pfcwd_storms),
        storm_pauses: h.hosts.iter().map(|x| x.storm_pauses()).sum(),
        ecn_marks: sum(|p| p.ecn_marks),
        pauses_sent: sum(|p| p.pauses_sent),
        malformed: sum(|p| p.malformed) + h.hosts.iter().map(|x| x.c.malformed).sum::<u64>(),
        pfc_frames_received_by_hosts: h.hosts.iter().map(|x| x.c.pfc_received).sum(),
        cnps_sent: h.hosts.iter().map(|x| x.c.cnps_sent).sum(),
        credits_sent: h.hosts.iter().map(|x| x.c.credits_sent).sum(),
        max_headroom_bytes: ports
            .iter()
            .map(|p| p.max_headroom_bytes)
            .max()
            .unwrap_or(0),
        paused_virtual_us: ports
            .iter()
            .map(|p| scale.dur_to_virtual(p.paused_time).as_micros_f64())
            .collect(),
        ports,
        port_names: Vec::new(),
        topology: cfg.topology.to_string(),
        queue_bytes: per_port(&sw.port_series, |_, s| s.queue_bytes),
        ecn_marks_per_sample: per_port(&sw.port_series, |prev, s| s.ecn_marks - prev.ecn_marks),
        pauses_sent_per_sample: per_port(&sw.port_series, |prev, s| {
            s.pauses_sent - prev.pauses_sent
        }),
        paused_fraction_per_sample: per_port(&sw.port_series, |prev, s| {
            let held = (s.paused - prev.paused).as_micros_f64();
            (held / sample_real_us).clamp(0.0, 1.0) as f32
        }),
        max_buffer_used: sw.switch.max_buffer_used(),
        switch_max_late_us: sw.late_us,
        hosts_max_late_us: h.late_us,
        switch_load: sw.load,
        hosts_load: h.load,
        kernel_drops: drops.kernel,
        veth_drops: drops.veth,
        // Read from the namespaces by the caller, which still holds them.
        kernel_ip_input: 0,
        all_completed: h.completed.len() == plan.flows.iter().filter(|f| f.size.is_some()).count(),
    }
}

/// `f(previous, this)` of every sample of every port (the first sample's previous is
/// all zero: counters start at zero).
fn per_port<T>(
    series: &[Vec<PortSample>],
    f: impl Fn(&PortSample, &PortSample) -> T,
) -> Vec<Vec<T>> {
    series
        .iter()
        .map(|port| {
            let mut prev = PortSample::default();
            port.iter()
                .map(|s| {
                    let v = f(&prev, s);
                    prev = *s;
                    v
                })
                .collect()
        })
        .collect()
}

/// Per-sample increments of a cumulative counter.
fn increments(cumulative: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut prev = 0;
    cumulative
        .map(|c| {
            let d = c.saturating_sub(prev);
            prev = c;
            d
        })
        .collect()
}

/// Delivered Gb/s per slot of the sampling grid (slot `i` ends at `i × sample_us`, where
/// the loop's sample `i` was due).
/// A real-time loop takes a sample at or after its slot, late when it fell behind, so the
/// cumulative bytes are first interpolated back to the grid (linearly between the samples'
/// actual times): a late sample no longer puts more bytes into one slot than the slot's
/// length can carry (the 8:1 incast's first bin read 120 Gb/s on a 100 Gb/s link).
fn rate_on_grid(taken_us: &[f64], cumulative: &[u64], sample_us: f64) -> Vec<f64> {
    let n = taken_us.len().min(cumulative.len());
    let at = |t: f64| -> f64 {
        // The first sample taken at or after `t`, and the one before it.
        let j = taken_us[..n].partition_point(|&x| x < t);
        match j {
            _ if j >= n => cumulative[n - 1] as f64,
            0 => cumulative[0] as f64 * (t / taken_us[0].max(1e-9)).clamp(0.0, 1.0),
            _ => {
                let (t0, t1) = (taken_us[j - 1], taken_us[j]);
                let (b0, b1) = (cumulative[j - 1] as f64, cumulative[j] as f64);
                b0 + (b1 - b0) * ((t - t0) / (t1 - t0).max(1e-9))
            }
        }
    };
    let mut prev = 0.0;
    (0..n)
        .map(|i| {
            let b = at(i as f64 * sample_us);
            let g = (b - prev).max(0.0) * 8.0 / (sample_us * 1e3);
            prev = b;
            g
        })
        .collect()
}

fn flow_result(
    f: &scenario::FlowSpec,
    ran: &Ran,
    sample_us: f64,
    line_rate: cc_algos::Rate,
    to_us: &dyn Fn(Instant) -> f64,
) -> FlowResult {
    let h = &ran.hosts;
    let rx = h.hosts[f.dst as usize]
        .recv
        .get(&f.id)
        .cloned()
        .unwrap_or_default();
    let sf = h.hosts[f.src as usize].flows.iter().find(|s| s.id == f.id);
    let taken: Vec<f64> = h.sample_times.iter().map(|&t| to_us(t)).collect();
    let delivered = h.delivered_series.get(&f.id).map_or(&[][..], |v| &v[..]);
    let gbps = rate_on_grid(&taken, delivered, sample_us);
    let cc = h.cc_series.get(&f.id).map_or(&[][..], |v| &v[..]);
    let cc_rate_gbps: Vec<f64> = cc.iter().map(|s| s.rate_gbps).collect();
    let cc_window_bytes: Vec<f64> = cc
        .iter()
        .filter_map(|s| s.window_bytes.map(|w| w as f64))
        .collect();
    let received: Vec<u64> = cc.iter().filter_map(|s| s.credit_received).collect();
    let cc_credit_gbps = reaction::credit_gbps(&received, sample_us);
    let start_us = f.start.picos() as f64 / 1e6;
    let completed_us = rx.completed.map(to_us);
    let active = (start_us / sample_us) as usize
        ..completed_us.map_or(usize::MAX, |t| (t / sample_us).ceil() as usize + 1);
    let reaction = if !cc_window_bytes.is_empty() {
        Reaction::judge("window_bytes", &cc_window_bytes, active, None)
    } else if !cc_credit_gbps.is_empty() {
        let line = line_rate.as_gbps_f64();
        Reaction::judge("credit_gbps", &cc_credit_gbps, active, Some(line))
    } else {
        Reaction::judge("rate_gbps", &cc_rate_gbps, active, None)
    };
    FlowResult {
        id: f.id,
        src: f.src,
        dst: f.dst,
        size: f.size.map(|b| b.0),
        priority: f.priority,
        delivered: rx.bytes,
        start_us,
        completed_us,
        first_sent_us: sf.and_then(|s| s.first_sent).map(to_us),
        gbps,
        cc_rate_gbps,
        cc_window_bytes,
        cc_credit_gbps,
        reaction,
        cnps: sf.map_or(0, |s| s.cnps),
        cnps_per_sample: increments(cc.iter().map(|s| s.cnps)),
        naks: sf.map_or(0, |s| s.naks),
        timeouts: sf.map_or(0, |s| s.timeouts),
        retransmitted_packets: sf.map_or(0, |s| s.retransmits),
        ce_packets: rx.ce_packets,
        final_rate_gbps: sf.map_or(0.0, |s| s.cc.rate().as_gbps_f64()),
    }
}

#[cfg(test)]
mod tests {
    use super::rate_on_grid;

    /// 100 Gb/s is 12,500 bytes per µs. Samples due every µs; the third is taken 1 µs late
    /// (it holds 3 µs of bytes), the fourth catches up at once.
    #[test]
    fn a_late_sample_does_not_push_a_slot_past_line_rate() {
        let taken = [0.0, 1.0, 3.0, 3.0, 4.0];
        let bytes = [0, 12_500, 37_500, 37_500, 50_000];
        let naive: Vec<f64> = bytes
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 * 8.0 / 1e3)
            .collect();
        assert_eq!(
            naive,
            [100.0, 200.0, 0.0, 100.0],
            "the defect: 200 Gb/s in one slot"
        );
        let g = rate_on_grid(&taken, &bytes, 1.0);
        assert_eq!(g, [0.0, 100.0, 100.0, 100.0, 100.0]);
        // Totals are kept: the grid's bytes up to the last sample are the bytes delivered.
        let total: f64 = g.iter().sum::<f64>() * 1e3 / 8.0;
        assert_eq!(total, 50_000.0);
    }

    #[test]
    fn empty_and_single_sample_series() {
        assert!(rate_on_grid(&[], &[], 1.0).is_empty());
        assert_eq!(rate_on_grid(&[0.5], &[100], 1.0), [0.0]);
    }
}
