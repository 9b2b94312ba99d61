//! Named presets reproducing published fabrics, shipped as spec files
//! (`topo/presets/*.toml`, embedded) that cite their source.
//!
//! * `fat-tree-k{N}` — 3-tier k-ary fat-tree (generated; Al-Fares et al., SIGCOMM 2008).
//! * `deepseek-mpft` — DeepSeek's 8-plane 2-tier fat-tree (ISCA 2025).
//! * `alibaba-hpn` — Alibaba HPN dual-plane rail-optimized pod (SIGCOMM 2024).
//! * `superpod-h100` — NVIDIA DGX SuperPOD H100 compute fabric (4 scalable units).
//! * `dragonfly-plus`, `dragonfly-plus-g{G}` — Dragonfly+ (HiPINEB 2017), G groups.

use crate::spec::{Format, Spec};
use crate::units::Rate;
use crate::{Error, Result};

/// Spec files shipped with the crate: (name, TOML text).
pub const FILES: &[(&str, &str)] = &[
    (
        "deepseek-mpft",
        include_str!("../presets/deepseek-mpft.toml"),
    ),
    ("alibaba-hpn", include_str!("../presets/alibaba-hpn.toml")),
    (
        "superpod-h100",
        include_str!("../presets/superpod-h100.toml"),
    ),
    (
        "dragonfly-plus",
        include_str!("../presets/dragonfly-plus.toml"),
    ),
];

/// One line of the preset list.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PresetInfo {
    /// Name (or pattern) to pass to [`spec`].
    pub name: String,
    /// Description.
    pub description: String,
    /// Sources.
    pub source: Vec<String>,
}

/// All presets (the parametrised ones with an example value).
pub fn list() -> Vec<PresetInfo> {
    let mut v = vec![{
        let s = crate::generators::fat_tree_spec(8, Rate::gbps(400));
        PresetInfo {
            name: "fat-tree-k{N}".into(),
            description: "3-tier k-ary fat-tree (N even): N³/4 hosts, 5N²/4 switches, 400G links"
                .into(),
            source: s.source,
        }
    }];
    for (name, _) in FILES {
        let s = spec(name).expect("shipped presets parse");
        let mut description = s.description.clone();
        if *name == "dragonfly-plus" {
            description.push_str(" (dragonfly-plus-g{G}: G groups)");
        }
        v.push(PresetInfo {
            name: name.to_string(),
            description,
            source: s.source,
        });
    }
    v
}

fn known() -> String {
    list()
        .iter()
        .map(|p| p.name.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Largest `fat-tree-k{N}`: 160³/4 = 1,024,000 hosts ≤ [`crate::spec::MAX_HOSTS`].
pub const MAX_FAT_TREE_K: u32 = 160;

/// The spec of a preset by name.
pub fn spec(name: &str) -> Result<Spec> {
    if let Some(ks) = name.strip_prefix("fat-tree-k") {
        if ks.is_empty() || !ks.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::UnknownPreset {
                name: name.into(),
                known: known(),
            });
        }
        // All digits: a number too large for u32 is out of range, not an unknown name.
        let k = ks
            .parse::<u32>()
            .ok()
            .filter(|k| (2..=MAX_FAT_TREE_K).contains(k) && k.is_multiple_of(2));
        let Some(k) = k else {
            return Err(Error::Spec {
                origin: format!("preset {name}"),
                path: "k".into(),
                msg: format!(
                    "{ks} is not an even switch radix from 2 to {MAX_FAT_TREE_K} (a k-ary fat-tree has k³/4 hosts; the largest fabric this tool builds has {} hosts)",
                    crate::spec::MAX_HOSTS
                ),
            });
        };
        return Ok(crate::generators::fat_tree_spec(k, Rate::gbps(400)));
    }
    if let Some(gs) = name.strip_prefix("dragonfly-plus-g") {
        if gs.is_empty() || !gs.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::UnknownPreset {
                name: name.into(),
                known: known(),
            });
        }
        let g: u32 = gs.parse().map_err(|_| Error::Spec {
            origin: format!("preset {name}"),
            path: "G".into(),
            msg: format!(
                "{gs} groups is too many (32 leaves + 32 spines and 1,024 hosts per group; {})",
                crate::spec::limits()
            ),
        })?;
        let mut s = spec("dragonfly-plus")?;
        s.planes[0].pods = g;
        s.name = name.to_string();
        s.description =
            format!("Dragonfly+: {g} groups × (32 leaves + 32 spines), 64-port switches");
        return Ok(s);
    }
    let (_, text) = FILES
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| Error::UnknownPreset {
            name: name.into(),
            known: known(),
        })?;
    Spec::parse(text, Format::Toml, &format!("preset {name}"))
}

