//! `GET /api/v1/telemetry/stream`: one frame per line (NDJSON of `fabric_api::Frame`,
//! the fabric frame first) or server-sent events (`?format=sse` or
//! `Accept: text/event-stream`; each event's `id` is the snapshot sequence number, so a
//! browser's `Last-Event-ID` resumes). `?from=SEQ` first replays the kept frames from
//! snapshot SEQ on (410 when they were evicted, 400 when SEQ is in the future).
//!
//! Frames are shared `Bytes` out of the hub's ring: a client costs no copy and no
//! buffer of its own. One that falls behind is dropped by the hub (see `hub.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use super::http::{AppState, error};
use super::hub::{Hub, ResumeError, Subscription};
use super::server::ConnKill;

/// Query of the stream endpoint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamQuery {
    /// Resume from this snapshot sequence number.
    from: Option<u64>,
    /// `ndjson` (default) or `sse`.
    format: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    Ndjson,
    Sse,
}

fn format_of(q: &StreamQuery, headers: &HeaderMap) -> Result<Format, String> {
    match q.format.as_deref() {
        Some("ndjson") => Ok(Format::Ndjson),
        Some("sse") => Ok(Format::Sse),
        Some(f) => Err(format!("format={f}: expected ndjson or sse")),
        None => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
            Ok(match accept {
                Some(a) if a.contains("text/event-stream") => Format::Sse,
                _ => Format::Ndjson,
            })
        }
    }
}

/// `Last-Event-ID` (SSE reconnect) as a resume point: the snapshot after the last one seen.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, String> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let s = v
        .to_str()
        .map_err(|_| "Last-Event-ID: not ASCII".to_string())?;
    let n: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("Last-Event-ID {s:?}: expected a snapshot sequence number"))?;
    Ok(Some(n.saturating_add(1)))
}

/// The handler.
pub async fn stream(
    State(st): State<AppState>,
    Extension(kill): Extension<ConnKill>,
    headers: HeaderMap,
    query: Result<Query<StreamQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let hub = st.hub.clone();
    let q = match query {
        Ok(Query(q)) => q,
        Err(e) => {
            hub.counters.bad_requests.inc();
            return error(StatusCode::BAD_REQUEST, &format!("query: {e}"));
        }
    };
    let parsed = format_of(&q, &headers).and_then(|f| Ok((f, last_event_id(&headers)?)));
    let (fmt, last_id) = match parsed {
        Ok(x) => x,
        Err(msg) => {
            hub.counters.bad_requests.inc();
            return error(StatusCode::BAD_REQUEST, &msg);
        }
    };
    let Ok(slot) = st.stream_slots.clone().try_acquire_owned() else {
        hub.counters.stream_refused.inc();
        return too_many_streams();
    };
    let from = q.from.or(last_id);
    if let Err(e) = kill.bound_send_buffer(st.stream_sndbuf) {
        super::log::warn(&format!("stream: cannot bound the send buffer: {e}"));
    }
    let sub = match hub.subscribe(from, kill) {
        Ok(s) => s,
        Err(ResumeError::Gone { oldest }) => {
            return error(
                StatusCode::GONE,
                &format!(
                    "from={}: no longer kept; the oldest snapshot that can be resumed is {oldest}",
                    from.unwrap_or(0)
                ),
            );
        }
        Err(ResumeError::Future { next }) => {
            hub.counters.bad_requests.inc();
            return error(
                StatusCode::BAD_REQUEST,
                &format!(
                    "from={}: not reached yet; the next snapshot is {next}",
                    from.unwrap_or(0)
                ),
            );
        }
    };
    let content_type = match fmt {
        Format::Ndjson => "application/x-ndjson",
        Format::Sse => "text/event-stream",
    };
    let body = Body::from_stream(frames(hub, sub, fmt, slot));
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// 503 for a stream beyond `--max-streams`, closing the connection.
fn too_many_streams() -> Response {
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many stream clients: this daemon serves at most --max-streams at once; /metrics, /api/v1/health and /api/v1/telemetry still answer; retry later",
    );
    let h = r.headers_mut();
    h.insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

/// State of one client's stream.
struct Pump {
    hub: Arc<Hub>,
    sub: Subscription,
    backlog: std::vec::IntoIter<(Option<u64>, Bytes)>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    fmt: Format,
    /// This client's place under `--max-streams`, given back when the stream ends.
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Pump {
    fn drop(&mut self) {
        // Tell the hub this client is gone (it forgets it at the next publish).
        self.sub.delivered.store(u64::MAX, Ordering::Relaxed);
    }
}

/// An SSE event carrying one frame (the line's `\n` ends the `data:` field).
fn sse(seq: Option<u64>, line: &Bytes) -> Bytes {
    let mut v = Vec::with_capacity(line.len() + 32);
    if let Some(seq) = seq {
        v.extend_from_slice(format!("id: {seq}\n").as_bytes());
    }
    v.extend_from_slice(b"data: ");
    v.extend_from_slice(line);
    v.push(b'\n');
    Bytes::from(v)
}

fn frames(
    hub: Arc<Hub>,
    mut sub: Subscription,
    fmt: Format,
    slot: tokio::sync::OwnedSemaphorePermit,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    let backlog = std::mem::take(&mut sub.backlog).into_iter();
    let shutdown = hub.shutdown_signal();
    let pump = Pump {
        hub,
        sub,
        backlog,
        shutdown,
        fmt,
        _slot: slot,
    };
    futures::stream::unfold(pump, |mut p| async move {
        if let Some((seq, b)) = p.backlog.next() {
            let b = if p.fmt == Format::Sse {
                sse(seq, &b)
            } else {
                b
            };
            return Some((Ok(b), p));
        }
        if *p.shutdown.borrow() {
            return None;
        }
        let line = tokio::select! {
            r = p.sub.live.recv() => r,
            _ = p.shutdown.changed() => return None,
        };
        match line {
            Ok(l) => {
                p.sub.delivered.store(l.index + 1, Ordering::Relaxed);
                let b = match p.fmt {
                    Format::Ndjson => l.bytes,
                    Format::Sse => sse(Some(l.seq), &l.bytes),
                };
                Some((Ok(b), p))
            }
            Err(RecvError::Lagged(n)) => {
                p.hub.counters.stream_dropped.inc();
                super::log::warn(&format!("stream client dropped: missed {n} frames"));
                None
            }
            Err(RecvError::Closed) => None,
        }
    })
}
