//! The HTTP API (axum): routes, handlers, the token check and the request limits.
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/api/v1/topology` | the fabric map (`fabric_api::FabricInfo`) |
//! | GET | `/api/v1/routes/{switch}` | a switch's ECMP routes as the daemon holds them |
//! | GET | `/api/v1/telemetry` | the latest `Snapshot` |
//! | GET | `/api/v1/telemetry/stream` | NDJSON / SSE of `Frame`s, `?from=SEQ` resumes |
//! | GET | `/api/v1/events` | kept events, `?since=SEQ&limit=N` |
//! | GET | `/api/v1/health` | daemon and fabric health |
//! | GET | `/api/v1/drain` | servers to drain / resume in a scheduler (`serve::drain`) |
//! | GET | `/api/v1/topology/check` | LLDP neighbours compared with the spec (`--testbed`) |
//! | GET | `/api/v1/drift` | the kernel's routes compared with the tables (`--testbed`) |
//! | GET | `/metrics` | Prometheus exposition; `?switch=A,B` / `?family=P,Q` filter it |
//! | POST | `/api/v1/links/{link}/fail`, `/restore` | token: fail or restore a link |
//! | POST | `/api/v1/reroute` | token: recompute every table from scratch |
//! | POST | `/api/v1/drift/repair` | token: reprogram the routes that drifted (`--testbed`) |
//! | POST / DELETE | `/api/v1/recording` | token: start (`{"path": …}`) / stop a recording |
//!
//! Errors are JSON `{"error": "..."}` with a 4xx/5xx status. Every non-streaming request
//! has a time limit and bodies a size limit; each refusal is logged and counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::collector::{Control, ControlTx};
use super::health::DaemonHealth;
use super::hub::Hub;
use super::log;
use super::recordings::{RecordDir, Refusal};
use super::routes::RouteView;

/// What every handler shares.
#[derive(Clone, Debug)]
pub struct AppState {
    /// Published telemetry.
    pub hub: Arc<Hub>,
    /// The routing tables, when the source has a `topo` fabric.
    pub routes: Option<Arc<RouteView>>,
    /// Commands to the collector.
    pub control: ControlTx,
    /// The bearer token, if one was given at start-up.
    pub token: Option<Arc<str>>,
    /// What `/metrics` encodes.
    pub exposition: Arc<super::metrics::Exposition>,
    /// Health derived from events.
    pub health: Arc<DaemonHealth>,
    /// When the daemon started.
    pub started: Instant,
    /// Request time limit.
    pub request_timeout: Duration,
    /// The topology JSON (built once).
    pub topology: Bytes,
    /// `{"nodes": [NodePlace…]}` (built once): where each node lives; `None` for a
    /// source without namespaces.
    pub namespaces: Option<Bytes>,
    /// Kernel send buffer of a stream connection, bytes.
    pub stream_sndbuf: usize,
    /// Where recordings may be written (`--record-dir`); `None`: not over the API.
    pub record_dir: Option<Arc<RecordDir>>,
    /// One permit per stream client (`--max-streams`), fewer than the connections, so
    /// that streams can never take the capacity scrapes, health checks and status need.
    pub stream_slots: Arc<tokio::sync::Semaphore>,
}

/// A JSON error response.
pub fn error(status: StatusCode, msg: &str) -> Response {
    #[derive(Serialize)]
    struct E<'a> {
        error: &'a str,
    }
    (status, Json(E { error: msg })).into_response()
}

/// The router (the stream route has no time limit; everything else has one).
pub fn router(st: AppState, max_body: usize) -> Router {
    let limited = Router::new()
        .route("/api/v1/topology", get(topology))
        .route("/api/v1/namespaces", get(namespaces))
        .route("/api/v1/tenants", get(tenants))
        .route("/api/v1/routes/{switch}", get(routes))
        .route("/api/v1/telemetry", get(telemetry))
        .route("/api/v1/events", get(events))
        .route("/api/v1/health", get(health))
        .route("/api/v1/drain", get(super::drain::drain))
        .route("/api/v1/drift", get(drift))
        .route("/api/v1/topology/check", get(topology_check))
        .route("/metrics", get(metrics))
        .route("/api/v1/links/{link}/{action}", post(link_action))
        .route("/api/v1/reroute", post(reroute))
        .route("/api/v1/drift/repair", post(drift_repair))
        .route("/api/v1/recording", post(record_start).delete(record_stop))
        .layer(middleware::from_fn_with_state(st.clone(), time_limit));
    let app = Router::new()
        .route("/api/v1/telemetry/stream", get(super::stream::stream))
        .merge(limited)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(st.clone());
    // Refusals are counted and made JSON around the whole router, not around each route:
    // axum adds a 405's `Allow` header where the router answers, so only from out here
    // can the JSON body name the allowed methods too.
    Router::new()
        .fallback_service(app)
        .layer(middleware::from_fn_with_state(st, count_refusals))
}

async fn time_limit(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let what = format!("{} {}", req.method(), req.uri().path());
    match tokio::time::timeout(st.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => {
            st.hub.counters.timeouts.inc();
            log::warn(&format!("{what}: timed out after {:?}", st.request_timeout));
            error(StatusCode::SERVICE_UNAVAILABLE, "request timed out")
        }
    }
}

/// Counts and logs every 4xx the extractors produced (bad JSON, body too large, …).
async fn count_refusals(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let what = format!("{} {}", req.method(), req.uri().path());
    let r = next.run(req).await;
    let s = r.status();
    if matches!(
        s,
        StatusCode::BAD_REQUEST
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::UNPROCESSABLE_ENTITY
            | StatusCode::UNSUPPORTED_MEDIA_TYPE
            | StatusCode::METHOD_NOT_ALLOWED
    ) {
        st.hub.counters.bad_requests.inc();
        log::warn(&format!("{what}: refused with {s}"));
    }
    as_json_error(r).await
}

/// Every error in one shape, `{"error": "…"}`: an answer axum made itself (405 with an
/// empty body, 413/415/422 in plain text) gets its text, or the reason, as JSON.
async fn as_json_error(r: Response) -> Response {
    let s = r.status();
    let json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(s.is_client_error() || s.is_server_error()) || json {
        return r;
    }
    let (parts, body) = r.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let msg = match parts
        .headers
        .get(header::ALLOW)
        .and_then(|v| v.to_str().ok())
    {
        Some(allow) if s == StatusCode::METHOD_NOT_ALLOWED => {
            format!("method not allowed here; this endpoint accepts {allow}")
        }
        _ if !text.is_empty() => text,
        _ => s.canonical_reason().unwrap_or("error").to_string(),
    };
    let mut out = error(s, &msg);
    for (k, v) in &parts.headers {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint (see docs/daemon.md)",
    )
}

/// Checks `Authorization: Bearer TOKEN` in constant time: `Some(refusal)` when it fails.
fn refuse(st: &AppState, headers: &HeaderMap, what: &str) -> Option<Response> {
    let Some(token) = &st.token else {
        return Some(error(
            StatusCode::FORBIDDEN,
            "mutating endpoints are disabled: start the daemon with --token-file FILE",
        ));
    };
    // The scheme is case-insensitive (RFC 7235 section 2.1): `bearer`, `BEARER` too.
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .and_then(|(scheme, t)| {
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| t.trim_start())
        });
    let ok = given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes()));
    if ok {
        return None;
    }
    st.hub.counters.auth_failures.inc();
    log::warn(&format!(
        "{what}: {} token refused",
        if given.is_some() { "wrong" } else { "missing" }
    ));
    Some(error(
        StatusCode::UNAUTHORIZED,
        "missing or wrong token (Authorization: Bearer TOKEN)",
    ))
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, &x) in a.iter().enumerate() {
        diff |= x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0);
    }
    diff == 0
}

fn json_bytes(b: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], b).into_response()
}

async fn topology(State(st): State<AppState>) -> Response {
    json_bytes(st.topology.clone())
}

async fn namespaces(State(st): State<AppState>) -> Response {
    match &st.namespaces {
        Some(b) => json_bytes(b.clone()),
        None => error(
            StatusCode::NOT_FOUND,
            "this source has no network namespaces (the simulator, or a fabric observed from outside)",
        ),
    }
}

async fn tenants(State(st): State<AppState>) -> Response {
    match st.hub.tenants() {
        Some(t) => Json(t.view()).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "this daemon has no tenant file: start it with --tenants FILE",
        ),
    }
}

async fn routes(State(st): State<AppState>, Path(switch): Path<String>) -> Response {
    let Some(view) = &st.routes else {
        return error(StatusCode::NOT_FOUND, "this source has no routing tables");
    };
    match view.switch_routes(&switch) {
        Ok(r) => Json(r).into_response(),
        Err(e) => error(StatusCode::NOT_FOUND, &e),
    }
}

async fn telemetry(State(st): State<AppState>) -> Response {
    match st.hub.latest() {
        Some(l) => json_bytes(l.json.clone()),
        None => error(StatusCode::SERVICE_UNAVAILABLE, "no snapshot yet"),
    }
}

/// Query of `/api/v1/events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsQuery {
    since: Option<u64>,
    limit: Option<usize>,
}

