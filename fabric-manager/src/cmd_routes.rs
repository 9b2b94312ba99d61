//! `fabric routes verify`: build the up*/down* tables, optionally fail links/switches
//! (re-routing incrementally), and verify reachability, loop freedom, up/down turns and
//! deadlock freedom. Exits non-zero on any violation.

use std::fmt::Write;

use crate::common::FabricArgs;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Spec file or preset name (alternative to --fabric / --preset).
    pub design: Option<String>,
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// Fail a link (`A--B`, `A--B#i`, `link:N`) or a switch (its name). Repeatable.
    #[arg(long = "fail", value_name = "LINK|SWITCH")]
    pub fail: Vec<String>,
    /// Fail this many random switch–switch links.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fail_links: usize,
    /// Fail this many random switches.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fail_switches: usize,
    /// Seed of the random failures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also build the single-path (d-mod-k) tables and report how evenly destinations
    /// spread over each switch's up ports.
    #[arg(long)]
    pub lft: bool,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
}

/// Destinations per up port of the single-path tables, over all switches with up ports.
#[derive(Debug, serde::Serialize)]
struct LftBalance {
    entries: usize,
    bytes: usize,
    /// Fewest / most destinations on one up port of one switch.
    up_port_min: u32,
    up_port_max: u32,
    /// Worst switch: most / fewest destinations on its up ports (1.0 = perfectly even).
    worst_switch_ratio: f64,
}

fn lft_balance(f: &topo::Fabric, routes: &topo::Routes) -> LftBalance {
    let t = topo::lft::Lft::compute(f, routes);
    let (mut lo, mut hi, mut worst) = (u32::MAX, 0u32, 1.0f64);
    for p in &t.planes {
        for s in p.first_switch..p.first_switch + p.rows {
            let s = topo::NodeId(s);
            let loads = p.port_loads(f, s);
            let up: Vec<u32> = (0..f.degree(s) as u16)
                .filter(|&k| {
                    f.direction(s, k) == topo::Direction::Up && routes.link_is_up(f.port_link(s, k))
                })
                .map(|k| loads[k as usize])
                .collect();
            if let (Some(&a), Some(&b)) = (up.iter().min(), up.iter().max()) {
                lo = lo.min(a);
                hi = hi.max(b);
                if a > 0 {
                    worst = worst.max(b as f64 / a as f64);
                } else if b > 0 {
                    worst = f64::INFINITY;
                }
            }
        }
    }
    LftBalance {
        entries: t.num_entries(),
        bytes: t.bytes(),
        up_port_min: if hi == 0 { 0 } else { lo },
        up_port_max: hi,
        worst_switch_ratio: worst,
    }
}

#[derive(Debug, serde::Serialize)]
struct Output<'a> {
    fabric: String,
    failed_links: usize,
    failed_switches: Vec<String>,
    reroute: Option<topo::routing::RerouteReport>,
    lft: Option<LftBalance>,
    isolated_host_names: Vec<String>,
    unreachable_host_names: Vec<String>,
    /// One channel-dependency cycle, by name: `from->to` per channel.
    cdg_cycle_names: Vec<String>,
    report: &'a topo::verify::VerifyReport,
}

/// A dependency cycle as `A->B` per channel (link and direction).
fn cycle_names(f: &topo::Fabric, c: &[topo::verify::Channel]) -> Vec<String> {
    c.iter()
        .map(|ch| format!("{}->{}", f.node_name(ch.from), f.node_name(ch.to)))
        .collect()
}

pub fn verify(a: VerifyArgs) -> anyhow::Result<()> {
    let f = match &a.design {
        Some(d) => crate::common::load_design(d)?,
        None => a.fabric.load()?,
    };
    let mut routes = topo::Routes::compute(&f);
    let mut set = topo::failures::resolve(&f, &a.fail)?;
    set.links
        .extend(topo::failures::random_links(&f, a.fail_links, a.seed));
    let sw = topo::failures::random_switches(&f, a.fail_switches, a.seed ^ 0x5eed);
    for &s in &sw {
        set.nodes.push(s);
        set.links.extend(f.ports(s).map(|(_, l)| l));
    }
    let reroute = (!set.links.is_empty()).then(|| routes.fail_links(&f, &set.links));
    let rep = topo::verify::verify(&f, &routes);
    let failed_links = routes.failed_links().count();
    let out = Output {
        fabric: f.name().to_string(),
        failed_links,
        failed_switches: set
            .nodes
            .iter()
            .map(|&n| f.node_name(n).to_string())
            .collect(),
        isolated_host_names: rep
            .isolated_hosts
            .iter()
            .map(|&n| f.node_name(n).to_string())
            .collect(),
        unreachable_host_names: rep
            .unreachable_hosts
            .iter()
            .map(|&n| f.node_name(n).to_string())
            .collect(),
        reroute,
        lft: a.lft.then(|| lft_balance(&f, &routes)),
        cdg_cycle_names: cycle_names(&f, &rep.cdg_cycle),
        report: &rep,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", render(&f, &out));
    }
    if !rep.ok() {
        eprintln!(
            "fabric routes verify: verification failed ({})",
            problems(&rep)
        );
        std::process::exit(1);
    }
    Ok(())
}

