//! A minimal blocking HTTP/1.1 GET over `std::net` — enough for the daemon's NDJSON
//! stream and Prometheus' query API (status line, headers, then a body that is chunked,
//! sized by `Content-Length`, or read to the end). No TLS: both are plain HTTP on a
//! cluster network. Limits: headers ≤ 64 KiB, chunk sizes checked.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Longest header block accepted.
const MAX_HEADERS: usize = 64 << 10;

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
    let status = line.split_whitespace().nth(1).unwrap_or("").to_string();
    if status != "200" {
        return Err(io::Error::other(format!(
            "GET {path}: HTTP {}",
            line.trim()
        )));
    }
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
    Ok(Body { r, mode })
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
        assert_eq!(e, "GET /x: HTTP HTTP/1.1 404 Not Found");
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
