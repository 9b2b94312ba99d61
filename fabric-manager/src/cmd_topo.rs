//! `fabric topo` (being built; see the open issues).

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Not implemented yet.
    Todo,
}

pub fn run(_command: Command) -> anyhow::Result<()> {
    anyhow::bail!("`fabric topo` is not implemented yet")
}