/// The spec file text of a shipped preset (`None` for generated ones).
pub fn text(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Builds a preset's fabric.
pub fn build(name: &str) -> Result<crate::Fabric> {
    spec(name)?.build(&format!("preset {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier_count(f: &crate::Fabric, t: u8) -> usize {
        f.switches_in_tier(t).count()
    }

    #[test]
    fn deepseek_counts() {
        let f = build("deepseek-mpft").unwrap();
        assert_eq!(f.num_gpus(), 16_384);
        assert_eq!(f.num_switches(), 768);
        assert_eq!(f.num_planes(), 8);
        assert_eq!((tier_count(&f, 1), tier_count(&f, 2)), (512, 256));
        // GPU-NIC i of every server is in plane i only.
        let h = crate::NodeId(3 * 8 + 5);
        assert_eq!(f.host_planes(h).collect::<Vec<_>>(), vec![5]);
    }

    #[test]
    fn hpn_counts() {
        let f = build("alibaba-hpn").unwrap();
        assert_eq!(f.num_gpus(), 15_360);
        assert_eq!(f.num_planes(), 2);
        assert_eq!(tier_count(&f, 1), 2 * 120);
        assert_eq!(tier_count(&f, 2), 2 * 60);
        // Each NIC has its two ports on two different ToRs, one per plane, same rail.
        let nic = crate::NodeId(40 * 8 + 3);
        let a0 = f.attachment(nic, 0).unwrap();
        let a1 = f.attachment(nic, 1).unwrap();
        assert_ne!(a0.leaf, a1.leaf);
        assert_eq!(f.node_name(a0.leaf), "p0-pod0-leaf3");
        assert_eq!(f.node_name(a1.leaf), "p1-pod0-leaf3");
        assert_eq!(f.plane_info(0).external_up, [0, 8, 0]);
    }

    #[test]
    fn superpod_rails() {
        let f = build("superpod-h100").unwrap();
        assert_eq!(f.num_gpus(), 127 * 8);
        assert_eq!((tier_count(&f, 1), tier_count(&f, 2)), (32, 16));
        // GPU i of every server of SU 0 on rail i's leaf.
        for s in 0..32 {
            for r in 0..8 {
                let a = f.attachment(crate::NodeId(s * 8 + r), 0).unwrap();
                assert_eq!(f.node_name(a.leaf), format!("pod0-leaf{r}"));
            }
        }
    }

    /// Every switch knows its radix: the fat-tree k's is k; a SuperPOD leaf with an empty port
    /// (127 servers on 128 rail ports) still has 64; DeepSeek's switches have 64.
    #[test]
    fn switches_know_their_radix() {
        for k in [4u32, 8, 16] {
            let f = build(&format!("fat-tree-k{k}")).unwrap();
            assert!(f.switches().all(|s| f.radix(s) == k));
        }
        let f = build("superpod-h100").unwrap();
        let leaf = f.name_index()["pod3-leaf7"];
        assert_eq!((f.degree(leaf), f.radix(leaf)), (63, 64));
        assert!(f.switches().all(|s| f.radix(s) == 64));
        let f = build("deepseek-mpft").unwrap();
        assert!(f.switches().all(|s| f.radix(s) == 64));
        assert_eq!(f.radix(crate::NodeId(0)), 1);
    }

    #[test]
    fn dragonfly_param_and_errors() {
        let f = build("dragonfly-plus-g9").unwrap();
        assert_eq!(f.num_hosts(), 9 * 32 * 32);
        let e = build("dragonfly-plus-g10").unwrap_err().to_string();
        assert!(
            e.contains("planes[0].spine.up") && e.contains("9 other groups"),
            "{e}"
        );
        let e = spec("nope").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown preset `nope` (known: fat-tree-k{N}, deepseek-mpft"),
            "{e}"
        );
        assert!(spec("fat-tree-k7").is_err());
        // A number out of range is named as such, not as an unknown preset.
        for (name, e) in [
            (
                "fat-tree-k162",
                "preset fat-tree-k162: k: 162 is not an even switch radix",
            ),
            (
                "fat-tree-k99999999999999999999",
                "preset fat-tree-k99999999999999999999: k: 99999999999999999999 is not an even switch radix from 2 to 160",
            ),
            (
                "dragonfly-plus-g99999999999",
                "preset dragonfly-plus-g99999999999: G: 99999999999 groups is too many",
            ),
            ("fat-tree-k-4", "unknown preset `fat-tree-k-4`"),
            ("fat-tree-k", "unknown preset `fat-tree-k`"),
            ("dragonfly-plus-gx", "unknown preset `dragonfly-plus-gx`"),
        ] {
            let got = spec(name).unwrap_err().to_string();
            assert!(got.starts_with(e), "{name}: {got}");
        }
        assert_eq!(build("fat-tree-k4").unwrap().num_hosts(), 16);
    }

    #[test]
    fn presets_round_trip_through_every_format() {
        for name in [
            "fat-tree-k4",
            "deepseek-mpft",
            "alibaba-hpn",
            "superpod-h100",
            "dragonfly-plus-g5",
        ] {
            let s = spec(name).unwrap();
            let f0 = s.build(name).unwrap();
            let texts = [
                (s.to_toml(), Format::Toml),
                (serde_yaml_ng::to_string(&s).unwrap(), Format::Yaml),
                (serde_json::to_string(&s).unwrap(), Format::Json),
            ];
            for (t, fmt) in texts {
                let s2 = Spec::parse(&t, fmt, name).unwrap();
                assert_eq!(s2, s, "{name} {fmt:?}");
                let f = s2.build(name).unwrap();
                assert_eq!(
                    (f.num_hosts(), f.num_links()),
                    (f0.num_hosts(), f0.num_links())
                );
            }
        }
    }

    #[test]
    fn every_preset_cites_a_source() {
        for p in list() {
            assert!(!p.source.is_empty(), "{}", p.name);
        }
    }
}
