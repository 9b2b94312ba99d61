//! `fabric routes verify` (being built; see the open issues).

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {}

pub fn verify(_args: VerifyArgs) -> anyhow::Result<()> {
    anyhow::bail!("`fabric routes verify` is not implemented yet")
}
