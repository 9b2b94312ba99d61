//! Failure and repair rates per component class, with defaults that cite their source, and
//! overrides from a TOML file.
//!
//! Each component fails as a Poisson process with rate `AFR / 8,760 h` while it is up and
//! is repaired after an exponential time with mean `mttr_hours`.
//!
//! # Defaults and where they come from
//! | class | AFR | mean repair | source |
//! |---|---|---|---|
//! | host link (NIC–ToR cable/optics) | 0.684 %/yr | 6 h | AFR: Alibaba HPN (Qian et al., SIGCOMM 2024, §2): 0.057 % of NIC–ToR links fail per month, × 12. Repair: **assumption** (optic or cable swap within a shift). |
//! | fabric link (switch–switch) | 0.684 %/yr | 6 h | **Assumption**: same per-link rate as host links (HPN reports NIC–ToR links only); repair as above. |
//! | leaf / ToR | 0.612 %/yr | 2 h | AFR: Alibaba HPN §2: 0.051 % of ToR switches hit a critical error (crash) per month, × 12. Repair: **assumption**; Singh et al. (Microsoft, "Surviving switch failures in cloud datacenters", CCR 51(2), 2021) report half of switch failures last under 6 min (reboots), the rest need hands. |
//! | spine / aggregation | 8 %/yr | 2 h | Singh et al. 2021: a 2 % chance that a data-center switch fails within 3 months (180,000 switches), ≈ 8 %/yr. Repair: **assumption** as for leaves. |
//! | core | 8 %/yr | 2 h | as spine. |
//! | NIC | 0.289 %/yr | 24 h | Llama 3 (Dubey et al., "The Llama 3 Herd of Models", 2024, Table 5): 7 NIC interruptions in 54 days on 16,384 GPUs (one NIC per GPU): 7 / 16,384 × 365 / 54. Repair: **assumption** (server swap, one day). |
//!
//! Sanity check against Llama 3: the same table lists 35 "network switch/cable"
//! interruptions in 54 days (0.65/day) for 16,384 GPUs. With these defaults a 16,384-GPU
//! single-homed fabric of ~32,768 links and ~800 switches sees ≈ 0.61 link failures/day
//! plus ≈ 0.01–0.2 switch failures/day, the same order.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Hours per year (365 days).
pub const HOURS_PER_YEAR: f64 = 8760.0;

/// Failure and repair of one component class.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassRate {
    /// Annualised failure rate, percent of components per year.
    pub afr_percent: f64,
    /// Mean time to repair, hours.
    pub mttr_hours: f64,
}

impl ClassRate {
    /// Failures per component-hour.
    pub fn per_hour(&self) -> f64 {
        self.afr_percent / 100.0 / HOURS_PER_YEAR
    }
}

/// Rates of every class.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// NIC–leaf links (cable, optics).
    pub host_link: ClassRate,
    /// Switch–switch links.
    pub fabric_link: ClassRate,
    /// Leaf / ToR switches.
    pub leaf: ClassRate,
    /// Spine (2-tier) / aggregation (3-tier) switches.
    pub spine: ClassRate,
    /// Core switches.
    pub core: ClassRate,
    /// NICs (all ports of the NIC).
    pub nic: ClassRate,
}

impl Default for Rates {
    /// The cited defaults of the module docs.
    fn default() -> Self {
        Rates {
            host_link: ClassRate {
                afr_percent: 0.057 * 12.0,
                mttr_hours: 6.0,
            },
            fabric_link: ClassRate {
                afr_percent: 0.057 * 12.0,
                mttr_hours: 6.0,
            },
            leaf: ClassRate {
                afr_percent: 0.051 * 12.0,
                mttr_hours: 2.0,
            },
            spine: ClassRate {
                afr_percent: 8.0,
                mttr_hours: 2.0,
            },
            core: ClassRate {
                afr_percent: 8.0,
                mttr_hours: 2.0,
            },
            nic: ClassRate {
                afr_percent: 7.0 / 16_384.0 * 365.0 / 54.0 * 100.0,
                mttr_hours: 24.0,
            },
        }
    }
}

