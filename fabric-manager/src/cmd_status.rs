//! `fabric status`: asks a running `fabric serve` for its health and latest totals and
//! prints a summary (or the raw JSON with `--json`).

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
fn authority(url: &str) -> anyhow::Result<String> {
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
    daemon: serde_json::Value,
}

#[derive(Debug, Deserialize)]
struct Reroutes {
    count: u64,
    sum: f64,
}

fn summary(h: &Health, totals: Option<&fabric_api::Snapshot>) -> String {
    let mut s = format!(
        "status      {}\nsource      {}\nuptime      {:.0} s\nsnapshot    {}\nstreams     {} client(s)\n",
        h.status,
        h.source.as_deref().unwrap_or("(no snapshot yet)"),
        h.uptime_s,
        h.latest_seq.map_or("-".to_string(), |q| q.to_string()),
        h.stream_clients
    );
    let down = if h.links_down.is_empty() {
        "none".to_string()
    } else {
        format!("{} ({:?})", h.links_down.len(), h.links_down)
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
    s += &format!("daemon      {}\n", h.daemon);
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
            if a.json.is_some() {
                let v: serde_json::Value =
                    serde_json::from_slice(&body).context("the daemon's health report")?;
                return crate::common::JsonOut::new(a.json.as_deref())?.write(&v);
            }
            let h: Health = serde_json::from_slice(&body).context("the daemon's health report")?;
            let (code, body) = get(&auth, "/api/v1/telemetry").await?;
            let snap: Option<fabric_api::Snapshot> = if code == 200 {
                Some(serde_json::from_slice(&body).context("the daemon's snapshot")?)
            } else {
                None
            };
            print!("{}", summary(&h, snap.as_ref()));
            Ok(())
        };
        tokio::time::timeout(Duration::from_secs_f64(a.timeout), work)
            .await
            .map_err(|_| anyhow::anyhow!("{auth}: no answer within {} s", a.timeout))?
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
