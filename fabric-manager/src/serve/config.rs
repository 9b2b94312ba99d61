//! [`Config`]: everything `run` needs, checked before anything binds or starts.

use std::net::SocketAddr;
use std::time::Duration;

/// Where the daemon's telemetry comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceSpec {
    /// An embedded simulation paced to wall-clock time.
    Sim {
        /// Fabric spec file or preset name (see `fabric topo presets`).
        fabric: String,
        /// Scenario file; `None` runs the built-in looping demo.
        scenario: Option<String>,
        /// Simulated time per wall-clock second (1e-3 = one simulated millisecond per second).
        ratio: f64,
        /// Seed of the simulation.
        seed: u64,
        /// A host whose NIC keeps pausing its leaf for a while (`--storm-host`).
        storm: Option<super::sim_source::StormSpec>,
    },
    /// A routed veth testbed the daemon builds, watches, repairs and deletes (root).
    Testbed {
        /// Fabric spec file or preset name.
        fabric: String,
    },
    /// Existing namespaces `prefix` + `h<i>`/`s<i>` of a routed testbed of `fabric`,
    /// programmed and watched but not owned (root).
    Netns {
        /// Fabric spec file or preset name (the one the namespaces were built from).
        fabric: String,
        /// Namespace name prefix.
        prefix: String,
    },
    /// An InfiniBand subnet of `fabric` the daemon starts: ibsim simulating it, a real
    /// OpenSM routing it on fabric's tables (no root; see `ib_source`).
    Infiniband {
        /// Fabric spec file or preset name (single-plane).
        fabric: String,
    },
    /// The namespace the daemon runs in, as switch `switch` of `fabric` (a Linux
    /// router): its routes programmed, its links watched (root).
    HostNetns {
        /// Fabric spec file or preset name.
        fabric: String,
        /// The switch this router is, by name.
        switch: String,
    },
    /// A fabric the daemon only observes (`--observe`): never written to.
    Observe(super::observe_source::ObserveSpec),
}

/// The daemon's settings. [`Config::validate`] enforces the rules that keep it safe.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address the HTTP API binds (loopback unless a token is set).
    pub listen: SocketAddr,
    /// Bearer token for mutating endpoints (and required for a non-loopback address).
    pub token: Option<String>,
    /// The telemetry source.
    pub source: SourceSpec,
    /// Wall-clock time between two snapshots.
    pub interval: Duration,
    /// Most HTTP connections served at once; more wait in the kernel's accept queue.
    pub max_connections: usize,
    /// Most stream clients at once; below `max_connections`, so that streams cannot take
    /// the connections scrapes, health checks and `fabric status` need.
    pub max_streams: usize,
    /// Where `POST /api/v1/recording` may write, and its caps; `None`: nowhere.
    pub record: Option<super::recordings::RecordDir>,
    /// Frames kept for `GET /api/v1/telemetry/stream?from=SEQ` (snapshots and events).
    pub history: usize,
    /// Frames a stream client may fall behind before it is dropped.
    pub stream_lag: usize,
    /// Kernel send buffer of a stream connection, bytes.
    pub stream_sndbuf: usize,
    /// Publish flow-finished events.
    pub flow_events: bool,
    /// PFC watchdog, damping and alarm thresholds.
    pub health: super::health::HealthConfig,
    /// Events kept for `GET /api/v1/events`.
    pub events_kept: usize,
    /// Time a client has to send its request headers.
    pub header_timeout: Duration,
    /// Time a (non-streaming) request may take.
    pub request_timeout: Duration,
    /// Largest request body (mutating endpoints take small JSON bodies).
    pub max_body_bytes: usize,
    /// Largest request head (request line and headers).
    pub max_header_bytes: usize,
    /// Time between two periodic route-drift checks (sources with kernel routes).
    pub drift_interval: Duration,
    /// Reprogram drifted routes at each periodic check.
    pub repair_drift: bool,
    /// Tenant file (docs/tenants.md): per-tenant views of the hosts' links.
    pub tenants: Option<std::path::PathBuf>,
}

/// Limits on the settings (what a user may ask for).
pub mod limits {
    use std::time::Duration;
    /// Shortest snapshot interval.
    pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
    /// Longest snapshot interval.
    pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
    /// Most frames of history (each is one snapshot or event line).
    pub const MAX_HISTORY: usize = 100_000;
    /// Most connections.
    pub const MAX_CONNECTIONS: usize = 10_000;
    /// Shortest token accepted (bytes).
    pub const MIN_TOKEN: usize = 16;
}

