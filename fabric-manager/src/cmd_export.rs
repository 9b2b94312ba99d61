//! `fabric export` (being built; see the open issues).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`fabric export` is not implemented yet")
}
