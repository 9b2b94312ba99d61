//! A real Prometheus (Debian's `prometheus`) scraping targets on loopback every second,
//! with its configuration, database and log in a directory of the test's.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::KillOnDrop;

/// A running Prometheus, killed when dropped.
#[derive(Debug)]
pub struct Prometheus {
    _child: KillOnDrop,
    addr: String,
    log: PathBuf,
}

impl Prometheus {
    /// Starts Prometheus on a loopback port the kernel picks (`127.0.0.1:0`: a port
    /// chosen free beforehand could be taken by another test before Prometheus binds
    /// it), scraping `targets` (`host:port`, job `fabric`) every second, and waits up to
    /// [`crate::tmux::WAIT`] for the address its log says it listens on; its files go
    /// to `dir` (`prometheus.yml`, `data/`, `prometheus.log`).
    pub fn start(dir: &Path, targets: &[&str]) -> Prometheus {
        let cfg = dir.join("prometheus.yml");
        let list = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(
            &cfg,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: fabric\n    static_configs:\n      - targets: [{list}]\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.display()));
        let log = dir.join("prometheus.log");
        let out = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg("--web.listen-address=127.0.0.1:0")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("prometheus (scripts/install-deps.sh): {e}"));
        let mut child = KillOnDrop(child);
        let t = Instant::now();
        let addr = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(addr) = listening_on(&text) {
                break addr;
            }
            let exited = child.0.try_wait().ok().flatten();
            assert!(
                exited.is_none() && t.elapsed() < crate::tmux::WAIT,
                "Prometheus gave no listening address ({}); log:\n{text}",
                exited.map_or(format!("after {:?}", crate::tmux::WAIT), |s| s.to_string())
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        Prometheus {
            _child: child,
            addr,
            log,
        }
    }

    /// Its `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits up to `limit` until `/-/ready` answers 200; fails the test showing the log.
    pub fn wait_ready(&self, limit: Duration) {
        let t = Instant::now();
        while !self.ready() {
            assert!(
                t.elapsed() < limit,
                "Prometheus on {} not ready after {limit:?}; log:\n{}",
                self.addr,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn ready(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(&self.addr) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let req = format!(
            "GET /-/ready HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let mut answer = Vec::new();
        s.write_all(req.as_bytes()).is_ok()
            && s.read_to_end(&mut answer).is_ok()
            && answer.starts_with(b"HTTP/1.1 200")
    }
}

/// The address in Prometheus's `msg="Listening on" address=HOST:PORT` log line (the
/// port it bound, where `--web.listen-address` said `:0`).
fn listening_on(log: &str) -> Option<String> {
    let line = log.lines().find(|l| l.contains("msg=\"Listening on\""))?;
    let addr = line.split("address=").nth(1)?.split_whitespace().next()?;
    (!addr.ends_with(":0")).then(|| addr.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_listening_address_is_read_from_the_log() {
        let log = "ts=2026-11-27T11:18:13.686Z caller=web.go:503 level=info component=web msg=\"Start listening for connections\" address=127.0.0.1:0\n\
                   ts=2026-11-27T11:18:13.701Z caller=tls_config.go:232 level=info component=web msg=\"Listening on\" address=127.0.0.1:34121\n";
        assert_eq!(super::listening_on(log).as_deref(), Some("127.0.0.1:34121"));
        assert_eq!(super::listening_on(log.lines().next().unwrap()), None);
    }
}