async fn events(
    State(st): State<AppState>,
    q: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("query: {e}")),
    };
    let limit = q.limit.unwrap_or(1000).min(10_000);
    Json(st.hub.events(q.since.unwrap_or(0), limit)).into_response()
}

/// `/api/v1/health`.
#[derive(Debug, Serialize)]
pub struct HealthReport {
    /// `ok`, or `degraded` when links are down, pairs unreachable, a critical alarm is
    /// active or no snapshot came yet.
    pub status: &'static str,
    /// Seconds since start.
    pub uptime_s: f64,
    /// Source name.
    pub source: Option<String>,
    /// Latest snapshot sequence number.
    pub latest_seq: Option<u64>,
    /// Stream clients connected.
    pub stream_clients: usize,
    /// Fabric health.
    #[serde(flatten)]
    pub fabric: super::health::HealthSummary,
    /// Daemon counters.
    pub daemon: DaemonCounters,
}

/// The daemon's counters in the health report.
#[derive(Debug, Serialize)]
pub struct DaemonCounters {
    /// See `hub::Counters`.
    pub connections: u64,
    /// Protocol errors.
    pub bad_connections: u64,
    /// Malformed or oversized requests.
    pub bad_requests: u64,
    /// Token refusals.
    pub auth_failures: u64,
    /// Stream clients dropped for lag.
    pub stream_dropped: u64,
    /// Stream requests refused for `--max-streams`.
    pub stream_refused: u64,
    /// Source errors.
    pub source_errors: u64,
}

