//! The accept loop in the mini-redis shape: `select!` between accepting and the shutdown
//! future, one semaphore permit per connection (at most `max_connections` served at
//! once; the rest wait in the kernel's backlog), and a broadcast shutdown that every
//! connection task holds. Each connection is served by hyper's HTTP/1.1 server with a
//! header-read timeout and a bounded head size; a task may also be killed on purpose
//! (a stream client that fell behind, see [`ConnKill`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, broadcast, mpsc};

use super::hub::Hub;
use super::log;

/// Lets a handler reach its own connection: close it (dropping the socket) — used to
/// drop a slow stream client whose socket no longer drains, which a graceful end cannot
/// reach — and bound its kernel send buffer.
#[derive(Clone, Debug)]
pub struct ConnKill {
    notify: Arc<Notify>,
    fd: std::os::fd::RawFd,
}

impl ConnKill {
    /// Closes the connection now.
    pub fn kill(&self) {
        self.notify.notify_one();
    }

    /// Fixes the socket's send buffer at `bytes` (the kernel doubles it for overhead),
    /// which also stops the kernel from growing it to megabytes for a client that does
    /// not read. Valid while the handler runs (the connection owns the socket).
    pub fn bound_send_buffer(&self, bytes: usize) -> std::io::Result<()> {
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fd` is the open socket of the connection that is serving the calling
        // handler; setsockopt reads `size_of::<c_int>()` bytes from `&v`.
        let rc = unsafe {
            libc::setsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// How long connections get to finish after shutdown before they are dropped.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Limits one connection obeys.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Time to receive the request head.
    pub header_timeout: Duration,
    /// Largest request head.
    pub max_header_bytes: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets open connections
/// finish (ongoing streams end at once) for at most [`DRAIN`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    hub: Arc<Hub>,
    max_connections: usize,
    limits: ConnLimits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(max_connections));
    let (notify_shutdown, _) = broadcast::channel::<()>(1);
    // Every connection task holds a clone; when all are dropped the receiver wakes.
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = permits.clone().acquire_owned() => p.expect("semaphore never closed"),
        };
        let (socket, peer) = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    log::warn(&format!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let kill = ConnKill {
            notify: Arc::new(Notify::new()),
            fd: std::os::fd::AsRawFd::as_raw_fd(&socket),
        };
        // Requests answered on this connection: a header timeout after one is a
        // keep-alive connection left idle (a Prometheus between scrapes), not an error.
        let served = Arc::new(AtomicU64::new(0));
        let svc = {
            let inner =
                TowerToHyperService::new(router.clone().layer(axum::Extension(kill.clone())));
            let served = served.clone();
            hyper::service::service_fn(move |req| {
                served.fetch_add(1, Ordering::Relaxed);
                inner.call(req)
            })
        };
        let mut shutdown_rx = notify_shutdown.subscribe();
        let done = done_tx.clone();
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.counters.connections.inc();
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(limits.max_header_bytes.max(8192));
            let conn = builder.serve_connection(TokioIo::new(socket), svc);
            tokio::pin!(conn);
            let mut draining = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            // A client hanging up mid-answer is its business; a request
                            // hyper could not parse, too large or too slow is counted.
                            let idle = e.is_timeout() && served.load(Ordering::Relaxed) > 0;
                            if !idle
                                && (e.is_parse() || e.is_parse_too_large() || e.is_timeout())
                            {
                                hub.counters.bad_connections.inc();
                                log::warn(&format!("connection from {peer}: {e}"));
                            }
                        }
                        break;
                    }
                    _ = shutdown_rx.recv(), if !draining => {
                        conn.as_mut().graceful_shutdown();
                        draining = true;
                    }
                    _ = kill.notify.notified() => break,
                }
            }
            drop(permit);
            drop(done);
        });
    }
    // Stop accepting, tell every connection (and every stream) to finish.
    drop(listener);
    hub.begin_shutdown();
    let _ = notify_shutdown.send(());
    drop(done_tx);
    if tokio::time::timeout(DRAIN, done_rx.recv()).await.is_err() {
        log::warn("connections still open after the drain time; dropping them");
    }
}
