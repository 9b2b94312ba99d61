//! `fabric routes verify`: build the up*/down* tables, optionally fail links/switches
//! (re-routing incrementally), and verify reachability, loop freedom, up/down turns and
//! deadlock freedom. Exits non-zero on any violation.

use std::fmt::Write;

use crate::common::FabricArgs;
use crate::failure_args::{FailureArgs, input};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Spec file or preset name (alternative to --fabric / --preset).
    pub design: Option<String>,
    #[command(flatten)]
    pub fabric: FabricArgs,
    #[command(flatten)]
    pub fail: FailureArgs,
    #[command(flatten)]
    pub lanes: crate::lane_args::LaneArgs,
    /// Also build the single-path (d-mod-k) tables and report their balance per tier:
    /// destinations per up port and the all-to-all pair load per up link, max/mean, and the
    /// worst switch against its ideal.
    #[arg(long)]
    pub lft: bool,
    /// JSON: `--json FILE`, or `--json` alone for standard output (see `common::JsonOut`).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<std::path::PathBuf>,
    /// Tenant file (TOML/YAML/JSON, docs/tenants.md): also prove over every host pair that
    /// no tenant reaches another except through the shared services it allows, on these
    /// tables (after --fail-*, detours included) plus the VRFs and partitions; every leak
    /// with its path. Exit 1 on a leak.
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<std::path::PathBuf>,
    /// With tenants (--tenants or the spec's `[[tenants]]`): prove a deployed OpenSM
    /// partitions.conf (plane 0) instead of the partitions derived from the tenants.
    #[arg(long, value_name = "FILE")]
    pub partitions: Option<std::path::PathBuf>,
}

/// Balance of the single-path tables, per tier.
#[derive(Debug, serde::Serialize)]
pub(crate) struct LftBalance {
    entries: usize,
    bytes: usize,
    tiers: Vec<TierLine>,
}

/// One tier's balance with the worst switch by name.
#[derive(Debug, serde::Serialize)]
pub(crate) struct TierLine {
    #[serde(flatten)]
    balance: topo::balance::TierBalance,
    dest_max_over_mean: f64,
    pairs_max_over_mean: f64,
    worst_switch_name: Option<String>,
}

pub(crate) fn lft_balance(f: &topo::Fabric, routes: &topo::Routes) -> LftBalance {
    let t = topo::lft::Lft::compute(f, routes);
    LftBalance {
        entries: t.num_entries(),
        bytes: t.bytes(),
        tiers: topo::balance::of_lft(f, routes, &t)
            .into_iter()
            .map(|b| TierLine {
                dest_max_over_mean: b.dest_ratio(),
                pairs_max_over_mean: b.pair_ratio(),
                worst_switch_name: b.worst_switch.map(|(s, ..)| f.node_name(s).to_string()),
                balance: b,
            })
            .collect(),
    }
}

/// Text lines of a balance report.
pub(crate) fn balance_lines(b: &LftBalance) -> Vec<String> {
    let tier = |t: u8| match t {
        1 => "leaf",
        2 => "spine/agg",
        _ => "core",
    };
    let mut v = vec![format!(
        "single-path LFT: {} entries ({} bytes); balance per tier (max/mean, 1.00 = even):",
        b.entries, b.bytes
    )];
    for t in &b.tiers {
        let x = &t.balance;
        let worst = match (&t.worst_switch_name, x.worst_switch) {
            (Some(n), Some((_, m, i))) => {
                format!("; worst switch {n}: {m} on one port vs ideal {i}")
            }
            _ => String::new(),
        };
        v.push(format!(
            "  tier {} ({}): {} up ports; destinations per up port max {} / mean {:.2} ({:.2}); all-to-all pairs per up link max {} / mean {:.1} ({:.2}), {} idle{worst}",
            x.tier,
            tier(x.tier),
            x.up_ports,
            x.dest_max,
            x.dest_mean,
            t.dest_max_over_mean,
            x.pair_max,
            x.pair_mean,
            t.pairs_max_over_mean,
            x.idle_up_links,
        ));
    }
    v
}

#[derive(Debug, serde::Serialize)]
struct Output<'a> {
    fabric: String,
    failed_links: usize,
    /// Every failed link by name (`A--B`).
    failed_link_names: Vec<String>,
    failed_switches: Vec<String>,
    reroute: Option<topo::routing::RerouteReport>,
    lft: Option<LftBalance>,
    isolated_host_names: Vec<String>,
    unreachable_host_names: Vec<String>,
    /// One channel-dependency cycle, by name: `from->to` per channel.
    cdg_cycle_names: Vec<String>,
    /// Detours on further lanes: lanes used, leaf pairs and dependencies per lane.
    lanes: LanesOut,
    report: &'a topo::verify::VerifyReport,
}