async fn health(State(st): State<AppState>) -> Response {
    let latest = st.hub.latest();
    let fabric = st.health.summary();
    let k = &st.hub.counters;
    // docs/daemon.md "Health": any critical alarm (a PFC storm too), or any of these.
    let degraded = fabric
        .alarms
        .iter()
        .any(|a| a.severity == super::alarms::Severity::Critical)
        || !fabric.links_down.is_empty()
        || !fabric.switches_down.is_empty()
        || fabric.unreachable_pairs > 0
        || fabric.route_drift.as_ref().is_some_and(|d| d.total() > 0)
        || fabric
            .topology
            .as_ref()
            .is_some_and(|t| t.mismatches.values().any(|&v| v > 0))
        || latest.is_none();
    Json(HealthReport {
        status: if degraded { "degraded" } else { "ok" },
        uptime_s: st.started.elapsed().as_secs_f64(),
        source: latest.as_ref().map(|l| l.snapshot.source.name.clone()),
        latest_seq: latest.as_ref().map(|l| l.snapshot.seq),
        stream_clients: st.hub.stream_clients(),
        fabric,
        daemon: DaemonCounters {
            connections: k.connections.get(),
            bad_connections: k.bad_connections.get(),
            bad_requests: k.bad_requests.get(),
            auth_failures: k.auth_failures.get(),
            stream_dropped: k.stream_dropped.get(),
            stream_refused: k.stream_refused.get(),
            source_errors: k.source_errors.get(),
        },
    })
    .into_response()
}

/// Query of `/metrics`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsQuery {
    /// Node names whose ports' series to keep (comma-separated).
    switch: Option<String>,
    /// Family name prefixes to keep (comma-separated).
    family: Option<String>,
}

