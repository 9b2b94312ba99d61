//! `fabric status`: asks a running `fabric serve` for its health and latest totals and
//! prints a summary for people (links as `switch:port -- switch:port`), or the health
//! report as JSON with `--json`. Exits 1 when the daemon reports the fabric degraded, so
//! a script or a monitoring check can use the exit status alone.

use std::time::Duration;

use anyhow::{Context, bail};
use axum::body::{Body, Bytes};
use hyper_util::rt::TokioIo;
use serde::Deserialize;

/// `fabric status` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The daemon's address (as `fabric serve --listen` printed it).
    #[arg(long, default_value = "http://127.0.0.1:9464")]
    pub daemon: String,
    /// The health report as JSON: `--json FILE`, or `--json` alone for standard output
    /// instead of the summary (see `common::JsonOut`).
    #[arg(long, value_name = "OUT", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<std::path::PathBuf>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 5.0)]
    pub timeout: f64,
}

/// Largest answer accepted (a 300k-link snapshot is tens of MB).
const MAX_BODY: usize = 512 << 20;

/// `host:port` of an `http://host:port[/]` address.
pub(crate) fn authority(url: &str) -> anyhow::Result<String> {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains('/') {
        bail!("--daemon {url}: expected http://HOST:PORT");
    }
    Ok(if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:9464")
    })
}

/// One GET over a fresh HTTP/1.1 connection.
pub async fn get(authority: &str, path: &str) -> anyhow::Result<(u16, Bytes)> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .with_context(|| {
            format!("cannot connect to the daemon at {authority} (is `fabric serve` running?)")
        })?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = hyper::Request::get(path)
        .header(hyper::header::HOST, authority)
        .body(Body::empty())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let body = axum::body::to_bytes(Body::new(resp.into_body()), MAX_BODY).await?;
    Ok((status, body))
}

#[derive(Debug, Deserialize)]
struct Health {
    status: String,
    uptime_s: f64,
    source: Option<String>,
    latest_seq: Option<u64>,
    stream_clients: usize,
    links_down: Vec<u32>,
    unreachable_pairs: u64,
    reroutes: Reroutes,
    daemon: Counters,
}

/// The daemon's own counters in the health report.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Counters {
    connections: u64,
    bad_connections: u64,
    bad_requests: u64,
    auth_failures: u64,
    stream_dropped: u64,
    stream_refused: u64,
    source_errors: u64,
}

#[derive(Debug, Deserialize)]
struct Reroutes {
    count: u64,
    sum: f64,
}

/// Node name → the network namespace holding it (`GET /api/v1/namespaces`), for a
/// daemon whose source has namespaces.
type Places = std::collections::HashMap<String, String>;