/// The lanes of `topo::lanes::route_around`, by name.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct LanesOut {
    used: u8,
    /// Leaf pairs per lane from 1.
    leaf_pairs_per_lane: Vec<u64>,
    /// Dependencies per lane from 1.
    dependencies_per_lane: Vec<u64>,
    /// Detour entries written into the tables.
    detour_entries: usize,
    /// `[source leaf, destination leaf, lane]` of every pair on a lane ≥ 1.
    pairs: Vec<(String, String, u8)>,
    /// Why the stranded pairs could not be routed (too few lanes), if so.
    error: Option<String>,
}

impl LanesOut {
    pub(crate) fn new(f: &topo::Fabric, l: &topo::lanes::Lanes, error: Option<String>) -> Self {
        LanesOut {
            used: l.used,
            leaf_pairs_per_lane: l.per_lane.clone(),
            dependencies_per_lane: l.edges_per_lane.clone(),
            detour_entries: l.entries_added,
            pairs: l
                .pairs()
                .iter()
                .map(|&(s, d, n)| (f.node_name(s).into(), f.node_name(d).into(), n))
                .collect(),
            error,
        }
    }
}

/// A dependency cycle as `A->B` per channel (link and direction).
fn cycle_names(f: &topo::Fabric, c: &[topo::verify::Channel]) -> Vec<String> {
    c.iter()
        .map(|ch| format!("{}->{}", f.node_name(ch.from), f.node_name(ch.to)))
        .collect()
}