async fn metrics(
    State(st): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<MetricsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("query: {e}")),
    };
    let sel = match super::metrics::Selection::parse(
        st.hub.info(),
        q.switch.as_deref(),
        q.family.as_deref(),
    ) {
        Ok(s) => s,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    let openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    let gzip = accepts_gzip(&headers);
    let exp = st.exposition.clone();
    // Encoding a large fabric takes a while: keep it off the async workers.
    let body = tokio::task::spawn_blocking(move || {
        let reg = super::metrics::registry(exp, sel);
        let om = super::metrics::encode_openmetrics(&reg);
        let text = if openmetrics {
            om
        } else {
            super::metrics::to_classic(&om)
        };
        if gzip {
            gzip_bytes(text.as_bytes())
        } else {
            text.into_bytes()
        }
    })
    .await
    .expect("metrics encoding does not panic");
    let ct = if openmetrics {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    let mut r = ([(header::CONTENT_TYPE, ct)], Body::from(body)).into_response();
    let h = r.headers_mut();
    h.insert(
        header::VARY,
        header::HeaderValue::from_static("accept-encoding"),
    );
    if gzip {
        h.insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_static("gzip"),
        );
    }
    r
}

/// Whether `Accept-Encoding` lists gzip (or `*`) with a non-zero quality (RFC 9110 12.5.3;
/// Prometheus sends `gzip`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && q > 0.0
        })
}

/// `data` gzip-compressed (fast level: /metrics of a large fabric is tens of MB).
fn gzip_bytes(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 8),
        flate2::Compression::fast(),
    );
    enc.write_all(data).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}

#[cfg(test)]
mod gzip_tests {
    use super::*;

    #[test]
    fn gzip_is_used_only_when_asked_for_with_a_non_zero_quality() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
            accepts_gzip(&m)
        };
        assert!(h("gzip"));
        assert!(h("deflate, GZIP;q=0.5"));
        assert!(h("*"));
        assert!(!h("gzip;q=0"));
        assert!(!h("identity"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let text = "fabric_port_up{switch=\"a\",port=\"0\"} 1\n".repeat(100);
        let z = gzip_bytes(text.as_bytes());
        assert!(z.len() < text.len() / 5);
        let mut back = String::new();
        flate2::read::GzDecoder::new(&z[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, text);
    }
}

async fn control(st: &AppState, headers: &HeaderMap, what: &str, c: Control) -> Response {
    if let Some(r) = refuse(st, headers, what) {
        return r;
    }
    match st.control.send(c).await {
        Ok(outcome) => {
            log::info(&format!("{what}: {outcome}"));
            Json(serde_json::json!({ "ok": outcome })).into_response()
        }
        Err(e) => error(StatusCode::CONFLICT, &e),
    }
}

/// `GET /api/v1/drift`: a fresh comparison of the kernel's routes with the tables
/// (read-only, no token); 404 for a source without kernel routes.
async fn drift(State(st): State<AppState>) -> Response {
    report(&st, Control::Drift).await
}

/// `GET /api/v1/topology/check`: a fresh LLDP check of the cabling against the spec
/// (read-only, no token); 404 for a source without cables.
async fn topology_check(State(st): State<AppState>) -> Response {
    report(&st, Control::CheckTopology).await
}

/// A read-only check the collector runs and answers with JSON.
async fn report(st: &AppState, c: Control) -> Response {
    match st.control.send(c).await {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => error(StatusCode::NOT_FOUND, &e),
    }
}

/// `POST /api/v1/links/{link}/{fail|restore}`.
async fn link_action(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path((link, action)): Path<(String, String)>,
) -> Response {
    let what = format!("POST /api/v1/links/{link}/{action}");
    let make: fn(topo::LinkId) -> Control = match action.as_str() {
        "fail" => Control::FailLink,
        "restore" => Control::RestoreLink,
        _ => return not_found().await,
    };
    match st.parse_link(&link) {
        Ok(l) => control(&st, &headers, &what, make(l)).await,
        Err(e) => refuse(&st, &headers, &what).unwrap_or_else(|| error(StatusCode::NOT_FOUND, &e)),
    }
}

async fn reroute(State(st): State<AppState>, headers: HeaderMap) -> Response {
    control(&st, &headers, "POST /api/v1/reroute", Control::Reroute).await
}

/// `POST /api/v1/drift/repair`: `{"repair": DriftRepair, "after": Drift}`.
async fn drift_repair(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let what = "POST /api/v1/drift/repair";
    if let Some(r) = refuse(&st, &headers, what) {
        return r;
    }
    match st.control.send(Control::RepairDrift).await {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => error(StatusCode::CONFLICT, &e),
    }
}

/// Body of `POST /api/v1/recording`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordBody {
    /// File name inside `--record-dir` (created; an existing file is refused).
    path: String,
}

