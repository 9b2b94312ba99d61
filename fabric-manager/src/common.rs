//! Arguments shared by several commands, and loading a fabric from a spec file or preset.

use std::path::{Path, PathBuf};

use anyhow::Context;

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

impl FabricArgs {
    /// The spec and its origin (file name or `preset NAME`). Errors if neither is given.
    pub fn spec(&self) -> anyhow::Result<(topo::Spec, String)> {
        match (&self.fabric, &self.preset) {
            (Some(path), _) => read_spec_file(path),
            (None, Some(name)) => preset_spec(name),
            (None, None) => anyhow::bail!(
                "no fabric given: pass --fabric SPEC_FILE or --preset NAME (see `fabric topo presets`)"
            ),
        }
    }

    /// Loads and builds the fabric.
    pub fn load(&self) -> anyhow::Result<topo::Fabric> {
        let (spec, origin) = self.spec()?;
        Ok(spec.build(&origin)?)
    }
}

/// Reads a spec file; the format comes from the extension.
pub fn read_spec_file(path: &Path) -> anyhow::Result<(topo::Spec, String)> {
    let origin = path.display().to_string();
    let format = topo::Format::from_path(&origin).with_context(|| {
        format!("{origin}: unknown spec format (expected a .toml, .yaml, .yml or .json file)")
    })?;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read fabric spec {origin}"))?;
    let spec = topo::Spec::parse(&text, format, &origin)?;
    Ok((spec, origin))
}

/// A preset's spec.
pub fn preset_spec(name: &str) -> anyhow::Result<(topo::Spec, String)> {
    Ok((topo::presets::spec(name)?, format!("preset {name}")))
}

/// A design named on the command line: an existing file, else a preset name.
pub fn design_spec(arg: &str) -> anyhow::Result<(topo::Spec, String)> {
    let p = Path::new(arg);
    if p.exists() {
        read_spec_file(p)
    } else {
        preset_spec(arg)
    }
}

/// Loads and builds a design named on the command line.
pub fn load_design(arg: &str) -> anyhow::Result<topo::Fabric> {
    let (spec, origin) = design_spec(arg)?;
    Ok(spec.build(&origin)?)
}

/// Reads a price list (TOML) or returns the defaults.
pub fn prices(path: Option<&Path>) -> anyhow::Result<topo::analysis::PriceList> {
    let Some(path) = path else {
        return Ok(Default::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read price list {}", path.display()))?;
    let de = toml::Deserializer::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e))?;
    serde_path_to_error::deserialize(de)
        .map_err(|e| anyhow::anyhow!("{}: {}: {}", path.display(), e.path(), e.inner().message()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fabric-common-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn spec_file_errors_name_file_and_field() {
        let p = temp(
            "bad.toml",
            "name = \"x\"\n[hosts]\nrate = \"400G\"\n[[planes]]\nleaves_per_pod = 4\nleaf = { radix = 48, down = 32, up = 32 }\nspine = { radix = 64 }\n",
        );
        let args = FabricArgs {
            fabric: Some(p.clone()),
            preset: None,
        };
        let e = args.load().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: planes[0].leaf.radix: 48 ports cannot give 32 down + 32 up",
                p.display()
            )
        );
        let p2 = temp("spec.txt", "");
        let e = read_spec_file(&p2).unwrap_err().to_string();
        assert!(e.contains("unknown spec format"), "{e}");
        let e = FabricArgs {
            fabric: None,
            preset: None,
        }
        .load()
        .unwrap_err()
        .to_string();
        assert!(e.contains("--fabric SPEC_FILE or --preset NAME"), "{e}");
        let e = load_design("no-such-design").unwrap_err().to_string();
        assert!(e.starts_with("unknown preset `no-such-design`"), "{e}");
        std::fs::remove_dir_all(p.parent().unwrap()).ok();
    }

    #[test]
    fn yaml_spec_and_prices() {
        let p = temp(
            "ok.yaml",
            "name: small\nhosts: {rate: 100G}\nplanes:\n  - leaves_per_pod: 2\n    leaf: {radix: 4, down: 2, up: 2}\n    spine: {radix: 2}\n",
        );
        let f = load_design(p.to_str().unwrap()).unwrap();
        assert_eq!((f.num_hosts(), f.num_switches()), (4, 4));
        let pr = temp("prices.toml", "copper_usd = 1.0\nbogus = 2\n");
        let e = prices(Some(&pr)).unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        let pr = temp("prices2.toml", "copper_usd = 1.0\n");
        assert_eq!(prices(Some(&pr)).unwrap().copper_usd, 1.0);
        std::fs::remove_dir_all(p.parent().unwrap()).ok();
    }
}
