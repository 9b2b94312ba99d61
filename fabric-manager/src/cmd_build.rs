//! `fabric build`: the one-command tour. Builds a fabric (default: the
//! `fat-tree-k8` preset, a 3-tier 8-ary fat-tree of 128 hosts and 80 switches at
//! 400 Gb/s), computes its routing tables, verifies them, prints a summary and
//! writes the tables in every export format under `./out/`.
//!
//! ```text
//! cargo run --release --bin fabric -- build
//! cargo run --release --bin fabric -- build --preset fat-tree-k16 --engine single-path --out /tmp/k16
//! ```

use std::path::PathBuf;
use std::time::Instant;

use topo::export::Format;

use crate::cmd_export::{self, Computed, DirSink, Engine};
use crate::common::FabricArgs;
use crate::failure_args::{FailureArgs, input};

/// Verifies the tables and prints the verdict line (and what failed); true when all pass.
fn verify_step(f: &topo::Fabric, c: &Computed) -> bool {
    let t = Instant::now();
    let v = c.verify(f);
    let verdict = if v.ok() { "OK" } else { "FAILED" };
    println!(
        "  verify    {verdict}: {}/{} host pairs reachable, {} loops, {} up/down violations, {} black holes, \
         channel dependency graph {} ({} channels, {} edges{}) => {}  [{}]",
        v.reachable_pairs,
        v.pairs_with_common_plane,
        v.loops,
        v.updown_violations,
        v.black_holes,
        if v.cdg_acyclic { "acyclic" } else { "CYCLIC" },
        v.cdg_channels,
        v.cdg_edges,
        if v.lanes_used > 1 {
            format!(", over {} lanes, each checked alone", v.lanes_used)
        } else {
            String::new()
        },
        if v.cdg_acyclic {
            "deadlock-free"
        } else {
            "may deadlock under PFC"
        },
        ms(t)
    );
    if v.unreachable_pairs > 0 {
        println!("            {}", cmd_export::unreachable_line(&v));
    }
    if let Some(line) = crate::lane_args::lanes_line(&v, c.lanes.pairs().len()) {
        println!("  lanes     {line}");
    }
    if let Some(e) = &c.lane_error {
        println!("            {e}");
    }
    if !v.cdg_cycle.is_empty() {
        let cycle = v
            .cdg_cycle
            .iter()
            .map(|ch| format!("{}->{}", f.node_name(ch.from), f.node_name(ch.to)))
            .collect::<Vec<_>>();
        println!("            dependency cycle: {}", cycle.join(", "));
    }
    v.ok()
}

/// The fabric `fabric build` builds when given none.
pub const DEFAULT_PRESET: &str = "fat-tree-k8";

/// Arguments of `fabric build`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub fabric: FabricArgs,
    #[command(flatten)]
    pub fail: FailureArgs,
    #[command(flatten)]
    pub lanes: crate::lane_args::LaneArgs,
    /// Routing engine.
    #[arg(long, value_enum, default_value_t = Engine::Ecmp)]
    pub engine: Engine,
    /// Output directory.
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub out: PathBuf,
    /// Formats to write (default: all).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "all",
        value_name = "FORMAT"
    )]
    pub format: Vec<String>,
    #[command(flatten)]
    pub size: crate::cmd_export_size::SizeArgs,
}

fn ms(t: Instant) -> String {
    format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let formats = input(cmd_export::parse_formats(&args.format));
    input(cmd_export::check_out_dir(&args.out));
    let t_all = Instant::now();

    let t = Instant::now();
    let f = input(args.fabric.load_or(DEFAULT_PRESET));
    let failures = input(args.fail.resolve(&f));
    let built = ms(t);
    println!("fabric build: {}", f.name());
    println!(
        "  topology  {} hosts (NICs), {} GPUs, {} switches, {} links, {} plane(s)  [{built}]",
        f.num_hosts(),
        f.num_gpus(),
        f.num_switches(),
        f.num_links(),
        f.num_planes()
    );

    let t = Instant::now();
    let c = input(Computed::for_formats(
        &f,
        args.engine,
        failures,
        args.lanes.lanes,
        formats.iter(),
    ));
    let w = c.routes.width_stats();
    println!(
        "  routing   {}: {} entries, ECMP width min {} / mean {:.2} / max {}, {} next-hop groups{}  [{}]",
        match args.engine {
            Engine::Ecmp => "up*/down* ECMP",
            Engine::SinglePath => "single-path d-mod-k",
        },
        w.entries,
        w.min,
        w.mean,
        w.max,
        w.groups,
        c.lft
            .as_ref()
            .map(|l| format!(", {} single-path entries", l.num_entries()))
            .unwrap_or_default(),
        ms(t)
    );

    if let Some(rep) = &c.reroute {
        println!("  failures  {}", c.failures.summary(&f));
        println!(
            "            re-route: {} entries changed, {} next hops lost",
            rep.changed.len(),
            rep.width_lost
        );
    }

    if !verify_step(&f, &c) {
        eprintln!(
            "{}build: verification failed; not writing tables",
            crate::common::ERROR_PREFIX
        );
        std::process::exit(1);
    }
    let lines = crate::cmd_routes::balance_lines(&crate::cmd_routes::lft_balance(&f, &c.routes));
    println!("  balance   {}", lines[0]);
    for l in &lines[1..] {
        println!("            {}", l.trim_start());
    }

    let t = Instant::now();
    input(crate::cmd_export_size::check(
        &f,
        &c,
        &formats,
        args.size.max_output,
    ));
    let mut sink = DirSink::dir(&args.out);
    cmd_export::write_formats(&f, &c, &formats, &mut sink, &args.out)?;
    let bytes: u64 = sink.written.iter().map(|w| w.bytes).sum();
    println!(
        "  export    {} format(s), {} files, {}  [{}]",
        formats.len(),
        sink.written.len(),
        cmd_export::human(bytes),
        ms(t)
    );
    println!("  total     {}", ms(t_all));
    println!("wrote under {}/:", args.out.display());
    cmd_export::print_written(&sink.written);
    if formats.contains(&Format::Opensm) {
        println!(
            "(opensm/plane*/ load unchanged in ibsim and `opensm -R file -U lfts.dump`: see docs/exports.md)"
        );
    }
    Ok(())
}
