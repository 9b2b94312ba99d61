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

use anyhow::bail;
use topo::export::Format;

use crate::cmd_export::{self, Computed, DirSink, Engine, FailArgs};
use crate::common::FabricArgs;

/// The fabric `fabric build` builds when given none.
pub const DEFAULT_PRESET: &str = "fat-tree-k8";

/// Arguments of `fabric build`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub fabric: FabricArgs,
    #[command(flatten)]
    pub fail: FailArgs,
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
}

fn ms(t: Instant) -> String {
    format!("{:.1} ms", t.elapsed().as_secs_f64() * 1e3)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let formats = cmd_export::parse_formats(&args.format)?;
    let t_all = Instant::now();

    let t = Instant::now();
    let f = cmd_export::load_fabric(&args.fabric, Some(DEFAULT_PRESET))?;
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
    let c = Computed::new(&f, args.engine, &args.fail)?;
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
        println!(
            "  failures  {} link(s) down: {} entries changed, {} next hops lost",
            rep.links_failed,
            rep.changed.len(),
            rep.width_lost
        );
    }

    let t = Instant::now();
    let v = topo::verify::verify(&f, &c.routes);
    let verdict = if v.ok() { "OK" } else { "FAILED" };
    println!(
        "  verify    {verdict}: {}/{} host pairs reachable, {} loops, {} up/down violations, {} black holes, \
         channel dependency graph {} ({} channels, {} edges) => {}  [{}]",
        v.reachable_pairs,
        v.pairs_with_common_plane,
        v.loops,
        v.updown_violations,
        v.black_holes,
        if v.cdg_acyclic { "acyclic" } else { "CYCLIC" },
        v.cdg_channels,
        v.cdg_edges,
        if v.cdg_acyclic {
            "deadlock-free"
        } else {
            "may deadlock under PFC"
        },
        ms(t)
    );
    if !v.ok() {
        bail!("verification failed; not writing tables");
    }

    let t = Instant::now();
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
