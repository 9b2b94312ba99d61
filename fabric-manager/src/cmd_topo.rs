//! `fabric topo`: presets, the figures of one design, side-by-side comparison.

use std::path::PathBuf;

use crate::common::{self, FabricArgs};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List the named presets and their sources.
    Presets {
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Print a design's counts: hosts, GPUs, switches per tier, links, bisection, oversubscription.
    Show(ShowArgs),
    /// Put designs (spec files or preset names) side by side.
    Compare(CompareArgs),
    /// Print a preset's spec file (a starting point for your own).
    Spec {
        /// Preset name.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Spec file or preset name (alternative to --fabric / --preset).
    pub design: Option<String>,
    #[command(flatten)]
    pub fabric: FabricArgs,
    /// Price list (TOML) overriding the default prices.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// JSON: `--json FILE`, or `--json` alone for standard output (see `common::JsonOut`).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Spec files or preset names.
    #[arg(required = true, num_args = 1..)]
    pub designs: Vec<String>,
    /// Price list (TOML) overriding the default prices.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// JSON: `--json FILE`, or `--json` alone for standard output (see `common::JsonOut`).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<std::path::PathBuf>,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Presets { json } => presets(json),
        Command::Show(a) => show(a),
        Command::Compare(a) => compare(a),
        Command::Spec { name } => {
            match topo::presets::text(&name) {
                Some(t) => print!("{t}"),
                None => print!("{}", topo::presets::spec(&name)?.to_toml()),
            }
            Ok(())
        }
    }
}

fn presets(json: bool) -> anyhow::Result<()> {
    let list = topo::presets::list();
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    for p in list {
        println!("{:<16} {}", p.name, p.description);
        for s in &p.source {
            println!("{:<16}   source: {s}", "");
        }
    }
    Ok(())
}

fn summarize(f: &topo::Fabric, prices: &topo::analysis::PriceList) -> topo::analysis::Summary {
    let r = topo::Routes::compute(f);
    topo::analysis::summarize(f, &r, prices)
}

fn show(a: ShowArgs) -> anyhow::Result<()> {
    let f = match &a.design {
        Some(d) => common::load_design(d)?,
        None => a.fabric.load()?,
    };
    let prices = common::prices(a.prices.as_deref())?;
    let s = summarize(&f, &prices);
    let mut json = common::JsonOut::new(a.json.as_deref())?;
    if !matches!(json, common::JsonOut::Stdout(_)) {
        print!("{}", topo::analysis::render_table(std::slice::from_ref(&s)));
    }
    json.write(&s)?;
    Ok(())
}

fn compare(a: CompareArgs) -> anyhow::Result<()> {
    let prices = common::prices(a.prices.as_deref())?;
    let mut all = Vec::new();
    for d in &a.designs {
        let f = common::load_design(d)?;
        all.push(summarize(&f, &prices));
    }
    let mut json = common::JsonOut::new(a.json.as_deref())?;
    if !matches!(json, common::JsonOut::Stdout(_)) {
        print!("{}", topo::analysis::render_table(&all));
    }
    json.write(&all)?;
    Ok(())
}
