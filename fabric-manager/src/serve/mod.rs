//! `fabric serve`: the daemon that owns a fabric and serves its telemetry.
//!
//! The shape is tokio mini-redis's (`../shared/STYLE.md` point 15): [`run`] takes a
//! [`Config`], an open source, a bound listener and a shutdown future; the accept loop holds one
//! semaphore permit per connection and a broadcast shutdown every task sees.
//!
//! # Layout
//! * [`config`] — [`Config`] and its checks (a non-loopback address needs a token).
//! * [`source`] — the [`source::Source`] trait; [`sim_source`] — the embedded simulator;
//!   [`testbed_source`] — a routed veth testbed the daemon builds, watches and repairs;
//!   [`observe_source`] — a fabric it only observes (`--observe`: Prometheus counters,
//!   lldpd neighbours, FIBs read back; [`prom_query`], [`lldp_neighbours`]);
//!   [`ib_source`] — an InfiniBand subnet (ibsim + OpenSM) routed on fabric's tables.
//! * [`collector`] — the thread that owns the source, samples it every interval and
//!   takes commands; [`hub`] — what it publishes (latest snapshot, bounded history,
//!   broadcast ring, events, counters).
//! * [`server`] — accept loop; [`http`] — routes, token, limits; [`stream`] — the
//!   NDJSON/SSE stream; [`metrics`] — Prometheus exposition; [`routes`] — the tables;
//!   [`tenants`] — per-tenant views of the host links (`--tenants FILE`);
//!   [`health`] — what the events tell about the fabric; [`log`] — stderr log lines.
//!
//! # Example
//! ```text
//! fabric serve --sim                      # built-in looping demo on fat-tree-k4, 127.0.0.1:9464
//! curl -s localhost:9464/api/v1/health
//! curl -sN 'localhost:9464/api/v1/telemetry/stream?from=0' | head -3
//! fabric status
//! ```

pub mod alarms;
pub mod baseline;
pub mod collector;
pub mod config;
pub mod damping;
pub mod drain;
pub mod health;
pub mod http;
pub mod hub;
pub mod ib_source;
pub mod lldp_neighbours;
pub mod log;
pub mod metrics;
pub mod observe_source;
pub mod process;
pub mod prom_query;
pub mod recordings;
pub mod routes;
pub mod scrapes;
pub mod server;
pub mod sim_source;
pub mod source;
pub mod stream;
pub mod tenants;
pub mod testbed_source;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::Bytes;
use tokio::net::TcpListener;

pub use config::{Config, SourceSpec};

