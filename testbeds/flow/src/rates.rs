//! Failure and repair rates per component class, with defaults that cite their source, and
//! overrides from a TOML file.
//!
//! Each component fails as a Poisson process with rate `AFR / 8,760 h` while it is up and
//! is repaired after an exponential time with mean `mttr_hours`.
//!
//! # Defaults and where they come from
//! The whole cluster, not only the network: the GPU, host and software classes carry the
//! Llama 3 root-cause table (Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783,
//! 2024, §3.3.4, Table 5: 419 unexpected interruptions in a 54-day snapshot of pre-training
//! on 16,384 H100 GPUs, 2,048 servers of 8). A count `n` of that table becomes a rate per
//! component-year as `n / components × 365 / 54`.
//!
//! | class | AFR | mean repair | source |
//! |---|---|---|---|
//! | host link (NIC–ToR cable/optics) | 0.684 %/yr | 6 h | AFR: Alibaba HPN (Qian et al., SIGCOMM 2024, §2): 0.057 % of NIC–ToR links fail per month, × 12. Repair: **assumption** (optic or cable swap within a shift). |
//! | fabric link (switch–switch) | 0.684 %/yr | 6 h | **Assumption**: same per-link rate as host links (HPN reports NIC–ToR links only); repair as above. |
//! | leaf / ToR, spine / aggregation, core | 0.612 %/yr | 2 h | One basis for every tier (the same kind of switch): Alibaba HPN §2: 0.051 % of switches hit a critical error (crash) per month, × 12. Repair: **assumption**; Singh et al. (Microsoft, "Surviving switch failures in cloud datacenters", CCR 51(2), 2021) report half of switch failures last under 6 min (reboots). Singh et al.'s own rate (2 % of switches within 3 months, ≈ 8 %/yr, all failure kinds) is the pessimistic alternative in `docs/planner/rates-pessimistic.toml`. |
//! | NIC | 0.289 %/yr | 24 h | Llama 3 Table 5: 7 NIC interruptions, one NIC per GPU: 7 / 16,384 × 365 / 54. Repair: **assumption** (server swap, one day). |
//! | GPU (takes its whole scale-up domain down) | 11.06 %/yr per GPU | 24 h | Llama 3 Table 5, the GPU rows: faulty GPU 148 + HBM3 72 + SRAM 19 + GPU system processor 17 + silent data corruption 6 + thermal interface/sensor 6 = 268: 268 / 16,384 × 365 / 54. Repair: **assumption** (swap the GPU board or the server, one day). |
//! | host (server) | 15.18 %/yr per server | 24 h | Llama 3 Table 5, the host rows: unplanned host maintenance 32 + SSD 3 + power supply 3 + server chassis 2 + IO expansion board 2 + CPU 2 + system memory 2 = 46 over 2,048 servers: 46 / 2,048 × 365 / 54. Repair: **assumption**. |
//! | software (no hardware down; restarts the job) | 2.60 %/yr per job GPU | — | Llama 3 Table 5: software bug 54 + dependency 2 + NCCL watchdog timeouts of unknown cause 7 = 63: 63 / 16,384 × 365 / 54, per GPU of the job. |
//!
//! The remaining rows of the table, "network switch/cable" (35), are the network classes
//! above: 35 + 7 (NIC) + 268 + 46 + 63 = 419. Planned maintenance (47 more interruptions in
//! the same snapshot) is not modelled.

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
    /// GPUs (per GPU); a failure takes its scale-up domain down until repaired.
    pub gpu: ClassRate,
    /// Servers (CPU, memory, power, SSD, chassis, unplanned maintenance), per server.
    pub host: ClassRate,
    /// Software failures, per GPU of the job; they restart the job and take nothing down
    /// (`mttr_hours` is unused).
    pub software: ClassRate,
}

/// Every switch tier: Alibaba HPN §2, 0.051 % of switches crash per month (module docs).
const SWITCH: ClassRate = ClassRate {
    afr_percent: 0.051 * 12.0,
    mttr_hours: 2.0,
};

/// Llama 3 Table 5 (module docs): `count` interruptions over `components` in 54 days, as
/// percent per component-year.
fn llama3_percent(count: f64, components: f64) -> f64 {
    count / components * 365.0 / 54.0 * 100.0
}

/// Number of component classes.
pub const NUM_CLASSES: usize = 9;

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
            leaf: SWITCH,
            spine: SWITCH,
            core: SWITCH,
            nic: ClassRate {
                afr_percent: llama3_percent(7.0, 16_384.0),
                mttr_hours: 24.0,
            },
            gpu: ClassRate {
                afr_percent: llama3_percent(148.0 + 72.0 + 19.0 + 17.0 + 6.0 + 6.0, 16_384.0),
                mttr_hours: 24.0,
            },
            host: ClassRate {
                afr_percent: llama3_percent(32.0 + 3.0 + 3.0 + 2.0 + 2.0 + 2.0 + 2.0, 2_048.0),
                mttr_hours: 24.0,
            },
            software: ClassRate {
                afr_percent: llama3_percent(54.0 + 2.0 + 7.0, 16_384.0),
                mttr_hours: 1.0,
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
    #[serde(default)]
    gpu: ClassOverride,
    #[serde(default)]
    host: ClassOverride,
    #[serde(default)]
    software: ClassOverride,
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
            ("gpu", file.gpu, &mut r.gpu),
            ("host", file.host, &mut r.host),
            ("software", file.software, &mut r.software),
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
    pub fn classes(&self) -> [(&'static str, ClassRate); NUM_CLASSES] {
        [
            ("host_link", self.host_link),
            ("fabric_link", self.fabric_link),
            ("leaf", self.leaf),
            ("spine", self.spine),
            ("core", self.core),
            ("nic", self.nic),
            ("gpu", self.gpu),
            ("host", self.host),
            ("software", self.software),
        ]
    }

    /// The network's share only: the GPU, host and software classes set to zero.
    pub fn network_only(mut self) -> Rates {
        for c in [&mut self.gpu, &mut self.host, &mut self.software] {
            c.afr_percent = 0.0;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let d = Rates::default();
        assert!((d.nic.afr_percent - 0.2888).abs() < 1e-3);
        // Llama 3 Table 5 back from the defaults: 16,384 GPUs, 2,048 servers, 54 days
        let per_54d = |c: ClassRate, n: f64| c.per_hour() * n * 54.0 * 24.0;
        assert!((per_54d(d.gpu, 16_384.0) - 268.0).abs() < 0.5);
        assert!((per_54d(d.host, 2_048.0) - 46.0).abs() < 0.1);
        assert!((per_54d(d.software, 16_384.0) - 63.0).abs() < 0.1);
        assert_eq!(d.leaf, d.spine);
        assert_eq!(d.spine, d.core);
        assert_eq!(d.network_only().gpu.afr_percent, 0.0);
        let r = Rates::parse_toml("[gpu]\nmttr_hours = 48\n", "r.toml").unwrap();
        assert_eq!(r.gpu.mttr_hours, 48.0);
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
