//! `fabric`: the command-line front end of the toolkit.
//!
//! One file per command group (`cmd_*.rs`); `common.rs` holds arguments they share.

mod cmd_build;
mod cmd_export;
mod cmd_routes;
mod cmd_sim;
mod cmd_testbed;
mod cmd_topo;
mod common;
mod failure_args;

use clap::{Parser, Subcommand};

/// fabric — AI-cluster network toolkit: topologies, routing tables, congestion control.
#[derive(Debug, Parser)]
#[command(name = "fabric", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a fabric (default: a built-in preset), route it, verify it, write its tables.
    Build(cmd_build::Args),
    /// Fabric designs: presets, counts, side-by-side comparison.
    Topo {
        #[command(subcommand)]
        command: cmd_topo::Command,
    },
    /// Routing tables: verify and export.
    Routes {
        #[command(subcommand)]
        command: RoutesCommand,
    },
    /// Packet-level simulation of congestion control and load balancing.
    Sim(cmd_sim::Args),
    /// Real veth testbeds in network namespaces (root required).
    Testbed {
        #[command(subcommand)]
        command: cmd_testbed::Command,
    },
}

#[derive(Debug, Subcommand)]
enum RoutesCommand {
    /// Verify reachability, loop freedom, up/down turns and deadlock freedom.
    Verify(cmd_routes::VerifyArgs),
    /// Export routing tables in formats other tools read.
    Export(cmd_export::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Build(a) => cmd_build::run(a),
        Command::Topo { command } => cmd_topo::run(command),
        Command::Routes { command } => match command {
            RoutesCommand::Verify(a) => cmd_routes::verify(a),
            RoutesCommand::Export(a) => cmd_export::run(a),
        },
        Command::Sim(a) => cmd_sim::run(a),
        Command::Testbed { command } => cmd_testbed::run(command),
    }
}
