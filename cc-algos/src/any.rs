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
use crate::hpcc::{Hpcc, HpccConfig};
use crate::traits::{Ack, CcMetrics, DataArrival, Feedback, IntHop, ReceiverCc, SenderCc};
use crate::uec::{Nscc, NsccConfig, RcccConfig, RcccReceiver, RcccSender};
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

/// An algorithm by name (what a CLI flag or scenario file says). Serialises as its name
/// string (`"dcqcn-mellanox"`), parsing with the same rules as [`core::str::FromStr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[non_exhaustive]
pub enum CcKind {
    /// DCQCN with a parameter preset. Names: `dcqcn` (= paper), `dcqcn-paper`,
    /// `dcqcn-mellanox`, `dcqcn-hpcc-ns3`.
    Dcqcn(DcqcnPreset),
    /// DCTCP (window, ECN fraction).
    Dctcp,
    /// UEC NSCC (window, ECN + delay). `trimming` selects the target delay (0.75·RTT with
    /// trimming, 1.0·RTT without). Names: `nscc` (trimming on), `nscc-notrim`.
    Nscc { trimming: bool },
    /// UEC RCCC (receiver credit). Name: `rccc`.
    Rccc,
    /// HPCC (INT). Name: `hpcc`. Needs `on_ack_int` from the driver.
    Hpcc,
}

impl CcKind {
    /// The names [`core::str::FromStr`] accepts.
    pub const NAMES: &'static str =
        "dcqcn, dcqcn-paper, dcqcn-mellanox, dcqcn-hpcc-ns3, dctcp, nscc, nscc-notrim, rccc, hpcc";

    /// The full configuration this kind gets on `path`.
    pub fn config(&self, path: &PathParams) -> CcConfig {
        match *self {
            CcKind::Dcqcn(p) => CcConfig::Dcqcn(DcqcnConfig::preset(p, path.line_rate)),
            CcKind::Dctcp => {
                CcConfig::Dctcp(DctcpConfig::new(path.line_rate, path.base_rtt, path.mtu))
            }
            CcKind::Nscc { trimming } => CcConfig::Nscc(NsccConfig::new(
                path.line_rate,
                path.base_rtt,
                path.mtu,
                trimming,
            )),
            CcKind::Rccc => {
                CcConfig::Rccc(RcccConfig::new(path.line_rate, path.base_rtt, path.mtu))
            }
            CcKind::Hpcc => {
                CcConfig::Hpcc(HpccConfig::new(path.line_rate, path.base_rtt, path.mtu))
            }
        }
    }

    /// The receiver-side half this algorithm needs, if any: the DCQCN notification point
    /// (CNPs) or the RCCC credit pacer. DCTCP and NSCC need none (ACKs echo ECN).
    pub fn build_receiver(&self, path: &PathParams) -> Result<Option<AnyReceiver>> {
        self.config(path).build_receiver()
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
            "nscc" => Ok(CcKind::Nscc { trimming: true }),
            "nscc-notrim" => Ok(CcKind::Nscc { trimming: false }),
            "rccc" => Ok(CcKind::Rccc),
            "hpcc" => Ok(CcKind::Hpcc),
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

impl TryFrom<String> for CcKind {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<CcKind> for String {
    fn from(k: CcKind) -> String {
        k.to_string()
    }
}

impl core::fmt::Display for CcKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CcKind::Dcqcn(DcqcnPreset::Paper) => f.write_str("dcqcn"),
            CcKind::Dcqcn(DcqcnPreset::Mellanox) => f.write_str("dcqcn-mellanox"),
            CcKind::Dcqcn(DcqcnPreset::HpccNs3) => f.write_str("dcqcn-hpcc-ns3"),
            CcKind::Dctcp => f.write_str("dctcp"),
            CcKind::Nscc { trimming: true } => f.write_str("nscc"),
            CcKind::Nscc { trimming: false } => f.write_str("nscc-notrim"),
            CcKind::Rccc => f.write_str("rccc"),
            CcKind::Hpcc => f.write_str("hpcc"),
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
    Nscc(NsccConfig),
    Rccc(RcccConfig),
    Hpcc(HpccConfig),
}

impl CcConfig {
    /// Validate and build.
    pub fn build(&self) -> Result<AnyCc> {
        Ok(match self {
            CcConfig::Dcqcn(c) => AnyCc::Dcqcn(c.build()?),
            CcConfig::Dctcp(c) => AnyCc::Dctcp(c.build()?),
            CcConfig::Nscc(c) => AnyCc::Nscc(c.build()?),
            CcConfig::Rccc(c) => AnyCc::Rccc(c.build_sender()?),
            CcConfig::Hpcc(c) => AnyCc::Hpcc(c.build()?),
        })
    }

    /// The same configuration with the sender starting from `window` bytes in flight
    /// (htsim `-cwnd`), clamped to the algorithm's own bounds: NSCC's and DCTCP's
    /// initial window, RCCC's initial credit. DCQCN (rate-based, starts at line rate)
    /// and HPCC (starts at line rate × T) keep theirs.
    pub fn with_initial_window(mut self, window: Bytes) -> Self {
        match &mut self {
            CcConfig::Nscc(c) => c.initial_window = window.clamp(c.min_window, c.max_window),
            CcConfig::Dctcp(c) => {
                let w = window.max(c.min_window);
                c.initial_window = c.max_window.map_or(w, |m| w.min(m));
            }
            CcConfig::Rccc(c) => c.initial_credit = window.min(c.max_credit),
            CcConfig::Dcqcn(_) | CcConfig::Hpcc(_) => {}
        }
        self
    }

    /// Validate and build the receiver-side half, if the algorithm has one.
    pub fn build_receiver(&self) -> Result<Option<AnyReceiver>> {
        Ok(match self {
            CcConfig::Dcqcn(c) => {
                c.validate()?;
                Some(AnyReceiver::DcqcnNp(c.build_np()))
            }
            CcConfig::Rccc(c) => Some(AnyReceiver::Rccc(c.build_receiver()?)),
            CcConfig::Dctcp(_) | CcConfig::Nscc(_) | CcConfig::Hpcc(_) => None,
        })
    }
}

/// Any receiver-side controller, dispatched by `match`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyReceiver {
    DcqcnNp(crate::dcqcn::DcqcnNp),
    Rccc(RcccReceiver),
}

impl ReceiverCc for AnyReceiver {
    fn on_data(&mut self, now: Instant, pkt: DataArrival) {
        match self {
            AnyReceiver::DcqcnNp(r) => r.on_data(now, pkt),
            AnyReceiver::Rccc(r) => r.on_data(now, pkt),
        }
    }
    fn poll_feedback(&mut self, now: Instant) -> Option<Feedback> {
        match self {
            AnyReceiver::DcqcnNp(r) => r.poll_feedback(now),
            AnyReceiver::Rccc(r) => r.poll_feedback(now),
        }
    }
    fn next_timeout(&self) -> Option<Instant> {
        match self {
            AnyReceiver::DcqcnNp(r) => r.next_timeout(),
            AnyReceiver::Rccc(r) => r.next_timeout(),
        }
    }
}

/// Any sender algorithm, dispatched by `match`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyCc {
    Dcqcn(DcqcnRp),
    Dctcp(Dctcp),
    Nscc(Nscc),
    Rccc(RcccSender),
    Hpcc(Hpcc),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Dcqcn($c) => $e,
            AnyCc::Dctcp($c) => $e,
            AnyCc::Nscc($c) => $e,
            AnyCc::Rccc($c) => $e,
            AnyCc::Hpcc($c) => $e,
        }
    };
}

