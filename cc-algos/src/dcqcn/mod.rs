//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015): the reaction point ([`DcqcnRp`], sender), the notification point
//! ([`DcqcnNp`], receiver) and, in [`crate::marking`], the congestion point (switch).
//!
//! One [`DcqcnConfig`] carries every knob; three presets fix them with their sources:
//!
//! | knob | `paper` | `mellanox` | `hpcc-ns3` |
//! |---|---|---|---|
//! | g | 1/256 | 5/1024 (dce_tcp_g = 1019) | 1/256 |
//! | α update | on CNP, decay after 55 µs without | every 1 µs (dce_tcp_rtt) | every 1 µs |
//! | initial α | 1 | 1023/1024 | 1 |
//! | rate-increase timer T | 55 µs | 300 µs | 300 µs |
//! | byte counter B | 10 MB | 32,767 B | off |
//! | F (fast-recovery steps) | 5 | 1 | 1 |
//! | R_AI / R_HAI | 40 / 200 Mb/s | 5 / 50 Mb/s | 5 / 50 Mb/s per 25 Gb/s of line rate |
//! | hyper increase | (min(T,BC) − F)·R_HAI | R_HAI per step | R_HAI per step |
//! | min spacing of rate cuts | none | 4 µs | 4 µs |
//! | target-rate clamp on every cut | yes | only after an increase | only after an increase |
//! | min rate | 1 Mb/s (paper gives none) | 1 Mb/s | 1000 Mb/s |
//! | CNP interval (NP) | 50 µs | 4 µs | 0 (every CE mark) |
//!
//! **Counting stages.** `T` and `BC` count the timer and byte-counter expiries since the
//! last rate cut, *before* the current one (HPCC ns-3 `m_rpTimeStage`, incremented after
//! the increase). With F = 5 this gives exactly five fast-recovery steps, as the paper's
//! text says, and the first hyper step adds (F+1−F)·R_HAI = 1·R_HAI. Writing the paper's
//! rule with counters incremented *before* the check would need `min − F + 1` to mean
//! the same; [`HyperIncrease::Scaled`] uses `min − F` on pre-increment counters.

mod np;
mod rp;

pub use np::DcqcnNp;
pub use rp::{DcqcnRp, alpha_half_life_periods};

use crate::error::{Error, Result, invalid};
use crate::units::{Bytes, Duration, Rate};
use serde::{Deserialize, Serialize};

/// How α (the congestion estimate) is updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlphaUpdate {
    /// Paper: on each CNP `α = (1−g)α + g` at once; after each full α period without
    /// a CNP, `α = (1−g)α` (the period restarts at every CNP).
    OnCnp,
    /// NIC firmware / HPCC ns-3: every α period, `α = (1−g)α + g` if a CNP arrived during
    /// the period, else `α = (1−g)α`; periods are aligned to the first CNP.
    Periodic,
}

/// How far hyper increase raises the target rate per step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HyperIncrease {
    /// Paper: `RT += (min(T, BC) − F)·R_HAI` (stages counted before this event).
    Scaled,
    /// Mellanox as modelled by HPCC ns-3 (`HyperIncreaseMlx`): `RT += R_HAI`.
    Flat,
}

/// The named parameter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DcqcnPreset {
    /// Zhu et al., SIGCOMM 2015.
    #[default]
    Paper,
    /// NVIDIA/Mellanox ConnectX firmware defaults.
    Mellanox,
    /// The DCQCN setting of the HPCC ns-3 simulator (`run.py --cc dcqcn`).
    HpccNs3,
}

impl DcqcnPreset {
    /// Accepted names for [`core::str::FromStr`].
    pub const NAMES: &'static str = "paper, mellanox, hpcc-ns3";
}

impl core::str::FromStr for DcqcnPreset {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "paper" => Ok(DcqcnPreset::Paper),
            "mellanox" | "mlx" => Ok(DcqcnPreset::Mellanox),
            "hpcc-ns3" | "hpcc" => Ok(DcqcnPreset::HpccNs3),
            _ => Err(Error::UnknownName {
                what: "DCQCN preset",
                name: s.to_string(),
                expected: Self::NAMES,
            }),
        }
    }
}

