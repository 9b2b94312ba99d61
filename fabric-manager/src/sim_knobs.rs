//! `fabric sim` flags for the htsim knobs. Each flag is a scenario `[network]` key
//! (docs/sim.md has the table with the htsim flag each stands for): the flags are
//! written over the scenario's `[network]` section before it is compiled, so a flag
//! wins over the file and both go through the one validation the scenario crate does
//! (`Scenario::compile`), which names the `network.*` field; [`Knobs::explain`] tells
//! which flag set it.

use anyhow::anyhow;
use scenario::{BaseRttName, BufferModelName, NetworkOverrides, TrimVictimName};

/// The flags (all optional; unset keeps the scenario's value, else the default).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Knobs {
    /// Entropy values a sprayed flow uses, a power of two (htsim -paths; network.evs).
    #[arg(long, value_name = "N")]
    pub evs: Option<u16>,
    /// Sender initial window in bytes, e.g. 150KB (network.init_window).
    #[arg(long, value_name = "SIZE", conflicts_with = "init_window_pkts")]
    pub init_window: Option<String>,
    /// Sender initial window in packets (htsim -cwnd; network.init_window_pkts).
    #[arg(long, value_name = "N")]
    pub init_window_pkts: Option<u32>,
    /// One ACK per this many bytes received, e.g. 16KB; 0 ACKs every packet
    /// (htsim's UEC sink coalesces 16 KB; network.ack_every).
    #[arg(long, value_name = "SIZE")]
    pub ack_every: Option<String>,
    /// The base RTT senders assume: path (their own) or network-max (the fabric's
    /// largest, as htsim; network.base_rtt).
    #[arg(long, value_name = "MODE")]
    pub base_rtt: Option<String>,
    /// Switch buffer model: shared (one buffer per switch) or per-port (htsim's queues;
    /// network.buffer_model).
    #[arg(long, value_name = "MODEL")]
    pub buffer_model: Option<String>,
    /// Per-port model: data queue per egress port in bytes (htsim -q in packets × MTU;
    /// network.queue).
    #[arg(long, value_name = "SIZE", conflicts_with = "queue_bdp")]
    pub queue: Option<String>,
    /// Per-port model: data queue per egress port in BDPs of the longest path
    /// (network.queue_bdp).
    #[arg(long, value_name = "F")]
    pub queue_bdp: Option<f64>,
    /// Per-port model: header (trimmed/control) queue per egress port (network.header_queue).
    #[arg(long, value_name = "SIZE")]
    pub header_queue: Option<String>,
    /// Per-port model: which packet a full queue trims: arriving, head or htsim
    /// (network.trim_victim).
    #[arg(long, value_name = "WHICH")]
    pub trim_victim: Option<String>,
    /// Trim data packets above this queue depth instead of dropping them
    /// (network.trim_threshold).
    #[arg(long, value_name = "SIZE")]
    pub trim_threshold: Option<String>,
    /// Propagation delay of every link, e.g. 500ns (network.link_delay).
    #[arg(long, value_name = "TIME")]
    pub link_delay: Option<String>,
    /// Retransmission timeout: a time such as 1ms, or `htsim` (the default: 15 µs plus
    /// six queue drain times, as htsim's UEC runs) (network.rto).
    #[arg(long, value_name = "TIME|htsim")]
    pub rto: Option<String>,
}

/// Parse a kebab-case name into one of the scenario's `[network]` enums, as the file would.
fn name<T: serde::de::DeserializeOwned>(flag: &str, v: &str, expected: &str) -> anyhow::Result<T> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(v))
        .map_err(|_| anyhow!("--{flag}: `{v}` is not one of: {expected}"))
}

fn size(flag: &str, v: &str) -> anyhow::Result<cc_algos::Bytes> {
    scenario::units::parse_size(v).map_err(|e| anyhow!("--{flag}: {e}"))
}