/// Runs the daemon of `source` on `listener` until `shutdown` resolves; then stops
/// accepting, ends the streams, lets requests finish (at most [`server::DRAIN`]) and stops
/// the source. `fabric serve` opens the source before it says it is listening, so a
/// source that cannot start is reported before the readiness line.
pub async fn run(
    config: Config,
    source: Box<dyn source::Source>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let source::SourceMap { info, fabric } = source.map();
    let tenants = load_tenants(&config, &info, fabric.as_deref())?.map(Arc::new);
    let namespaces = match source.places() {
        Some(nodes) => Some(Bytes::from(serde_json::to_vec(
            &serde_json::json!({ "nodes": nodes }),
        )?)),
        None => None,
    };
    let hub = Arc::new(
        hub::Hub::new(
            info.clone(),
            config.history,
            config.events_kept,
            config.stream_lag,
        )
        .with_tenants(tenants),
    );
    let health = Arc::new(health::DaemonHealth::new(&info, config.health));
    // A testbed's interfaces are `p<port>`: the API names them so (`swp<port+1>`, the
    // export's switch naming, otherwise).
    let ifnames = match &config.source {
        SourceSpec::Testbed { .. } | SourceSpec::Netns { .. } | SourceSpec::HostNetns { .. } => {
            routes::IfNames::Testbed
        }
        _ => routes::IfNames::Export,
    };
    let routes = match fabric {
        Some(f) => Some(Arc::new(
            tokio::task::spawn_blocking(move || routes::RouteView::new(f, ifnames)).await?,
        )),
        None => None,
    };
    let collector = collector::Collector::start(
        source,
        hub.clone(),
        routes.clone(),
        health.clone(),
        config.interval,
        config.flow_events,
        collector::DriftPolicy {
            every: config.drift_interval,
            repair: config.repair_drift,
        },
    );
    let exposition =
        metrics::Exposition::new(hub.clone(), health.clone(), metrics_scale(&config.source));
    let state = http::AppState {
        hub: hub.clone(),
        routes,
        control: collector.control(),
        token: config.token.as_deref().map(Arc::from),
        exposition: Arc::new(exposition),
        health,
        started: Instant::now(),
        request_timeout: config.request_timeout,
        topology: Bytes::from(serde_json::to_vec(&info)?),
        namespaces,
        stream_sndbuf: config.stream_sndbuf,
        record_dir: config.record.clone().map(Arc::new),
        stream_slots: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
    };
    let router = http::router(state, config.max_body_bytes);
    let limits = server::ConnLimits {
        header_timeout: config.header_timeout,
        max_header_bytes: config.max_header_bytes,
    };
    server::serve(
        listener,
        router,
        hub,
        config.max_connections,
        limits,
        shutdown,
    )
    .await;
    collector.stop().await;
    // The source is gone; a namespace it created and could not delete is a leak the
    // operator must hear about (each was logged with its reason).
    let left = veth::netns::live();
    if !left.is_empty() {
        anyhow::bail!(
            "stopped, leaving {} namespace(s) behind: {}",
            left.len(),
            left.join(", ")
        );
    }
    log::info("stopped");
    Ok(())
}

/// The factor on the traffic counters of `/metrics` (the per-port and the per-tenant
/// ones): the simulator's counters advance in simulated time, `--ratio` simulated seconds
/// per wall-clock second, and Prometheus rates them over wall-clock time.
fn metrics_scale(source: &SourceSpec) -> f64 {
    match source {
        SourceSpec::Sim { ratio, .. } => 1.0 / ratio,
        _ => 1.0,
    }
}

/// The per-tenant map of `--tenants FILE` over the source's hosts (`None` without it); an
/// error when the file is bad or the source knows no hosts.
pub fn load_tenants(
    config: &Config,
    info: &fabric_api::FabricInfo,
    fabric: Option<&topo::Fabric>,
) -> anyhow::Result<Option<tenants::TenantLive>> {
    let Some(path) = &config.tenants else {
        return Ok(None);
    };
    let Some(f) = fabric else {
        anyhow::bail!(
            "--tenants {}: this source has no fabric design to find the tenants' hosts in",
            path.display()
        );
    };
    let t = crate::tenant_args::load(path, f)?;
    Ok(Some(tenants::TenantLive::new(
        tenants::TenantMap::new(info, f, &t),
        metrics_scale(&config.source),
    )))
}

