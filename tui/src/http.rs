//! A minimal blocking HTTP/1.1 GET over `std::net` — enough for the daemon's NDJSON
//! stream and Prometheus' query API (status line, headers, then a body that is chunked,
//! sized by `Content-Length`, or read to the end). No TLS: both are plain HTTP on a
//! cluster network. Limits: headers ≤ 64 KiB, chunk sizes checked.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Longest header block accepted.
const MAX_HEADERS: usize = 64 << 10;

/// Most bytes of an error response's body read for its explanation.
const MAX_ERROR_BODY: u64 = 4096;

/// A response other than 200 OK, with the server's explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The request's path.
    pub path: String,
    /// Status code (400, 503, …).
    pub status: u16,
    /// Reason phrase (`Bad Request`).
    pub reason: String,
    /// The body's `error` field when it is the daemon's JSON error, else its text (first
    /// line, at most 200 characters); empty when there is none.
    pub message: String,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GET {}: {} {}", self.path, self.status, self.reason)?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for HttpError {}

impl HttpError {
    /// The `HttpError` inside an I/O error from [`get`], if it is one.
    pub fn of(e: &io::Error) -> Option<&HttpError> {
        e.get_ref().and_then(|x| x.downcast_ref::<HttpError>())
    }
}

/// What an error body says: the `error` field of a JSON object, else its first line.
fn explanation(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct E {
        error: String,
    }
    let text = match serde_json::from_slice::<E>(body) {
        Ok(e) => e.error,
        Err(_) => String::from_utf8_lossy(body)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string(),
    };
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// An open response body.
#[derive(Debug)]
pub struct Body {
    r: BufReader<TcpStream>,
    mode: Mode,
}

#[derive(Debug)]
enum Mode {
    Chunked { left: u64, done: bool },
    Length(u64),
    Close,
}

/// GET `path` from `host:port`; `Err` unless the status is 200. `timeout` bounds the
/// connect and each read.
pub fn get(addr: &str, path: &str, timeout: Duration) -> io::Result<Body> {
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address")))?;
    let mut s = TcpStream::connect_timeout(&sa, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    // One write: `write!` on the bare socket sends each formatted piece as its own segment
    // (with no delay set), and a server that answers after its first read sees half a request.
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: fabric-tui\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("GET {path}: sending the request: {e}")))?;
    let mut r = BufReader::with_capacity(1 << 16, s);
    let mut line = String::new();
    let mut total = 0;
    let mut read_line = |r: &mut BufReader<TcpStream>, line: &mut String| -> io::Result<()> {
        line.clear();
        let n = r
            .by_ref()
            .take((MAX_HEADERS - total.min(MAX_HEADERS)) as u64 + 1)
            .read_line(line)?;
        total += n;
        if n == 0 || total > MAX_HEADERS {
            return Err(bad("response headers missing or over 64 KiB"));
        }
        Ok(())
    };
    read_line(&mut r, &mut line)?;
    let mut words = line.trim().splitn(3, ' ');
    let (version, status) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let reason = words.next().unwrap_or("").to_string();
    if !version.starts_with("HTTP/") {
        return Err(bad(&format!(
            "GET {path}: {addr} does not answer in HTTP (is it `fabric serve`?)"
        )));
    }
    let status: u16 = status
        .parse()
        .map_err(|_| bad(&format!("GET {path}: bad status line {:?}", line.trim())))?;
    let mut mode = Mode::Close;
    loop {
        read_line(&mut r, &mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
            mode = Mode::Chunked {
                left: 0,
                done: false,
            };
        } else if k == "content-length" && !matches!(mode, Mode::Chunked { .. }) {
            mode = Mode::Length(v.parse().map_err(|_| bad("bad Content-Length"))?);
        }
    }
    let mut body = Body { r, mode };
    if status != 200 {
        let mut text = Vec::new();
        // the explanation is best effort: a body cut short still names the status
        let _ = body.by_ref().take(MAX_ERROR_BODY).read_to_end(&mut text);
        return Err(io::Error::other(HttpError {
            path: path.to_string(),
            status,
            reason,
            message: explanation(&text),
        }));
    }
    Ok(body)
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Body {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match &mut self.mode {
            Mode::Close => self.r.fill_buf(),
            Mode::Length(0) => Ok(&[]),
            Mode::Length(n) => {
                let n = *n;
                let b = self.r.fill_buf()?;
                Ok(&b[..b.len().min(n as usize)])
            }
            Mode::Chunked { done: true, .. } => Ok(&[]),
            Mode::Chunked { left, done } => {
                if *left == 0 {
                    let mut line = String::new();
                    if self.r.by_ref().take(1024).read_line(&mut line)? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "stream ended inside a chunk header",
                        ));
                    }
                    if line.trim().is_empty() {
                        // CRLF after the previous chunk's data
                        line.clear();
                        if self.r.by_ref().take(1024).read_line(&mut line)? == 0 {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "stream ended between chunks",
                            ));
                        }
                    }
                    let hex = line.trim().split(';').next().unwrap_or("");
                    *left = u64::from_str_radix(hex, 16).map_err(|_| bad("bad chunk size"))?;
                    if *left == 0 {
                        *done = true;
                        return Ok(&[]);
                    }
                }
                let n = *left;
                let b = self.r.fill_buf()?;
                Ok(&b[..b.len().min(n as usize)])
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.r.consume(n);
        match &mut self.mode {
            Mode::Length(left) | Mode::Chunked { left, .. } => *left -= n as u64,
            Mode::Close => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn serve(resp: &'static [u8]) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            // Read the whole request, as a server does, then answer and close.
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.ends_with(b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            s.write_all(resp).unwrap();
        });
        addr
    }

    #[test]
    fn chunked_length_and_errors() {
        let a = serve(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
        let mut s = String::new();
        get(&a, "/", Duration::from_secs(5))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "hello world");
        let a = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef");
        let mut s = String::new();
        get(&a, "/", Duration::from_secs(5))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "abc");
        let a = serve(b"HTTP/1.1 404 Not Found\r\n\r\n");
        let e = get(&a, "/x", Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "GET /x: 404 Not Found");
        // the daemon's JSON error body is the explanation (it used to be dropped)
        let a = serve(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 61\r\n\r\n{\"error\":\"from=120: not reached yet; the next snapshot is 3\"}     ");
        let e = get(&a, "/s", Duration::from_secs(5)).unwrap_err();
        let h = HttpError::of(&e).expect("an HTTP error");
        assert_eq!((h.status, h.reason.as_str()), (400, "Bad Request"));
        assert_eq!(
            e.to_string(),
            "GET /s: 400 Bad Request: from=120: not reached yet; the next snapshot is 3"
        );
        let a = serve(b"HTTP/1.1 503 Service Unavailable\r\n\r\ntoo many stream clients\nmore\n");
        let e = get(&a, "/s", Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "GET /s: 503 Service Unavailable: too many stream clients"
        );
        let a = serve(b"SSH-2.0-OpenSSH_9.2\r\n");
        let e = get(&a, "/s", Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not answer in HTTP"), "{e}");
        let a = serve(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
        let mut s = String::new();
        assert!(
            get(&a, "/", Duration::from_secs(5))
                .unwrap()
                .read_to_string(&mut s)
                .is_err()
        );
    }
}