/// Every DCQCN parameter, with units. Build with a preset, adjust fields, then
/// [`DcqcnConfig::build`] (which validates).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DcqcnConfig {
    /// Line rate: the initial and maximum sending rate.
    pub line_rate: Rate,
    /// The rate never falls below this.
    pub min_rate: Rate,
    /// EWMA gain g of α.
    pub g: f64,
    /// α at the first CNP.
    pub initial_alpha: f64,
    /// α update rule.
    pub alpha_update: AlphaUpdate,
    /// α period (the paper's K, firmware `dce_tcp_rtt`).
    pub alpha_period: Duration,
    /// Rate-increase timer period T (firmware `rpg_time_reset`).
    pub rate_timer: Duration,
    /// Byte counter B (firmware `rpg_byte_reset`); `None` disables byte-counter increases.
    pub byte_counter: Option<Bytes>,
    /// F: number of fast-recovery stages (firmware `rpg_threshold`).
    pub fast_recovery_steps: u32,
    /// Additive increase step R_AI.
    pub rate_ai: Rate,
    /// Hyper increase step R_HAI.
    pub rate_hai: Rate,
    /// Hyper increase rule.
    pub hyper: HyperIncrease,
    /// Minimum spacing of two rate cuts (firmware `rate_reduce_monitor_period`); a CNP
    /// arriving sooner is remembered and applied when the period ends. Zero = every CNP cuts.
    pub rate_decrease_period: Duration,
    /// `true`: every cut sets RT = RC (paper). `false`: only if the rate was increased
    /// since the previous cut (firmware `clamp_tgt_rate = 0`, HPCC `CLAMP_TARGET_RATE 0`).
    pub clamp_target_rate: bool,
    /// NP: at most one CNP per flow per this interval (zero: one per CE-marked packet).
    pub cnp_interval: Duration,
}

impl DcqcnConfig {
    /// The paper's parameters (Zhu et al., SIGCOMM 2015, §3–§5 and Table 1):
    /// g = 1/256, K = 55 µs, T = 55 µs, B = 10 MB, F = 5, R_AI = 40 Mb/s,
    /// R_HAI = 200 Mb/s, NP CNP interval N = 50 µs, α starts at 1. The paper sets no
    /// minimum rate; we use the firmware's 1 Mb/s.
    pub fn paper(line_rate: Rate) -> Self {
        DcqcnConfig {
            line_rate,
            min_rate: Rate::mbps(1),
            g: 1.0 / 256.0,
            initial_alpha: 1.0,
            alpha_update: AlphaUpdate::OnCnp,
            alpha_period: Duration::micros(55),
            rate_timer: Duration::micros(55),
            byte_counter: Some(Bytes::mb(10)),
            fast_recovery_steps: 5,
            rate_ai: Rate::mbps(40),
            rate_hai: Rate::mbps(200),
            hyper: HyperIncrease::Scaled,
            rate_decrease_period: Duration::ZERO,
            clamp_target_rate: true,
            cnp_interval: Duration::micros(50),
        }
    }

    /// NVIDIA/Mellanox ConnectX-4+ firmware defaults ("DCQCN CC Parameters", NVIDIA
    /// DOCA/MLNX_OFED documentation, roce_rp / roce_np): dce_tcp_g = 1019 (α update
    /// `α = (1019/1024)α + 5/1024` with a CNP in the period, so g = 5/1024),
    /// dce_tcp_rtt = 1 µs, initial_alpha_value = 1023 (/1024), rpg_time_reset = 300 µs,
    /// rpg_byte_reset = 32,767 B, rpg_threshold = 1, rpg_ai_rate = 5 Mb/s,
    /// rpg_hai_rate = 50 Mb/s, rate_reduce_monitor_period = 4 µs, rpg_min_rate = 1 Mb/s,
    /// clamp_tgt_rate = 0 with clamp_tgt_rate_after_time_inc = 1 (RT = RC on a cut only if
    /// a timer increase happened since the last cut). NP min_time_between_cnps = 4 µs
    /// (NVConfig `MIN_TIME_BETWEEN_CNPS` default, as `mlxconfig query` lists it, with
    /// `RATE_REDUCE_MONITOR_PERIOD 4`, `DCE_TCP_G 1019`, `INITIAL_ALPHA_VALUE 1023`).
    /// The firmware's hyper-increase
    /// step is not documented; we use HPCC ns-3's model of it ("Mellanox's version of
    /// DCQCN", `HyperIncreaseMlx`: flat R_HAI).
    pub fn mellanox(line_rate: Rate) -> Self {
        DcqcnConfig {
            line_rate,
            min_rate: Rate::mbps(1),
            g: 5.0 / 1024.0,
            initial_alpha: 1023.0 / 1024.0,
            alpha_update: AlphaUpdate::Periodic,
            alpha_period: Duration::micros(1),
            rate_timer: Duration::micros(300),
            byte_counter: Some(Bytes(32_767)),
            fast_recovery_steps: 1,
            rate_ai: Rate::mbps(5),
            rate_hai: Rate::mbps(50),
            hyper: HyperIncrease::Flat,
            rate_decrease_period: Duration::micros(4),
            clamp_target_rate: false,
            cnp_interval: Duration::micros(4),
        }
    }