/// A class in a rates file: any field may be left out (keeps the default).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassOverride {
    afr_percent: Option<f64>,
    mttr_hours: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RatesFile {
    #[serde(default)]
    host_link: ClassOverride,
    #[serde(default)]
    fabric_link: ClassOverride,
    #[serde(default)]
    leaf: ClassOverride,
    #[serde(default)]
    spine: ClassOverride,
    #[serde(default)]
    core: ClassOverride,
    #[serde(default)]
    nic: ClassOverride,
}

/// Largest AFR accepted (percent per year): 100,000 % is ~1,000 failures per component-year.
pub const MAX_AFR_PERCENT: f64 = 100_000.0;
/// Largest mean repair time accepted (hours): ten years.
pub const MAX_MTTR_HOURS: f64 = 87_600.0;

impl Rates {
    /// Parses a TOML rates file (`[leaf] afr_percent = 1.5`, …) over the defaults.
    /// `origin` names the file in errors.
    pub fn parse_toml(text: &str, origin: &str) -> Result<Rates> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Rates {
            origin: origin.into(),
            path: ".".into(),
            msg: e.message().to_string(),
        })?;
        let file: RatesFile = serde_path_to_error::deserialize(de).map_err(|e| Error::Rates {
            origin: origin.into(),
            path: e.path().to_string(),
            msg: e.inner().message().to_string(),
        })?;
        let mut r = Rates::default();
        let classes = [
            ("host_link", file.host_link, &mut r.host_link),
            ("fabric_link", file.fabric_link, &mut r.fabric_link),
            ("leaf", file.leaf, &mut r.leaf),
            ("spine", file.spine, &mut r.spine),
            ("core", file.core, &mut r.core),
            ("nic", file.nic, &mut r.nic),
        ];
        for (name, o, slot) in classes {
            if let Some(a) = o.afr_percent {
                if !(a.is_finite() && (0.0..=MAX_AFR_PERCENT).contains(&a)) {
                    return Err(Error::Rates {
                        origin: origin.into(),
                        path: format!("{name}.afr_percent"),
                        msg: format!(
                            "{a} is not a failure rate from 0 to {MAX_AFR_PERCENT} percent per year"
                        ),
                    });
                }
                slot.afr_percent = a;
            }
            if let Some(m) = o.mttr_hours {
                if !(m.is_finite() && m > 0.0 && m <= MAX_MTTR_HOURS) {
                    return Err(Error::Rates {
                        origin: origin.into(),
                        path: format!("{name}.mttr_hours"),
                        msg: format!(
                            "{m} is not a repair time above 0 and at most {MAX_MTTR_HOURS} hours"
                        ),
                    });
                }
                slot.mttr_hours = m;
            }
        }
        Ok(r)
    }

    /// The classes with their names, in a fixed order.
    pub fn classes(&self) -> [(&'static str, ClassRate); 6] {
        [
            ("host_link", self.host_link),
            ("fabric_link", self.fabric_link),
            ("leaf", self.leaf),
            ("spine", self.spine),
            ("core", self.core),
            ("nic", self.nic),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let d = Rates::default();
        assert!((d.nic.afr_percent - 0.2888).abs() < 1e-3);
        let r = Rates::parse_toml("[leaf]\nafr_percent = 2.5\n", "r.toml").unwrap();
        assert_eq!(r.leaf.afr_percent, 2.5);
        assert_eq!(r.leaf.mttr_hours, d.leaf.mttr_hours);
        assert_eq!(r.spine, d.spine);
        let e = Rates::parse_toml("[leaf]\nafr = 2.5\n", "r.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.toml: leaf.afr: unknown field `afr`"),
            "{e}"
        );
        let e = Rates::parse_toml("[spine]\nmttr_hours = \"x\"\n", "r.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.toml: spine.mttr_hours: invalid type"),
            "{e}"
        );
        let e = Rates::parse_toml("[nic]\nmttr_hours = 0.0\n", "r.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "r.toml: nic.mttr_hours: 0 is not a repair time above 0 and at most 87600 hours"
        );
        let e = Rates::parse_toml("[bogus]\n", "r.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.toml: bogus: unknown field"), "{e}");
    }
}
