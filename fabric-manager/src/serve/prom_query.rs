//! A small blocking client of Prometheus's HTTP query API (`GET /api/v1/query`), for
//! the observe-only source: plain `http://` (put TLS in front with a local proxy),
//! credentials from a file (bearer token or basic user:password, never the command
//! line), a connect and read timeout, and a bounded response size. Every failure — down,
//! slow, an HTTP error, a body that is not Prometheus's JSON — is an `Err(String)` that
//! says which; the caller reports it and goes on.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// Largest response body read (a k=64 fabric's counters are a few MB).
pub const MAX_BODY: usize = 64 << 20;

use fabric_api::prom::PromUrl;
pub use fabric_api::prom::{Series, parse_vector};

/// How to authenticate to Prometheus.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `Authorization: Bearer TOKEN`.
    Bearer(String),
    /// `Authorization: Basic base64(USER:PASSWORD)`.
    Basic(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        f.write_str(match self {
            Credentials::Bearer(_) => "Bearer(…)",
            Credentials::Basic(_) => "Basic(…)",
        })
    }
}

impl Credentials {
    /// Parses a credentials file: one line, `bearer TOKEN` or `basic USER:PASSWORD`.
    pub fn parse(text: &str) -> Result<Credentials, String> {
        let line = text.trim();
        let (kind, rest) = line
            .split_once(char::is_whitespace)
            .ok_or("expected `bearer TOKEN` or `basic USER:PASSWORD` on one line")?;
        let rest = rest.trim();
        if rest.is_empty() || rest.contains(['\n', '\r']) {
            return Err("expected one line with a non-empty secret".into());
        }
        match kind.to_ascii_lowercase().as_str() {
            "bearer" => Ok(Credentials::Bearer(rest.to_string())),
            "basic" if rest.contains(':') => Ok(Credentials::Basic(rest.to_string())),
            "basic" => Err("basic credentials are USER:PASSWORD".into()),
            k => Err(format!("{k:?}: expected bearer or basic")),
        }
    }

    /// Reads and parses `path`.
    pub fn from_file(path: &Path) -> Result<Credentials, String> {
        let t = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Self::parse(&t).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn header(&self) -> String {
        match self {
            Credentials::Bearer(t) => format!("Bearer {t}"),
            Credentials::Basic(up) => format!("Basic {}", base64(up.as_bytes())),
        }
    }
}

/// RFC 4648 base64 with padding.
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// A Prometheus server.
#[derive(Debug, Clone)]
pub struct Prometheus {
    url: PromUrl,
    creds: Option<Credentials>,
    timeout: Duration,
}

impl Prometheus {
    /// `http://HOST:PORT[/prefix]`.
    pub fn new(
        url: &str,
        creds: Option<Credentials>,
        timeout: Duration,
    ) -> Result<Prometheus, String> {
        let url = PromUrl::parse(url).map_err(|e| format!("--prometheus {e}"))?;
        Ok(Prometheus {
            url,
            creds,
            timeout,
        })
    }

    /// The server's `host:port`.
    pub fn addr(&self) -> &str {
        &self.url.addr
    }

    /// An instant query: the vector's series.
    pub fn query(&self, expr: &str) -> Result<Vec<Series>, String> {
        let body = self.get(&self.url.query_path(expr))?;
        parse_vector(&body)
    }

    fn get(&self, path: &str) -> Result<Vec<u8>, String> {
        let who = format!("Prometheus {}", self.url.addr);
        let sa = self
            .url
            .addr
            .to_socket_addrs()
            .map_err(|e| format!("{who}: resolving: {e}"))?
            .next()
            .ok_or_else(|| format!("{who}: no address"))?;
        let mut s = TcpStream::connect_timeout(&sa, self.timeout)
            .map_err(|e| format!("{who}: connecting: {e}"))?;
        s.set_read_timeout(Some(self.timeout))
            .and_then(|_| s.set_write_timeout(Some(self.timeout)))
            .map_err(|e| format!("{who}: {e}"))?;
        let auth = self
            .creds
            .as_ref()
            .map(|c| format!("Authorization: {}\r\n", c.header()))
            .unwrap_or_default();
        write!(
            s,
            "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\n{auth}\r\n",
            self.url.addr
        )
        .map_err(|e| format!("{who}: sending: {e}"))?;
        let mut buf = Vec::new();
        s.take(MAX_BODY as u64 + 64 * 1024)
            .read_to_end(&mut buf)
            .map_err(|e| format!("{who}: reading (timeout {:?}): {e}", self.timeout))?;
        if buf.len() > MAX_BODY {
            return Err(format!("{who}: response over {MAX_BODY} bytes"));
        }
        let split = buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| format!("{who}: not an HTTP response"))?;
        let head = String::from_utf8_lossy(&buf[..split]);
        let status = head.lines().next().unwrap_or("");
        if status.split(' ').nth(1) != Some("200") {
            return Err(format!("{who}: {status}"));
        }
        Ok(buf[split + 4..].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_parsed_and_never_printed() {
        let b = Credentials::parse("bearer s3cret\n").unwrap();
        assert_eq!(b.header(), "Bearer s3cret");
        assert_eq!(format!("{b:?}"), "Bearer(…)");
        // RFC 7617's example.
        let c = Credentials::parse("basic Aladdin:open sesame").unwrap();
        assert_eq!(c.header(), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert!(Credentials::parse("basic nocolon").is_err());
        assert!(Credentials::parse("token x").is_err());
        assert!(Credentials::parse("").is_err());
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
    }

    #[test]
    fn vectors_and_garbage() {
        let ok = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"node_network_carrier","device":"p2","switch":"s"},"value":[1.5,"1"]}]}}"#;
        let v = parse_vector(ok).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0["device"], "p2");
        assert_eq!(v[0].1, 1.0);
        assert!(parse_vector(b"<html>").unwrap_err().contains("not JSON"));
        assert!(
            parse_vector(br#"{"status":"error","error":"bad query"}"#)
                .unwrap_err()
                .contains("bad query")
        );
        assert!(
            parse_vector(br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#)
                .is_err()
        );
        assert!(Prometheus::new("https://x", None, Duration::from_secs(1)).is_err());
        let p = Prometheus::new("http://h:9/p/", None, Duration::from_secs(1)).unwrap();
        assert_eq!((p.addr(), p.url.prefix.as_str()), ("h:9", "/p"));
    }

    #[test]
    fn a_server_that_is_down_is_an_error_not_a_panic() {
        // A port nobody listens on (bound then released).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = Prometheus::new(
            &format!("http://127.0.0.1:{port}"),
            None,
            Duration::from_millis(500),
        )
        .unwrap();
        assert!(p.query("up").unwrap_err().contains("connecting"));
    }
}