impl Knobs {
    /// Write the flags that are set over `n` (the scenario's `[network]`). Only the
    /// flags' own syntax is checked here; ranges and combinations are the scenario's.
    pub fn overlay(&self, n: &mut NetworkOverrides) -> anyhow::Result<()> {
        if let Some(e) = self.evs {
            n.evs = Some(e);
        }
        if let Some(w) = &self.init_window {
            n.init_window = Some(size("init-window", w)?);
            n.init_window_pkts = None;
        }
        if let Some(p) = self.init_window_pkts {
            n.init_window_pkts = Some(p);
            n.init_window = None;
        }
        if let Some(a) = &self.ack_every {
            n.ack_every = Some(size("ack-every", a)?);
        }
        if let Some(b) = &self.base_rtt {
            n.base_rtt = Some(name::<BaseRttName>("base-rtt", b, "path, network-max")?);
        }
        if let Some(m) = &self.buffer_model {
            n.buffer_model = Some(name::<BufferModelName>(
                "buffer-model",
                m,
                "shared, per-port",
            )?);
        }
        if let Some(q) = &self.queue {
            n.queue = Some(size("queue", q)?);
            n.queue_bdp = None;
        }
        if let Some(q) = self.queue_bdp {
            n.queue_bdp = Some(q);
            n.queue = None;
        }
        if let Some(h) = &self.header_queue {
            n.header_queue = Some(size("header-queue", h)?);
        }
        if let Some(v) = &self.trim_victim {
            n.trim_victim = Some(name::<TrimVictimName>(
                "trim-victim",
                v,
                "arriving, head, htsim",
            )?);
        }
        if let Some(t) = &self.trim_threshold {
            n.trim_threshold = Some(size("trim-threshold", t)?);
        }
        if let Some(d) = &self.link_delay {
            n.link_delay =
                Some(scenario::units::parse_time(d).map_err(|e| anyhow!("--link-delay: {e}"))?);
        }
        if let Some(r) = &self.rto {
            n.rto = Some(scenario::RtoSetting::parse(r).map_err(|e| anyhow!("--rto: {e}"))?);
        }
        Ok(())
    }

    /// The flags that are set, as `--flag` names (for an error about `[network]`).
    fn set(&self) -> Vec<&'static str> {
        [
            ("--evs", self.evs.is_some()),
            ("--init-window", self.init_window.is_some()),
            ("--init-window-pkts", self.init_window_pkts.is_some()),
            ("--ack-every", self.ack_every.is_some()),
            ("--base-rtt", self.base_rtt.is_some()),
            ("--buffer-model", self.buffer_model.is_some()),
            ("--queue", self.queue.is_some()),
            ("--queue-bdp", self.queue_bdp.is_some()),
            ("--header-queue", self.header_queue.is_some()),
            ("--trim-victim", self.trim_victim.is_some()),
            ("--trim-threshold", self.trim_threshold.is_some()),
            ("--link-delay", self.link_delay.is_some()),
            ("--rto", self.rto.is_some()),
        ]
        .into_iter()
        .filter_map(|(f, on)| on.then_some(f))
        .collect()
    }

    /// `e` (a scenario error) with a note on which flags were written over `[network]`,
    /// when it is about `[network]` and flags were given.
    pub fn explain(&self, e: scenario::ScenarioError) -> anyhow::Error {
        let set = self.set();
        let about_network = matches!(&e, scenario::ScenarioError::Invalid { field, .. } if field.starts_with("network."));
        if set.is_empty() || !about_network {
            return e.into();
        }
        anyhow!(
            "{e} (the scenario's [network] with the command line's {} written over it)",
            set.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_parse_like_it() {
        let mut n = NetworkOverrides {
            evs: Some(64),
            init_window: Some(cc_algos::Bytes(1000)),
            ..NetworkOverrides::default()
        };
        let k = Knobs {
            evs: Some(256),
            init_window_pkts: Some(10),
            ack_every: Some("16KB".into()),
            base_rtt: Some("network-max".into()),
            buffer_model: Some("per-port".into()),
            queue_bdp: Some(1.5),
            trim_victim: Some("htsim".into()),
            rto: Some("250us".into()),
            ..Knobs::default()
        };
        k.overlay(&mut n).unwrap();
        assert_eq!(
            n.rto,
            Some(scenario::RtoSetting::Fixed(cc_algos::Duration::micros(250)))
        );
        assert_eq!(n.evs, Some(256));
        assert_eq!((n.init_window, n.init_window_pkts), (None, Some(10)));
        assert_eq!(n.ack_every, Some(cc_algos::Bytes(16_000)));
        assert_eq!(n.base_rtt, Some(BaseRttName::NetworkMax));
        assert_eq!(n.buffer_model, Some(BufferModelName::PerPort));
        assert_eq!(n.trim_victim, Some(TrimVictimName::Htsim));
        let bad = Knobs {
            base_rtt: Some("largest".into()),
            ..Knobs::default()
        };
        let e = bad.overlay(&mut n).unwrap_err().to_string();
        assert_eq!(e, "--base-rtt: `largest` is not one of: path, network-max");
        let bad = Knobs {
            rto: Some("soon".into()),
            ..Knobs::default()
        };
        let e = bad.overlay(&mut n).unwrap_err().to_string();
        assert!(e.starts_with("--rto: ") && e.contains("htsim"), "{e}");
        let bad = Knobs {
            ack_every: Some("lots".into()),
            ..Knobs::default()
        };
        assert!(
            bad.overlay(&mut n)
                .unwrap_err()
                .to_string()
                .starts_with("--ack-every: ")
        );
    }
}
