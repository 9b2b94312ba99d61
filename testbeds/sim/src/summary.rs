//! A readable text summary of one simulator run (FCTs, slowdowns, collectives' bus
//! bandwidth, drops, pauses, ECN marks, load balance, deadlock).

use crate::SimResults;
use report::table;
use std::fmt::Write as _;

fn opt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) => format!("{x:.digits$}"),
        None => "-".into(),
    }
}

/// A readable summary of one run.
pub fn summary(r: &SimResults) -> String {
    let mut s = String::new();
    let t = &r.totals;
    let _ = writeln!(
        s,
        "fabric {} ({} hosts) · scenario {} · cc {} · lb {} · pfc {} · seed {} · mtu {} B",
        r.fabric,
        r.run.hosts,
        r.scenario,
        r.run.cc,
        r.run.lb,
        if r.run.pfc { "on" } else { "off" },
        r.run.seed,
        r.run.mtu
    );
    let _ = writeln!(
        s,
        "simulated {:.1} µs, {} events, goodput {:.1} Gb/s",
        r.run.end_us, r.run.events, r.goodput_gbps
    );
    for d in &r.run.degraded {
        let _ = writeln!(
            s,
            "degraded link n{}{}n{} at {:.0} % of its rate from {:.1} µs{}",
            d.link[0],
            if d.both { "↔" } else { "→" },
            d.link[1],
            d.fraction * 100.0,
            d.at_us,
            match d.until_us {
                Some(u) => format!(" until {u:.1} µs"),
                None => " to the end".into(),
            }
        );
    }
    let f = &r.fct;
    let _ = writeln!(
        s,
        "flows: {} finished, {} unfinished · FCT p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs · slowdown p50 {:.2}, p99 {:.2}, max {:.2}",
        f.finished,
        f.unfinished,
        f.p50_us,
        f.p99_us,
        f.max_us,
        f.slowdown_p50,
        f.slowdown_p99,
        f.slowdown_max
    );
    if !r.groups.is_empty() {
        let rows: Vec<Vec<String>> = r
            .groups
            .iter()
            .map(|g| {
                vec![
                    g.name.clone(),
                    g.ranks.to_string(),
                    g.flows.to_string(),
                    g.unfinished.to_string(),
                    format!("{:.1}", g.fct.p50_us),
                    format!("{:.1}", g.fct.p99_us),
                    format!("{:.2}", g.fct.slowdown_p99),
                    opt(g.algbw_gbps, 1),
                    opt(g.busbw_gbps, 1),
                    opt(g.busbw_of_ideal.map(|x| x * 100.0), 0),
                    opt(g.jain, 3),
                ]
            })
            .collect();
        s.push_str(&table(
            &[
                "workload",
                "ranks",
                "flows",
                "unfinished",
                "FCT p50 µs",
                "FCT p99 µs",
                "slowdown p99",
                "algbw Gb/s",
                "busbw Gb/s",
                "busbw % of line",
                "Jain",
            ],
            &rows,
        ));
    }
    for (gi, g) in r.groups.iter().enumerate() {
        // A victim workload's first flow is the victim.
        if g.kind == "victim"
            && let Some(v) = r.flows.iter().find(|f| f.group == gi as u32)
        {
            let _ = writeln!(
                s,
                "{}: victim flow {}→{} FCT {} µs (ideal {} µs, slowdown {})",
                g.name,
                v.src,
                v.dst,
                opt(v.fct_us, 1),
                opt(v.ideal_us, 1),
                opt(v.slowdown, 2)
            );
        }
    }
    let _ = writeln!(
        s,
        "drops {} (buffer {}, failed links {}, no route {}) · trims {} · retransmits {} · timeouts {}",
        t.drops,
        t.drops_buffer,
        t.drops_failure,
        t.drops_noroute,
        t.trims,
        t.retransmits,
        t.timeouts
    );
    let _ = writeln!(
        s,
        "PFC: {} pauses + {} resumes sent, {} received, {:.1} µs paused (sum over ports) · ECN marks {} · CNPs {} · max queue {} B",
        t.pauses_sent, t.resumes_sent, t.pauses_rcvd, t.paused_us, t.ecn_marks, t.cnps, t.max_queue
    );
    if let Some(se) = &r.series
        && !se.jain.is_empty()
    {
        let mean = se.jain.iter().sum::<f64>() / se.jain.len() as f64;
        let min = se.jain.iter().copied().fold(1.0, f64::min);
        let _ = writeln!(
            s,
            "Jain's index over time ({} samples of active flows' rates): mean {:.3}, min {:.3}",
            se.jain.len(),
            mean,
            min
        );
    }
    if r.load_balance.uplinks > 0 {
        let _ = writeln!(
            s,
            "up-link load: max/mean {:.2}, CV {:.2} over {} up-links",
            r.load_balance.max_over_mean, r.load_balance.cv, r.load_balance.uplinks
        );
    }
    if let Some(d) = &r.deadlock {
        let _ = writeln!(
            s,
            "DEADLOCK at {:.1} µs: {} B stuck; cycle of paused ports: {}",
            d.at_us,
            d.stuck_bytes,
            d.cycle
                .iter()
                .map(|(n, p, peer)| format!("n{n}:p{p}→n{peer}"))
                .collect::<Vec<_>>()
                .join(" → ")
        );
    }
    s
}