fn problems(r: &topo::verify::VerifyReport) -> String {
    let mut v = Vec::new();
    if r.unreachable_pairs > 0 {
        v.push(format!("{} unreachable host pairs", r.unreachable_pairs));
    }
    if r.loops > 0 {
        v.push(format!("{} looping entries", r.loops));
    }
    if r.updown_violations > 0 {
        v.push(format!("{} up/down violations", r.updown_violations));
    }
    if r.black_holes > 0 {
        v.push(format!("{} black holes", r.black_holes));
    }
    if !r.cdg_acyclic {
        v.push("cyclic channel dependency graph".into());
    }
    v.join(", ")
}

fn render(f: &topo::Fabric, o: &Output<'_>) -> String {
    let r = o.report;
    let mark = |ok: bool| if ok { "ok  " } else { "FAIL" };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fabric {}: {} hosts, {} switches, {} links, {} planes",
        o.fabric,
        f.num_hosts(),
        f.num_switches(),
        f.num_links(),
        f.num_planes()
    );
    if o.failed_links > 0 {
        let _ = writeln!(
            s,
            "failures: {} links down ({} switches: {})",
            o.failed_links,
            o.failed_switches.len(),
            o.failed_switches.join(", ")
        );
    }
    if let Some(rr) = &o.reroute {
        let _ = writeln!(
            s,
            "re-route: {} destination leaves recomputed, {} entries patched, {} entries changed, ECMP width lost {}",
            rr.dests_recomputed,
            rr.entries_patched,
            rr.changed.len(),
            rr.width_lost
        );
    }
    let _ = writeln!(
        s,
        "[{}] reachability: {} of {} host pairs sharing a plane ({} leaf pairs walked)",
        mark(r.unreachable_pairs == 0),
        r.reachable_pairs,
        r.pairs_with_common_plane,
        r.leaf_pairs
    );
    if r.pairs_without_common_plane > 0 {
        let _ = writeln!(
            s,
            "       {} host pairs share no plane (forwarded inside the server / scale-up domain)",
            r.pairs_without_common_plane
        );
    }
    if !o.isolated_host_names.is_empty() {
        let _ = writeln!(
            s,
            "       isolated hosts (no live host link) ({}): {}",
            o.isolated_host_names.len(),
            list(&o.isolated_host_names, 40)
        );
    }
    if !o.unreachable_host_names.is_empty() {
        let _ = writeln!(
            s,
            "       unreachable destinations ({}): {}",
            o.unreachable_host_names.len(),
            list(&o.unreachable_host_names, 40)
        );
    }
    if r.unreachable_pairs > 0 {
        let ex: Vec<String> = r
            .unreachable_examples
            .iter()
            .map(|(a, b)| format!("{}->{}", f.node_name(*a), f.node_name(*b)))
            .collect();
        let _ = writeln!(s, "       e.g. {}", list(&ex, 10));
    }
    let issues = |v: &[topo::verify::EntryIssue]| -> String {
        list(
            &v.iter()
                .map(|e| format!("{}→{}", f.node_name(e.switch), f.node_name(e.dest_leaf)))
                .collect::<Vec<_>>(),
            5,
        )
    };
    let _ = writeln!(
        s,
        "[{}] forwarding loops: {}{}",
        mark(r.loops == 0),
        r.loops,
        if r.loops > 0 {
            format!(" ({})", issues(&r.loop_examples))
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "[{}] up/down turn rule: {} violations{}",
        mark(r.updown_violations == 0),
        r.updown_violations,
        if r.updown_violations > 0 {
            format!(" ({})", issues(&r.updown_examples))
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "[{}] black holes: {}{}",
        mark(r.black_holes == 0),
        r.black_holes,
        if r.black_holes > 0 {
            format!(" ({})", issues(&r.black_hole_examples))
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "[{}] channel dependency graph acyclic (PFC deadlock-free): {} channels, {} dependencies",
        mark(r.cdg_acyclic),
        r.cdg_channels,
        r.cdg_edges
    );
    if !o.cdg_cycle_names.is_empty() {
        let switches: Vec<&str> = r.cdg_cycle.iter().map(|c| f.node_name(c.from)).collect();
        let _ = writeln!(
            s,
            "       {} channels lie on cycles; one cycle of {} channels (each waits for the next, the last for the first): {}",
            r.cdg_cyclic_channels,
            o.cdg_cycle_names.len(),
            list(&o.cdg_cycle_names, 16)
        );
        let _ = writeln!(
            s,
            "       switches on it: {}",
            list(
                &switches.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                16
            )
        );
    }
    let e = &r.ecmp;
    let _ = writeln!(
        s,
        "ECMP width: min {} / mean {:.2} / max {} over {} entries, {} distinct next-hop groups, {} entries without route",
        e.min, e.mean, e.max, e.entries, e.groups, e.no_route
    );
    if let Some(b) = &o.lft {
        let _ = writeln!(
            s,
            "single-path LFT: {} entries ({} bytes); destinations per up port {}..{}, worst switch max/min {:.3}",
            b.entries, b.bytes, b.up_port_min, b.up_port_max, b.worst_switch_ratio
        );
    }
    let _ = writeln!(
        s,
        "{}",
        if r.ok() {
            "verification passed"
        } else {
            "VERIFICATION FAILED"
        }
    );
    s
}

fn list(v: &[String], max: usize) -> String {
    if v.len() <= max {
        v.join(", ")
    } else {
        format!("{} … (+{} more)", v[..max].join(", "), v.len() - max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_cycle_is_named_in_text_and_json() {
        let f = topo::generators::leaf_spine(2, 2, 1, topo::Rate::gbps(100)).unwrap();
        let mut routes = topo::Routes::compute(&f);
        // spine0 bounces leaf1's traffic back to leaf0: leaf0->spine0->leaf0 is a cycle.
        routes.set_entry(topo::NodeId(4), topo::NodeId(3), &[0]);
        let rep = topo::verify::verify(&f, &routes);
        let out = Output {
            fabric: f.name().into(),
            failed_links: 0,
            failed_switches: vec![],
            reroute: None,
            lft: None,
            isolated_host_names: vec![],
            unreachable_host_names: vec![],
            cdg_cycle_names: cycle_names(&f, &rep.cdg_cycle),
            report: &rep,
        };
        let text = render(&f, &out);
        assert!(text.contains("one cycle of 2 channels"), "{text}");
        assert!(
            text.contains("leaf0->spine0, spine0->leaf0")
                || text.contains("spine0->leaf0, leaf0->spine0"),
            "{text}"
        );
        assert!(text.contains("switches on it: "), "{text}");
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["cdg_cycle_names"].as_array().unwrap().len(), 2);
        assert_eq!(json["report"]["cdg_cycle"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn balanced_lft_and_report_text() {
        let f = topo::presets::build("fat-tree-k8").unwrap();
        let mut routes = topo::Routes::compute(&f);
        let b = lft_balance(&f, &routes);
        // leaves: (128 - 4) / 4 = 31 per up port; aggregation: (128 - 16) / 4 = 28
        assert_eq!(
            (b.up_port_min, b.up_port_max, b.worst_switch_ratio),
            (28, 31, 1.0)
        );
        let set = topo::failures::resolve(&f, &["pod0-leaf0--host0-nic0".into()]).unwrap();
        let rr = routes.fail_links(&f, &set.links);
        let rep = topo::verify::verify(&f, &routes);
        let out = Output {
            fabric: f.name().into(),
            failed_links: 1,
            failed_switches: vec![],
            reroute: Some(rr),
            lft: None,
            isolated_host_names: rep
                .isolated_hosts
                .iter()
                .map(|&n| f.node_name(n).to_string())
                .collect(),
            unreachable_host_names: vec![],
            cdg_cycle_names: vec![],
            report: &rep,
        };
        let text = render(&f, &out);
        assert!(
            text.contains("isolated hosts (no live host link) (1): host0-nic0"),
            "{text}"
        );
        assert!(
            text.contains("[FAIL] reachability: 16002 of 16256"),
            "{text}"
        );
        assert!(text.ends_with("VERIFICATION FAILED\n"));
        assert_eq!(problems(&rep), "254 unreachable host pairs");
    }
}