    /// The HPCC ns-3 simulator's DCQCN (alibaba-edu/High-Precision-Congestion-Control,
    /// simulation/run.py `--cc dcqcn` and rdma-hw.cc "Mellanox's version of DCQCN"):
    /// ALPHA_RESUME_INTERVAL 1 µs, RATE_DECREASE_INTERVAL 4 µs, RP_TIMER 300 µs,
    /// EWMA_GAIN 1/256, FAST_RECOVERY_TIMES 1, RATE_AI 5 Mb/s and RATE_HAI 50 Mb/s per
    /// 25 Gb/s of NIC rate, MIN_RATE 1000 Mb/s (capped at the line rate here, so slow
    /// testbed links still build), CLAMP_TARGET_RATE 0, α = 1 at the first
    /// CNP, no byte counter (increases are timer-only), flat hyper increase. HPCC's
    /// receiver echoes every CE mark (CNP interval 0); its 4 µs decrease check is what
    /// limits cuts. Difference: HPCC checks for a pending cut on a fixed 4 µs grid that
    /// starts 4 µs after the first CNP; here a CNP cuts at once if the last cut is ≥ 4 µs
    /// old, else at that 4 µs mark — the same spacing, up to 4 µs earlier.
    pub fn hpcc_ns3(line_rate: Rate) -> Self {
        let per25 =
            |mbps: u64| Rate::from_bps_f64(mbps as f64 * 1e6 * line_rate.as_bps_f64() / 25e9);
        DcqcnConfig {
            line_rate,
            min_rate: Rate::mbps(1000).min(line_rate),
            g: 1.0 / 256.0,
            initial_alpha: 1.0,
            alpha_update: AlphaUpdate::Periodic,
            alpha_period: Duration::micros(1),
            rate_timer: Duration::micros(300),
            byte_counter: None,
            fast_recovery_steps: 1,
            rate_ai: per25(5),
            rate_hai: per25(50),
            hyper: HyperIncrease::Flat,
            rate_decrease_period: Duration::micros(4),
            clamp_target_rate: false,
            cnp_interval: Duration::ZERO,
        }
    }

    /// The parameters of a named preset.
    pub fn preset(p: DcqcnPreset, line_rate: Rate) -> Self {
        match p {
            DcqcnPreset::Paper => Self::paper(line_rate),
            DcqcnPreset::Mellanox => Self::mellanox(line_rate),
            DcqcnPreset::HpccNs3 => Self::hpcc_ns3(line_rate),
        }
    }

    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        const A: &str = "dcqcn";
        if self.line_rate == Rate::ZERO {
            return Err(invalid(A, "line_rate", "must be positive"));
        }
        if self.min_rate == Rate::ZERO || self.min_rate > self.line_rate {
            return Err(invalid(
                A,
                "min_rate",
                format!(
                    "must be in (0, line_rate = {}], got {}",
                    self.line_rate, self.min_rate
                ),
            ));
        }
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(invalid(
                A,
                "g",
                format!("must be in (0, 1], got {}", self.g),
            ));
        }
        if !(0.0..=1.0).contains(&self.initial_alpha) {
            return Err(invalid(
                A,
                "initial_alpha",
                format!("must be in [0, 1], got {}", self.initial_alpha),
            ));
        }
        if self.alpha_period == Duration::ZERO {
            return Err(invalid(A, "alpha_period", "must be positive"));
        }
        if self.rate_timer == Duration::ZERO {
            return Err(invalid(A, "rate_timer", "must be positive"));
        }
        if self.byte_counter == Some(Bytes::ZERO) {
            return Err(invalid(
                A,
                "byte_counter",
                "must be positive (or None to disable)",
            ));
        }
        Ok(())
    }

    /// Validate and build the sender (reaction point).
    pub fn build(&self) -> Result<DcqcnRp> {
        self.validate()?;
        Ok(DcqcnRp::new_unchecked(*self))
    }

    /// Build the receiver (notification point).
    pub fn build_np(&self) -> DcqcnNp {
        DcqcnNp::new(self.cnp_interval)
    }
}

#[cfg(test)]
mod tests;
