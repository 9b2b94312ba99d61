//! `fabric`: the command-line front end of the toolkit.
//!
//! One file per command group (`cmd_*.rs`); `common.rs` holds arguments they share.

mod cmd_build;
mod cmd_export;
mod cmd_export_size;
mod cmd_flow;
mod cmd_place;
mod cmd_plan;
mod cmd_plan_jobs;
mod cmd_routes;
mod cmd_sim;
mod cmd_status;
mod cmd_testbed;
mod cmd_testbed_compare;
mod cmd_testbed_frr;
mod cmd_topo;
mod common;
mod failure_args;
mod lane_args;
mod plan_plots;
mod record;
mod serve;
mod sim_knobs;
mod tenant_args;
mod veth_plots;

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
    /// Flow-level model: a collective or traffic pattern on a design, with a load-balancing
    /// policy and failed links: bus bandwidth and completion time.
    Flow(Box<cmd_flow::Args>),
    /// Resilience planning: what component failures cost a design over weeks of training.
    Plan {
        #[command(subcommand)]
        command: cmd_plan::Command,
    },
    /// Topology-aware placement: place a job under several policies and score them with
    /// the flow model, replay a job trace, print a daemon's drain suggestions.
    Place {
        #[command(subcommand)]
        command: cmd_place::Command,
    },
    /// Run the daemon: own a fabric, serve its telemetry (HTTP API, stream, Prometheus).
    Serve(Box<serve::Args>),
    /// Ask a running daemon for a summary.
    Status(cmd_status::Args),
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

fn main() -> std::process::ExitCode {
    restore_default_sigpipe();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}{}", common::ERROR_PREFIX, common::error_line(&e));
            std::process::ExitCode::from(common::exit_status(&e))
        }
    }
}

/// Like other Unix tools, die quietly when the reader of our output goes away
/// (`fabric sim … | head`): Rust ignores SIGPIPE by default, which turns a closed pipe
/// into a panic inside `println!`.
fn restore_default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL at start-up, before any thread
    // exists, has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Build(a) => cmd_build::run(a),
        Command::Topo { command } => cmd_topo::run(command),
        Command::Routes { command } => match command {
            RoutesCommand::Verify(a) => cmd_routes::verify(a),
            RoutesCommand::Export(a) => cmd_export::run(a),
        },
        Command::Sim(a) => cmd_sim::run(a),
        Command::Flow(a) => cmd_flow::run(*a),
        Command::Plan { command } => cmd_plan::run(command),
        Command::Place { command } => cmd_place::run(command),
        Command::Testbed { command } => cmd_testbed::run(command),
        Command::Serve(a) => serve::main(*a),
        Command::Status(a) => cmd_status::run(a),
    }
}