/// `a:p1 -- b:p2` for link `id` (its two ports in the map, each with its namespace when
/// the daemon has them), or `link ID` when unknown.
fn link_name(info: Option<&fabric_api::FabricInfo>, places: &Places, id: u32) -> String {
    let ends: Vec<String> = info
        .map(|i| {
            i.ports
                .iter()
                .enumerate()
                .filter(|(_, p)| p.link.is_some_and(|l| l.0 == id))
                .map(|(n, p)| {
                    let node = i.port_node_name(n).unwrap_or("?");
                    match places.get(node) {
                        Some(ns) => format!("{node}:p{} (netns {ns})", p.port),
                        None => format!("{node}:p{}", p.port),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if ends.is_empty() {
        format!("link {id}")
    } else {
        format!("{} (link {id})", ends.join(" -- "))
    }
}

/// The `{"nodes": [{"node", "netns", …}]}` answer of `GET /api/v1/namespaces` as a map.
fn places(body: &[u8]) -> Places {
    #[derive(Deserialize)]
    struct Node {
        node: String,
        netns: String,
    }
    #[derive(Deserialize)]
    struct Nodes {
        nodes: Vec<Node>,
    }
    serde_json::from_slice::<Nodes>(body)
        .map(|n| n.nodes.into_iter().map(|n| (n.node, n.netns)).collect())
        .unwrap_or_default()
}

fn summary(
    h: &Health,
    info: Option<&fabric_api::FabricInfo>,
    places: &Places,
    totals: Option<&fabric_api::Snapshot>,
) -> String {
    let mut s = format!(
        "status      {}\nsource      {}\nuptime      {:.0} s\nsnapshot    {}\nstreams     {} client(s)\n",
        h.status,
        h.source.as_deref().unwrap_or("(no snapshot yet)"),
        h.uptime_s,
        h.latest_seq.map_or("-".to_string(), |q| q.to_string()),
        h.stream_clients
    );
    if !places.is_empty() {
        s += &format!(
            "namespaces  {} (each node's namespace and interface names: GET /api/v1/namespaces)\n",
            places.len()
        );
    }
    let down = if h.links_down.is_empty() {
        "none".to_string()
    } else {
        let names: Vec<String> = h
            .links_down
            .iter()
            .map(|&l| link_name(info, places, l))
            .collect();
        format!("{}: {}", h.links_down.len(), names.join(", "))
    };
    s += &format!(
        "links down  {down}\nunreachable {} host pair(s)\n",
        h.unreachable_pairs
    );
    if h.reroutes.count > 0 {
        s += &format!(
            "reroutes    {} (mean {:.3} ms to repair)\n",
            h.reroutes.count,
            h.reroutes.sum / h.reroutes.count as f64 * 1e3
        );
    }
    if let Some(snap) = totals {
        let t = &snap.totals;
        s += &format!(
            "traffic     {:.3} GB sent, {} drops (buffer {}, failure {}, no route {}), {} ECN marks, {} PAUSE frames\n",
            t.tx_bytes as f64 / 1e9,
            t.drops_buffer + t.drops_failure + t.drops_no_route + t.drops_kernel,
            t.drops_buffer,
            t.drops_failure,
            t.drops_no_route,
            t.ecn_marks,
            t.pfc_tx
        );
    }
    let k = &h.daemon;
    s += &format!(
        "daemon      {} connections; refused: {} bad requests, {} bad connections, {} token failures, {} streams over the cap; {} slow streams dropped; {} source errors\n",
        k.connections,
        k.bad_requests,
        k.bad_connections,
        k.auth_failures,
        k.stream_refused,
        k.stream_dropped,
        k.source_errors
    );
    s
}

/// `fabric status`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let auth = authority(&a.daemon)?;
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        bail!(
            "--timeout {}: expected a positive number of seconds",
            a.timeout
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let work = async {
            let (code, body) = get(&auth, "/api/v1/health").await?;
            if code != 200 {
                bail!(
                    "{auth}: /api/v1/health answered {code}: {}",
                    String::from_utf8_lossy(&body)
                );
            }
            let h: Health = serde_json::from_slice(&body).context("the daemon's health report")?;
            if a.json.is_some() {
                let v: serde_json::Value =
                    serde_json::from_slice(&body).context("the daemon's health report")?;
                crate::common::JsonOut::new(a.json.as_deref())?.write(&v)?;
                return Ok(h.status);
            }
            let (code, body) = get(&auth, "/api/v1/topology").await?;
            let info: Option<fabric_api::FabricInfo> = if code == 200 {
                serde_json::from_slice(&body).ok()
            } else {
                None
            };
            let (code, body) = get(&auth, "/api/v1/namespaces").await?;
            let places = if code == 200 {
                places(&body)
            } else {
                Places::new()
            };
            let (code, body) = get(&auth, "/api/v1/telemetry").await?;
            let snap: Option<fabric_api::Snapshot> = if code == 200 {
                Some(serde_json::from_slice(&body).context("the daemon's snapshot")?)
            } else {
                None
            };
            print!("{}", summary(&h, info.as_ref(), &places, snap.as_ref()));
            Ok(h.status)
        };
        let status = tokio::time::timeout(Duration::from_secs_f64(a.timeout), work)
            .await
            .map_err(|_| anyhow::anyhow!("{auth}: no answer within {} s", a.timeout))??;
        if status == "ok" {
            Ok(())
        } else {
            Err(crate::common::CheckFailed(format!("{auth}: the fabric is {status}")).into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_addresses() {
        assert_eq!(
            authority("http://127.0.0.1:9464/").unwrap(),
            "127.0.0.1:9464"
        );
        assert_eq!(authority("localhost").unwrap(), "localhost:9464");
        assert!(authority("http://a/b").is_err());
    }
}