impl Config {
    /// Defaults for everything but the source: loopback port 9464, 1 s interval.
    pub fn new(source: SourceSpec) -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 9464)),
            token: None,
            source,
            interval: Duration::from_secs(1),
            max_connections: 256,
            max_streams: 64,
            record: None,
            history: 600,
            stream_lag: 16,
            events_kept: 1000,
            stream_sndbuf: 128 * 1024,
            flow_events: false,
            health: Default::default(),
            header_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            max_body_bytes: 64 * 1024,
            max_header_bytes: 16 * 1024,
            drift_interval: Duration::from_secs(10),
            repair_drift: false,
            tenants: None,
        }
    }

    /// Checks every rule; the message names the option and the limit.
    pub fn validate(&self) -> Result<(), String> {
        if !self.listen.ip().is_loopback() && self.token.is_none() {
            return Err(format!(
                "--listen {}: binding a non-loopback address needs a token (--token-file FILE or FABRIC_SERVE_TOKEN)",
                self.listen
            ));
        }
        if let Some(t) = &self.token {
            if t.len() < limits::MIN_TOKEN {
                return Err(format!(
                    "token: {} bytes, expected at least {}",
                    t.len(),
                    limits::MIN_TOKEN
                ));
            }
            if t.bytes().any(|b| !b.is_ascii_graphic()) {
                return Err("token: only printable ASCII without spaces is allowed".into());
            }
        }
        if !(limits::MIN_INTERVAL..=limits::MAX_INTERVAL).contains(&self.interval) {
            return Err(format!(
                "--interval {:?}: expected {:?} to {:?}",
                self.interval,
                limits::MIN_INTERVAL,
                limits::MAX_INTERVAL
            ));
        }
        for (name, d) in [
            ("--header-timeout", self.header_timeout),
            ("--request-timeout", self.request_timeout),
            ("--drift-interval", self.drift_interval),
        ] {
            if !(Duration::from_millis(100)..=Duration::from_secs(3600)).contains(&d) {
                return Err(format!("{name} {d:?}: expected 100ms to 3600s"));
            }
        }
        let ranges = [
            (
                "--max-connections",
                self.max_connections,
                1,
                limits::MAX_CONNECTIONS,
            ),
            ("--history", self.history, 1, limits::MAX_HISTORY),
            ("--stream-lag", self.stream_lag, 1, limits::MAX_HISTORY),
            ("--events-kept", self.events_kept, 1, limits::MAX_HISTORY),
            ("--stream-sndbuf", self.stream_sndbuf, 4096, 64 << 20),
        ];
        for (name, v, lo, hi) in ranges {
            if !(lo..=hi).contains(&v) {
                return Err(format!("{name} {v}: expected {lo} to {hi}"));
            }
        }
        if self.max_streams >= self.max_connections {
            return Err(format!(
                "--max-streams {}: must be below --max-connections {} (streams must leave connections free for /metrics, health and status)",
                self.max_streams, self.max_connections
            ));
        }
        if let Some(r) = &self.record {
            r.check()?;
            if r.max_files == 0 || r.max_bytes < 4096 {
                return Err(format!(
                    "--record-max-files {} / --record-max-bytes {}: expected at least 1 file of 4096 bytes",
                    r.max_files, r.max_bytes
                ));
            }
        }
        self.health.damping.validate()?;
        if let SourceSpec::Sim { ratio, .. } = self.source
            && !(ratio.is_finite() && ratio > 0.0 && ratio <= 1.0)
        {
            return Err(format!(
                "--ratio {ratio}: expected simulated seconds per wall-clock second in (0, 1]"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> SourceSpec {
        SourceSpec::Sim {
            fabric: "fat-tree-k4".into(),
            scenario: None,
            ratio: 1e-3,
            seed: 1,
            storm: None,
        }
    }

    #[test]
    fn non_loopback_needs_a_token_and_limits_are_named() {
        let mut c = Config::new(sim());
        c.validate().unwrap();
        c.listen = "0.0.0.0:9464".parse().unwrap();
        assert!(c.validate().unwrap_err().contains("needs a token"));
        c.token = Some("short".into());
        assert!(c.validate().unwrap_err().contains("at least 16"));
        c.token = Some("0123456789abcdef0123".into());
        c.validate().unwrap();
        c.interval = Duration::from_millis(1);
        assert!(c.validate().unwrap_err().starts_with("--interval"));
        c.interval = Duration::from_secs(1);
        c.history = 0;
        assert_eq!(
            c.validate().unwrap_err(),
            "--history 0: expected 1 to 100000"
        );
        c.history = 10;
        c.source = SourceSpec::Sim {
            fabric: "x".into(),
            scenario: None,
            ratio: f64::NAN,
            seed: 1,
            storm: None,
        };
        assert!(c.validate().unwrap_err().starts_with("--ratio NaN"));
    }
}