/// `fabric serve` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Own an embedded simulation (the default source): a scenario file, or nothing for
    /// the built-in looping demo.
    #[arg(long, value_name = "SCENARIO", num_args = 0..=1, default_missing_value = "")]
    pub sim: Option<String>,
    /// Own a routed veth testbed of --fabric (root): built at start, watched, repaired
    /// on link events, deleted on exit.
    #[arg(long, conflicts_with = "sim")]
    pub testbed: bool,
    /// Program and watch the existing namespaces PREFIX + h<i>/s<i> of a routed testbed
    /// of --fabric (root; e.g. `fab-RUNID-` from `fabric testbed up`); not deleted on exit.
    #[arg(long, value_name = "PREFIX", conflicts_with_all = ["sim", "testbed"])]
    pub netns_prefix: Option<String>,
    /// Start an InfiniBand subnet of --fabric: ibsim simulating it, a real OpenSM
    /// (`-s 1 -R file`) routing it on fabric's tables; cable changes are detected (OpenSM's
    /// traps, ibnetdiscover) and answered with new tables OpenSM loads (no root).
    #[arg(long, conflicts_with_all = ["sim", "testbed", "netns_prefix", "host_netns"])]
    pub infiniband: bool,
    /// --infiniband: attach to a running subnet and its OpenSM (routing engine `file` on
    /// --ib-lfts) instead of starting them; they are never stopped, restarted or
    /// reconfigured (docs/infiniband.md). Needs --ib-sim-socket or --ib-ca, --ib-sm-pid,
    /// --ib-sm-log and --ib-lfts.
    #[arg(long, requires_all = ["infiniband", "ib_sm_pid", "ib_sm_log", "ib_lfts"])]
    pub ib_attach: bool,
    /// --ib-attach on ibsim: the simulator's socket name (its IBSIM_SOCKNAME); the tools
    /// reach it through libumad2sim.
    #[arg(
        long,
        value_name = "NAME",
        requires = "ib_attach",
        conflicts_with = "ib_ca"
    )]
    pub ib_sim_socket: Option<String>,
    /// --ib-attach on a real fabric: the channel adapter the tools use (`ibstat` lists
    /// them; /dev/infiniband/umad*: root or the rdma group).
    #[arg(long, value_name = "CA", requires = "ib_attach")]
    pub ib_ca: Option<String>,
    /// --ib-ca's port.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "ib_ca")]
    pub ib_ca_port: u8,
    /// --ib-attach: OpenSM's process id, or a file holding it; it gets SIGHUP to re-sweep.
    #[arg(long, value_name = "PID|FILE", requires = "ib_attach")]
    pub ib_sm_pid: Option<String>,
    /// --ib-attach: OpenSM's log file (its -f), followed for traps and sweeps.
    #[arg(long, value_name = "FILE", requires = "ib_attach")]
    pub ib_sm_log: Option<PathBuf>,
    /// --ib-attach: the LFT file OpenSM's file engine loads (its -U / lfts_file): the one
    /// file fabric writes.
    #[arg(long, value_name = "FILE", requires = "ib_attach")]
    pub ib_lfts: Option<PathBuf>,
    /// Program and watch the namespace the daemon runs in as switch --switch of
    /// --fabric (root; a Linux router, or a namespace entered with `ip netns exec`):
    /// ports are the interfaces p<port>.
    #[arg(long, requires = "switch", conflicts_with_all = ["sim", "testbed", "netns_prefix"])]
    pub host_netns: bool,
    /// Observe a fabric the daemon did not build and never writes to (a BGP fabric
    /// scraped by Prometheus): counters from --prometheus, neighbours from --lldp-dir,
    /// FIBs from --fib-netns, all checked against the design --fabric (docs/observe.md).
    #[arg(long, requires = "prometheus", conflicts_with_all = ["sim", "testbed", "netns_prefix", "host_netns", "infiniband"])]
    pub observe: bool,
    /// --observe: Prometheus's URL (http://HOST:PORT[/prefix]).
    #[arg(long, value_name = "URL", requires = "observe")]
    pub prometheus: Option<String>,
    /// --observe: file with Prometheus credentials, one line `bearer TOKEN` or
    /// `basic USER:PASSWORD` (never on the command line).
    #[arg(long, value_name = "FILE", requires = "observe")]
    pub prometheus_credentials: Option<PathBuf>,
    /// --observe: the label naming the switch in the exporters' series.
    #[arg(long, default_value = "switch", requires = "observe")]
    pub switch_label: String,
    /// --observe: how ports are named in `device` labels and LLDP port ids.
    #[arg(long, value_enum, default_value = "testbed", requires = "observe")]
    pub port_names: observe_source::PortNames,
    /// --observe: directory with each switch's lldpd socket (lldpd-SWITCH.sock) or
    /// `lldpcli -f json show neighbors` output (SWITCH.json).
    #[arg(long, value_name = "DIR", requires = "observe")]
    pub lldp_dir: Option<PathBuf>,
    /// --observe: read each switch's FIB through netlink in namespace PREFIX + s<i>
    /// (root; e.g. the prefix `fabric testbed frr` prints).
    #[arg(long, value_name = "PREFIX", requires = "observe")]
    pub fib_netns: Option<String>,
    /// --observe with --fib-netns: read each FIB through netlink (the kernel's routes) or
    /// from FRR (`vtysh -N <namespace> -c 'show ip route json'`).
    #[arg(long, value_enum, default_value = "netlink", requires = "fib_netns")]
    pub fib_from: observe_source::FibFrom,
    /// --observe: timeout of one Prometheus request.
    #[arg(long, default_value = "3s", value_parser = parse_duration, requires = "observe")]
    pub prometheus_timeout: Duration,
    /// With --host-netns: the switch of the fabric this router is.
    #[arg(long, value_name = "NAME", requires = "host_netns")]
    pub switch: Option<String>,
    /// Fabric of the simulation or testbed: a spec file or preset name.
    #[arg(
        long,
        visible_alias = "preset",
        default_value = "fat-tree-k4",
        value_name = "SPEC|PRESET"
    )]
    pub fabric: String,
    /// Simulated time per wall-clock second (0.001: one simulated ms per second).
    #[arg(long, default_value_t = 0.001)]
    pub ratio: f64,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// --sim: this host's NIC storms — it keeps pausing its leaf port (PFC priority
    /// --storm-priority, the longest quanta every 100 µs) from --storm-at for
    /// --storm-for (simulated time).
    #[arg(long, value_name = "HOST", conflicts_with_all = ["testbed", "netns_prefix", "host_netns"])]
    pub storm_host: Option<u32>,
    /// When the storm starts (simulated time since the daemon started).
    #[arg(long, default_value = "0s", value_parser = parse_duration, requires = "storm_host")]
    pub storm_at: Duration,
    /// How long the storm lasts (simulated time; default: until the daemon stops).
    #[arg(long, value_parser = parse_duration, requires = "storm_host")]
    pub storm_for: Option<Duration>,
    /// PFC priority the storming host pauses (the scenario's traffic class, 0 by default).
    #[arg(long, default_value_t = 0, requires = "storm_host")]
    pub storm_priority: u8,
    /// Address to listen on (a non-loopback address needs a token).
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub listen: SocketAddr,
    /// File holding the token that mutating endpoints require (or FABRIC_SERVE_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Time between snapshots (e.g. 1s, 250ms).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Most HTTP connections served at once.
    #[arg(long, default_value_t = 256)]
    pub max_connections: usize,
    /// Directory that `POST /api/v1/recording` writes into (a plain file name there);
    /// without it, recording over the API is refused.
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
    /// Most files --record-dir may hold; a new recording beyond it is refused (507).
    #[arg(long, default_value_t = 100)]
    pub record_max_files: usize,
    /// Largest recording, bytes; a recording stops when it reaches it.
    #[arg(long, default_value_t = 1 << 30)]
    pub record_max_bytes: u64,
    /// Most stream clients at once (fewer than --max-connections: the rest stay free for
    /// /metrics, health and status); one more is answered 503.
    #[arg(long, default_value_t = 64)]
    pub max_streams: usize,
    /// Frames kept for resuming a stream.
    #[arg(long, default_value_t = 600)]
    pub history: usize,
    /// Events kept for `GET /api/v1/events` (the oldest is forgotten first).
    #[arg(long, default_value_t = 1000)]
    pub events_kept: usize,
    /// Frames a stream client may fall behind before it is dropped.
    #[arg(long, default_value_t = 16)]
    pub stream_lag: usize,
    /// PFC watchdog detection time (100ms to 5s).
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub pfcwd_detection: Duration,
    /// PFC watchdog restoration time (100ms to 60s).
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub pfcwd_restoration: Duration,
    /// PFC watchdog action on a stormed queue: drop, forward or alert.
    #[arg(long, default_value = "drop")]
    pub pfcwd_action: String,
    /// Publish an event per finished flow (off: only the flows_finished total moves).
    #[arg(long)]
    pub flow_events: bool,
    /// Kernel send buffer of a stream connection, bytes (with --stream-lag, bounds what a
    /// slow client can hold before it is dropped).
    #[arg(long, default_value_t = 128 * 1024)]
    pub stream_sndbuf: usize,
    /// Time between two checks of the kernel's routes against the tables (--testbed).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub drift_interval: Duration,
    /// Reprogram drifted routes at each periodic check (--testbed, --netns-prefix):
    /// missing and different ones re-added, extra ones the daemon wrote removed.
    #[arg(long)]
    pub repair_drift: bool,
    /// Time a client has to send its request head.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub header_timeout: Duration,
    /// Time limit of a (non-streaming) request.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Tenant file (docs/tenants.md): serve per-tenant utilisation, PFC pauses, drops and
    /// per-priority counters of the tenants' host links (`GET /api/v1/tenants`,
    /// `fabric_tenant_*` metrics, `tenants` on events).
    #[arg(long, value_name = "FILE")]
    pub tenants: Option<PathBuf>,
}

