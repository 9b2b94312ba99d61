//! `fabric build` (being built; see the open issues).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`fabric build` is not implemented yet")
}