/// `fabric routes verify`: exit 0 when every check passes, 1 on a violation, 2 on bad input.
pub fn verify(a: VerifyArgs) -> anyhow::Result<()> {
    let f = input(match &a.design {
        Some(d) => crate::common::load_design(d),
        None => a.fabric.load(),
    });
    let set = input(a.fail.resolve(&f));
    let tenants = match &a.design {
        Some(_) => a
            .tenants
            .as_deref()
            .map(|p| crate::tenant_args::load(p, &f))
            .transpose(),
        None => crate::tenant_args::fabric_tenants(&a.fabric, &f, a.tenants.as_deref()),
    };
    let tenants = input(tenants);
    if tenants.is_none() && a.partitions.is_some() {
        input::<()>(Err(anyhow::anyhow!(
            "--partitions: needs tenants to prove against: --tenants FILE or a spec with a [[tenants]] section"
        )));
    }
    let tenants = tenants.map(|t| {
        let enf = input(crate::tenant_args::enforcement(
            &f,
            &t,
            a.partitions.as_deref(),
        ));
        (t, enf)
    });
    let mut routes = topo::Routes::compute(&f);
    let reroute = (!set.is_empty()).then(|| routes.fail_links(&f, &set.links));
    let (lanes, lane_error) = crate::lane_args::route_around(&f, &mut routes, a.lanes.lanes);
    let rep = topo::verify::verify_lanes(&f, &routes, &lanes);
    let names = |v: &[topo::NodeId]| v.iter().map(|&n| f.node_name(n).to_string()).collect();
    let out = Output {
        fabric: f.name().to_string(),
        failed_links: set.links.len(),
        failed_link_names: set.link_names(&f),
        failed_switches: set.switch_names(&f),
        isolated_host_names: names(&rep.isolated_hosts),
        unreachable_host_names: names(&rep.unreachable_hosts),
        reroute,
        lft: a.lft.then(|| lft_balance(&f, &routes)),
        cdg_cycle_names: cycle_names(&f, &rep.cdg_cycle),
        lanes: LanesOut::new(&f, &lanes, lane_error),
        report: &rep,
    };
    let mut json = crate::common::JsonOut::new(a.json.as_deref())?;
    if !matches!(json, crate::common::JsonOut::Stdout(_)) {
        print!("{}", render(&f, &out));
    }
    json.write(&out)?;
    let leaks = tenants.as_ref().is_some_and(|(t, enf)| {
        let (proof, text) = crate::tenant_args::prove(&f, &routes, t, enf);
        if matches!(json, crate::common::JsonOut::Stdout(_)) {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        !proof.ok()
    });
    if leaks {
        eprintln!(
            "{}routes verify: tenant isolation failed (leaks or blocked pairs above)",
            crate::common::ERROR_PREFIX
        );
    }
    if !rep.ok() {
        eprintln!(
            "{}routes verify: verification failed ({})",
            crate::common::ERROR_PREFIX,
            problems(&rep)
        );
        if let Some(e) = &out.lanes.error {
            eprintln!("{}routes verify: {e}", crate::common::ERROR_PREFIX);
        }
        std::process::exit(1);
    }
    if leaks {
        std::process::exit(1);
    }
    Ok(())
}

fn problems(r: &topo::verify::VerifyReport) -> String {
    let mut v = Vec::new();
    if r.unreachable_pairs > 0 {
        v.push(crate::cmd_export::unreachable_line(r));
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
        let switches = if o.failed_switches.is_empty() {
            String::new()
        } else {
            format!(
                " ({} switches: {})",
                o.failed_switches.len(),
                o.failed_switches.join(", ")
            )
        };
        let _ = writeln!(s, "failures: {} links down{switches}", o.failed_links);
        let _ = writeln!(s, "       links down: {}", list(&o.failed_link_names, 64));
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
    if r.unreachable_pairs > 0 {
        let _ = writeln!(
            s,
            "       unreachable: {} without an up*/down* path though connected, {} disconnected",
            r.unreachable_no_updown, r.unreachable_disconnected
        );
    }
    if r.pairs_on_extra_lanes > 0 || o.lanes.error.is_some() {
        let _ = writeln!(
            s,
            "       detours: {}",
            crate::lane_args::lanes_line(r, o.lanes.pairs.len()).unwrap_or_default()
        );
    }
    if let Some(e) = &o.lanes.error {
        let _ = writeln!(s, "       {e}");
    }
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
        "[{}] channel dependency graph acyclic (PFC deadlock-free): {} channels, {} dependencies{}",
        mark(r.cdg_acyclic),
        r.cdg_channels,
        r.cdg_edges,
        if r.lanes_used > 1 {
            format!(" on {} lanes, each checked alone", r.lanes_used)
        } else {
            String::new()
        }
    );
    if !o.cdg_cycle_names.is_empty() {
        let switches: Vec<&str> = r.cdg_cycle.iter().map(|c| f.node_name(c.from)).collect();
        let _ = writeln!(
            s,
            "       {} channels lie on cycles; one cycle of {} channels on lane {} (each waits for the next, the last for the first): {}",
            r.cdg_cyclic_channels,
            o.cdg_cycle_names.len(),
            r.cdg_cycle_lane,
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
        for line in balance_lines(b) {
            let _ = writeln!(s, "{line}");
        }
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
            failed_link_names: vec![],
            failed_switches: vec![],
            reroute: None,
            lft: None,
            isolated_host_names: vec![],
            unreachable_host_names: vec![],
            cdg_cycle_names: cycle_names(&f, &rep.cdg_cycle),
            lanes: LanesOut::default(),
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
        // leaves: (128 - 4) / 4 = 31 per up port; aggregation: (128 - 16) / 4 = 28; every
        // tier even for destinations and for all-to-all pairs, no idle up link.
        let lines = balance_lines(&b).join("\n");
        assert!(
            lines.contains("tier 1 (leaf): 128 up ports; destinations per up port max 31 / mean 31.00 (1.00); all-to-all pairs per up link max 124 / mean 124.0 (1.00), 0 idle; worst switch pod0-leaf0: 31 on one port vs ideal 31"),
            "{lines}"
        );
        assert!(
            lines.contains("tier 2 (spine/agg): 128 up ports; destinations per up port max 28 / mean 28.00 (1.00); all-to-all pairs per up link max 112 / mean 112.0 (1.00), 0 idle"),
            "{lines}"
        );
        let set = topo::failures::resolve(&f, &["pod0-leaf0--host0-nic0".into()]).unwrap();
        let rr = routes.fail_links(&f, &set.links);
        let rep = topo::verify::verify(&f, &routes);
        let out = Output {
            fabric: f.name().into(),
            failed_links: 1,
            failed_link_names: vec!["host0-nic0--pod0-leaf0".into()],
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
            lanes: LanesOut::default(),
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
        assert!(
            text.contains("links down: host0-nic0--pod0-leaf0"),
            "{text}"
        );
        assert!(
            text.contains(
                "unreachable: 0 without an up*/down* path though connected, 254 disconnected"
            ),
            "{text}"
        );
        assert!(text.ends_with("VERIFICATION FAILED\n"));
        assert_eq!(
            problems(&rep),
            "254 host pairs unreachable (0 without an up*/down* path though connected, 254 disconnected)"
        );
    }
}
