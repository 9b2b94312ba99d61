//! Enum dispatch over every sender algorithm (smoltcp `AnyController` style, STYLE.md
//! point 8), so a driver can pick one by name and still call it without `dyn`.
//!
//! ```
//! use cc_algos::{AnyCc, CcKind, PathParams, SenderCc, Rate, Duration, Bytes};
//! let path = PathParams { line_rate: Rate::gbps(100), base_rtt: Duration::micros(10), mtu: Bytes(4096) };
//! let kind: CcKind = "dcqcn".parse().unwrap();
//! let cc: AnyCc = kind.build(&path).unwrap();
//! assert_eq!(cc.rate(), Rate::gbps(100));
//! assert!("nope".parse::<CcKind>().is_err());
//! ```

use crate::dcqcn::{DcqcnConfig, DcqcnPreset, DcqcnRp};
use crate::dctcp::{Dctcp, DctcpConfig};
use crate::error::{Error, Result};
use crate::traits::{Ack, CcMetrics, SenderCc};
use crate::units::{Bytes, Duration, Instant, Rate};
use serde::{Deserialize, Serialize};

/// What every algorithm needs to know about the path to pick its defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathParams {
    /// The sender's NIC line rate.
    pub line_rate: Rate,
    /// Unloaded round-trip time of the path (propagation plus store-and-forward).
    pub base_rtt: Duration,
    /// Maximum transfer unit: the largest packet on the wire, headers included.
    pub mtu: Bytes,
}

/// An algorithm by name (what a CLI flag or scenario file says).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CcKind {
    /// DCQCN with a parameter preset. Names: `dcqcn` (= paper), `dcqcn-paper`,
    /// `dcqcn-mellanox`, `dcqcn-hpcc-ns3`.
    Dcqcn(DcqcnPreset),
    /// DCTCP (window, ECN fraction).
    Dctcp,
}

impl CcKind {
    /// The names [`core::str::FromStr`] accepts.
    pub const NAMES: &'static str = "dcqcn, dcqcn-paper, dcqcn-mellanox, dcqcn-hpcc-ns3, dctcp";

    /// The full configuration this kind gets on `path`.
    pub fn config(&self, path: &PathParams) -> CcConfig {
        match *self {
            CcKind::Dcqcn(p) => CcConfig::Dcqcn(DcqcnConfig::preset(p, path.line_rate)),
            CcKind::Dctcp => {
                CcConfig::Dctcp(DctcpConfig::new(path.line_rate, path.base_rtt, path.mtu))
            }
        }
    }

    /// Build the controller with this kind's defaults on `path`.
    pub fn build(&self, path: &PathParams) -> Result<AnyCc> {
        self.config(path).build()
    }
}

impl core::str::FromStr for CcKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        match lower.as_str() {
            "dcqcn" => Ok(CcKind::Dcqcn(DcqcnPreset::Paper)),
            "dctcp" => Ok(CcKind::Dctcp),
            other => {
                if let Some(p) = other.strip_prefix("dcqcn-")
                    && let Ok(p) = p.parse::<DcqcnPreset>()
                {
                    return Ok(CcKind::Dcqcn(p));
                }
                Err(Error::UnknownName {
                    what: "congestion-control algorithm",
                    name: s.to_string(),
                    expected: Self::NAMES,
                })
            }
        }
    }
}

impl core::fmt::Display for CcKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CcKind::Dcqcn(DcqcnPreset::Paper) => f.write_str("dcqcn"),
            CcKind::Dcqcn(DcqcnPreset::Mellanox) => f.write_str("dcqcn-mellanox"),
            CcKind::Dcqcn(DcqcnPreset::HpccNs3) => f.write_str("dcqcn-hpcc-ns3"),
            CcKind::Dctcp => f.write_str("dctcp"),
        }
    }
}

/// A complete, serialisable sender configuration (for scenario files).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "algo", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CcConfig {
    Dcqcn(DcqcnConfig),
    Dctcp(DctcpConfig),
}

impl CcConfig {
    /// Validate and build.
    pub fn build(&self) -> Result<AnyCc> {
        Ok(match self {
            CcConfig::Dcqcn(c) => AnyCc::Dcqcn(c.build()?),
            CcConfig::Dctcp(c) => AnyCc::Dctcp(c.build()?),
        })
    }
}

/// Any sender algorithm, dispatched by `match`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyCc {
    Dcqcn(DcqcnRp),
    Dctcp(Dctcp),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Dcqcn($c) => $e,
            AnyCc::Dctcp($c) => $e,
        }
    };
}

impl AnyCc {
    /// The algorithm's short name.
    pub fn name(&self) -> &'static str {
        match self {
            AnyCc::Dcqcn(_) => "dcqcn",
            AnyCc::Dctcp(_) => "dctcp",
        }
    }
}

impl SenderCc for AnyCc {
    fn on_send(&mut self, now: Instant, bytes: Bytes) {
        dispatch!(self, c => c.on_send(now, bytes))
    }
    fn on_ack(&mut self, now: Instant, ack: Ack) {
        dispatch!(self, c => c.on_ack(now, ack))
    }
    fn on_cnp(&mut self, now: Instant) {
        dispatch!(self, c => c.on_cnp(now))
    }
    fn on_nack(&mut self, now: Instant, bytes: Bytes) {
        dispatch!(self, c => c.on_nack(now, bytes))
    }
    fn on_timeout(&mut self, now: Instant) {
        dispatch!(self, c => c.on_timeout(now))
    }
    fn next_timeout(&self) -> Option<Instant> {
        dispatch!(self, c => c.next_timeout())
    }
    fn rate(&self) -> Rate {
        dispatch!(self, c => c.rate())
    }
    fn window(&self) -> Option<Bytes> {
        dispatch!(self, c => c.window())
    }
    fn metrics(&self) -> CcMetrics {
        dispatch!(self, c => c.metrics())
    }
    fn on_credit(&mut self, now: Instant, bytes: Bytes) {
        dispatch!(self, c => c.on_credit(now, bytes))
    }
    fn credit(&self) -> Option<Bytes> {
        dispatch!(self, c => c.credit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> PathParams {
        PathParams {
            line_rate: Rate::gbps(100),
            base_rtt: Duration::micros(10),
            mtu: Bytes(4096),
        }
    }

    #[test]
    fn every_name_round_trips() {
        for name in CcKind::NAMES.split(", ") {
            let k: CcKind = name.parse().unwrap();
            let back: CcKind = k.to_string().parse().unwrap();
            assert_eq!(k, back, "{name}");
            let cc = k.build(&path()).unwrap();
            assert!(cc.rate() <= Rate::gbps(100));
        }
        let e = "cubic".parse::<CcKind>().unwrap_err().to_string();
        assert!(e.contains("cubic") && e.contains("dcqcn"), "{e}");
    }

    #[test]
    fn config_is_serde_round_trippable() {
        let cfg = CcKind::Dcqcn(DcqcnPreset::Mellanox).config(&path());
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(json.contains("\"algo\":\"dcqcn\""), "{json}");
        let back: CcConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn dispatch_reaches_the_algorithm() {
        let mut cc = CcKind::Dcqcn(DcqcnPreset::Paper).build(&path()).unwrap();
        cc.on_cnp(Instant::ZERO);
        assert_eq!(cc.rate(), Rate::gbps(50));
        assert_eq!(cc.name(), "dcqcn");
        assert!(cc.window().is_none());
        let cc = CcKind::Dctcp.build(&path()).unwrap();
        assert_eq!(cc.window(), Some(Bytes(125_000)));
    }
}