async fn record_start(
    State(st): State<AppState>,
    headers: HeaderMap,
    body: Result<Json<RecordBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let what = "POST /api/v1/recording";
    if let Some(r) = refuse(&st, &headers, what) {
        return r;
    }
    let b = match body {
        Ok(Json(b)) => b,
        Err(e) => return rejection(e),
    };
    let Some(dir) = st.record_dir.clone() else {
        return error(
            StatusCode::FORBIDDEN,
            "recording over the API is disabled: start the daemon with --record-dir DIR",
        );
    };
    let refused = |r: Refusal| match r {
        Refusal::BadName(m) => error(StatusCode::BAD_REQUEST, &m),
        Refusal::Full(m) => error(StatusCode::INSUFFICIENT_STORAGE, &m),
        Refusal::Create(m) => error(StatusCode::CONFLICT, &m),
    };
    let path = match dir.resolve(&b.path) {
        Ok(p) => p,
        Err(r) => return refused(r),
    };
    let file = match dir.create(&path) {
        Ok(f) => f,
        Err(r) => return refused(r),
    };
    let start = Control::RecordStart {
        path: path.clone(),
        file,
        max_bytes: dir.max_bytes,
    };
    let r = control(&st, &headers, what, start).await;
    if !r.status().is_success() {
        // Already recording: the file just created stays empty; do not leave it behind.
        let _ = std::fs::remove_file(&path);
    }
    r
}

/// A JSON body axum refused (400 malformed, 415 wrong content type, 422 wrong shape), in
/// the daemon's JSON error shape.
fn rejection(e: axum::extract::rejection::JsonRejection) -> Response {
    error(e.status(), &e.body_text())
}

async fn record_stop(State(st): State<AppState>, headers: HeaderMap) -> Response {
    control(
        &st,
        &headers,
        "DELETE /api/v1/recording",
        Control::RecordStop,
    )
    .await
}

impl AppState {
    /// A link named by its id (`17`) or by one end (`SWITCH:PORT`).
    fn parse_link(&self, s: &str) -> Result<topo::LinkId, String> {
        let info = self.hub.info();
        let links = info
            .ports
            .iter()
            .filter_map(|p| p.link)
            .map(|l| l.0 + 1)
            .max()
            .unwrap_or(0);
        if let Ok(n) = s.parse::<u32>() {
            return if n < links {
                Ok(topo::LinkId(n))
            } else {
                Err(format!(
                    "link {n}: the fabric has links 0 to {}",
                    links.saturating_sub(1)
                ))
            };
        }
        let (node, port) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("link {s:?}: expected a link id or SWITCH:PORT"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("link {s:?}: port {port:?} is not a number"))?;
        let n = info
            .nodes
            .iter()
            .position(|x| x.name == node)
            .ok_or_else(|| format!("link {s:?}: no node named {node:?}"))?;
        info.ports
            .iter()
            .find(|p| p.node as usize == n && p.port == port)
            .and_then(|p| p.link)
            .ok_or_else(|| format!("link {s:?}: {node} has no cabled port {port}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abcdef", b"abcdef"));
        assert!(!constant_time_eq(b"abcdef", b"abcdeg"));
        assert!(!constant_time_eq(b"abc", b"abcdef"));
        assert!(!constant_time_eq(b"", b"abcdef"));
        assert!(!constant_time_eq(b"abcdefg", b"abcdef"));
    }
}
