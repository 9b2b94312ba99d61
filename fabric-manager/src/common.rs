//! Arguments shared by several commands.

use std::path::PathBuf;

/// Which fabric to work on: a spec file or a named preset.
#[derive(Debug, Clone, clap::Args)]
pub struct FabricArgs {
    /// Fabric spec file (TOML, YAML or JSON, chosen by extension).
    #[arg(long, value_name = "SPEC", conflicts_with = "preset")]
    pub fabric: Option<PathBuf>,
    /// Named preset (see `fabric topo presets`).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
}