impl AnyCc {
    /// The algorithm's short name.
    pub fn name(&self) -> &'static str {
        match self {
            AnyCc::Dcqcn(_) => "dcqcn",
            AnyCc::Dctcp(_) => "dctcp",
            AnyCc::Nscc(_) => "nscc",
            AnyCc::Rccc(_) => "rccc",
            AnyCc::Hpcc(_) => "hpcc",
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
    fn on_ack_int(&mut self, now: Instant, ack: Ack, int: &[IntHop]) {
        dispatch!(self, c => c.on_ack_int(now, ack, int))
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
    fn kind_serialises_as_its_name() {
        let k: CcKind = serde_json::from_str("\"dcqcn-mellanox\"").unwrap();
        assert_eq!(k, CcKind::Dcqcn(DcqcnPreset::Mellanox));
        assert_eq!(
            serde_json::to_string(&CcKind::Nscc { trimming: false }).unwrap(),
            "\"nscc-notrim\""
        );
        let e = serde_json::from_str::<CcKind>("\"reno\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("reno") && e.contains("expected one of"), "{e}");
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
        let cc = "nscc".parse::<CcKind>().unwrap().build(&path()).unwrap();
        assert_eq!(cc.window(), Some(Bytes(187_500)));
        let cc = "rccc".parse::<CcKind>().unwrap().build(&path()).unwrap();
        assert_eq!(cc.credit(), Some(Bytes(187_500)));
    }

    #[test]
    fn initial_window_is_set_and_clamped() {
        let p = path();
        let w = |name: &str, win: u64| {
            let k: CcKind = name.parse().unwrap();
            let cc = k
                .config(&p)
                .with_initial_window(Bytes(win))
                .build()
                .unwrap();
            (cc.window(), cc.credit())
        };
        assert_eq!(w("nscc", 40_960).0, Some(Bytes(40_960)));
        // Above NSCC's max window (1.5 BDP = 187,500 B): clamped.
        assert_eq!(w("nscc", 10_000_000).0, Some(Bytes(187_500)));
        // Below one MTU: clamped up to the minimum window.
        assert!(w("nscc", 1).0.unwrap() >= Bytes(4096));
        assert_eq!(w("dctcp", 20_000).0, Some(Bytes(20_000)));
        assert_eq!(w("rccc", 8192).1, Some(Bytes(8192)));
        // DCQCN keeps its line-rate start.
        let k: CcKind = "dcqcn".parse().unwrap();
        let cc = k.config(&p).with_initial_window(Bytes(1)).build().unwrap();
        assert_eq!(cc.rate(), Rate::gbps(100));
    }

    #[test]
    fn receivers_exist_where_needed() {
        let p = path();
        for (name, has) in [
            ("dcqcn", true),
            ("rccc", true),
            ("dctcp", false),
            ("nscc", false),
        ] {
            let k: CcKind = name.parse().unwrap();
            assert_eq!(k.build_receiver(&p).unwrap().is_some(), has, "{name}");
        }
        let mut rx = CcKind::Rccc.build_receiver(&p).unwrap().unwrap();
        let AnyReceiver::Rccc(r) = &mut rx else {
            panic!()
        };
        r.on_request(Instant::ZERO, 5, Bytes(100));
        assert_eq!(
            rx.poll_feedback(Instant::ZERO),
            Some(Feedback::Credit {
                flow: 5,
                bytes: Bytes(100)
            })
        );
    }
}
