//! `fabric`: the command-line front end of the toolkit.

use clap::Parser;

/// fabric — AI-cluster network toolkit: topologies, routing tables, congestion control.
#[derive(Debug, Parser)]
#[command(name = "fabric", version, about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