/// `250ms`, `1s`, `2.5s`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((s, ""), |i| s.split_at(i));
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a number with a unit (ms, s, m)"))?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(format!("{s:?}: unit must be ms, s or m")),
    };
    if !(0.0..1e9).contains(&secs) {
        return Err(format!("{s:?}: out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn read_token(args: &Args) -> anyhow::Result<Option<String>> {
    if let Some(p) = &args.token_file {
        let t = std::fs::read_to_string(p)
            .with_context(|| format!("--token-file {}: cannot read", p.display()))?;
        return Ok(Some(t.trim().to_string()));
    }
    Ok(std::env::var("FABRIC_SERVE_TOKEN")
        .ok()
        .filter(|t| !t.is_empty()))
}

impl Args {
    /// The configuration these options describe.
    pub fn config(&self) -> anyhow::Result<Config> {
        let scenario = self.sim.clone().filter(|s| !s.is_empty());
        let mut c = Config::new(if self.observe {
            SourceSpec::Observe(observe_source::ObserveSpec {
                fabric: self.fabric.clone(),
                prometheus: self.prometheus.clone().unwrap_or_default(),
                credentials: self.prometheus_credentials.clone(),
                switch_label: self.switch_label.clone(),
                port_names: self.port_names,
                lldp_dir: self.lldp_dir.clone(),
                fib_netns: self.fib_netns.clone(),
                fib_from: self.fib_from,
                timeout: self.prometheus_timeout,
            })
        } else if let Some(switch) = &self.switch {
            SourceSpec::HostNetns {
                fabric: self.fabric.clone(),
                switch: switch.clone(),
            }
        } else if let Some(prefix) = &self.netns_prefix {
            SourceSpec::Netns {
                fabric: self.fabric.clone(),
                prefix: prefix.clone(),
            }
        } else if self.infiniband {
            SourceSpec::Infiniband {
                fabric: self.fabric.clone(),
                attach: self.ib_attach_spec()?,
            }
        } else if self.testbed {
            SourceSpec::Testbed {
                fabric: self.fabric.clone(),
            }
        } else {
            SourceSpec::Sim {
                fabric: self.fabric.clone(),
                scenario,
                ratio: self.ratio,
                seed: self.seed,
                storm: self.storm_host.map(|host| {
                    let at = self.storm_at.as_nanos() as u64;
                    sim_source::StormSpec {
                        host,
                        priority: self.storm_priority,
                        at,
                        until: self.storm_for.map(|d| at + d.as_nanos() as u64),
                    }
                }),
            }
        });
        c.listen = self.listen;
        c.token = read_token(self)?;
        c.interval = self.interval;
        c.max_connections = self.max_connections;
        c.max_streams = self.max_streams;
        c.record = self.record_dir.clone().map(|dir| recordings::RecordDir {
            dir,
            max_files: self.record_max_files,
            max_bytes: self.record_max_bytes,
        });
        c.history = self.history;
        c.events_kept = self.events_kept;
        c.stream_lag = self.stream_lag;
        c.header_timeout = self.header_timeout;
        c.stream_sndbuf = self.stream_sndbuf;
        c.flow_events = self.flow_events;
        let ps = |d: Duration| cc_algos::Duration::from_secs_f64(d.as_secs_f64());
        let action = self.pfcwd_action.parse().map_err(anyhow::Error::msg)?;
        c.health.pfcwd = cc_algos::pfcwd::WatchdogConfig::new(
            ps(self.pfcwd_detection),
            ps(self.pfcwd_restoration),
            action,
        )
        .map_err(|e| anyhow::anyhow!("--pfcwd-*: {e}"))?;
        c.request_timeout = self.request_timeout;
        c.drift_interval = self.drift_interval;
        c.repair_drift = self.repair_drift;
        c.tenants = self.tenants.clone();
        c.validate().map_err(anyhow::Error::msg)?;
        Ok(c)
    }
}

impl Args {
    /// What `--ib-attach` names; `None` without it.
    fn ib_attach_spec(&self) -> anyhow::Result<Option<ib_testbed::subnet::Attach>> {
        if !self.ib_attach {
            return Ok(None);
        }
        let port = match (&self.ib_sim_socket, &self.ib_ca) {
            (Some(sock), None) => ib_testbed::tools::UmadPort::Sim { sock: sock.clone() },
            (None, Some(ca)) => ib_testbed::tools::UmadPort::Ca {
                name: ca.clone(),
                port: self.ib_ca_port,
            },
            _ => anyhow::bail!(
                "--ib-attach: name the umad port the tools use: --ib-sim-socket NAME (ibsim) or --ib-ca CA (a real HCA)"
            ),
        };
        let pid = self.ib_sm_pid.as_deref().unwrap_or_default();
        let sm_pid = match pid.parse::<u32>() {
            Ok(p) => p,
            Err(_) => {
                let text = std::fs::read_to_string(pid).with_context(|| {
                    format!("--ib-sm-pid {pid}: neither a process id nor a readable pid file")
                })?;
                text.trim().parse().map_err(|_| {
                    anyhow::anyhow!(
                        "--ib-sm-pid {pid}: expected a process id in the file, found {:?}",
                        text.trim()
                    )
                })?
            }
        };
        Ok(Some(ib_testbed::subnet::Attach {
            port,
            sm_pid,
            sm_log: self.ib_sm_log.clone().unwrap_or_default(),
            lfts: self.ib_lfts.clone().unwrap_or_default(),
        }))
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn signals() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("installing a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => log::info("SIGINT: shutting down"),
        _ = term.recv() => log::info("SIGTERM: shutting down"),
    }
}

/// `fabric serve`.
pub fn main(args: Args) -> anyhow::Result<()> {
    // A daemon must survive a client that hangs up while it writes (hyper uses writev,
    // which raises SIGPIPE on a closed socket); `fabric` restores the default for pipes.
    // SAFETY: changing a signal's disposition before the runtime's threads exist.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let config = args.config()?;
    // Validated above; the source (a testbed is built here) opens before the readiness
    // line, so every error comes before it, and once.
    let source = sim_source::open(&config.source, config.interval)?;
    // A bad tenant file is reported before the readiness line.
    let map = source.map();
    load_tenants(&config, &map.info, map.fabric.as_deref())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    rt.block_on(async move {
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("--listen {}: cannot bind", config.listen))?;
        let addr = listener.local_addr()?;
        // The first stdout line: scripts and tests read the port from it.
        println!("listening on http://{addr}");
        log::info(&format!("serving on http://{addr}"));
        run(config, source, listener, signals()).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("5").unwrap_err().contains("unit"));
        assert!(parse_duration("xs").unwrap_err().contains("number"));
        assert!(parse_duration("-1s").unwrap_err().contains("range"));
    }
}
