//! Helpers for tests that run the real `fabric` binary: a command run to its end
//! ([`fabric`]), and `fabric serve` on a free loopback port talked to in raw HTTP/1.1
//! (raw, so tests can also send what no client would).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for a condition before it fails: generous, since tests run beside
/// others on a loaded 2-core machine (a daemon, or the kernel, may not run for seconds),
/// and only a failing test waits this long. What a test claims about speed, it checks on
/// figures the daemon measures itself (say `repaired_ns`), not on how long it waited.
pub const WAIT: Duration = Duration::from_secs(60);

/// `fabric ARGS…` run to its end from the workspace root.
pub fn fabric(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .unwrap()
}

/// A running daemon, stopped with SIGTERM when dropped.
pub struct Daemon {
    pub child: Child,
    pub addr: String,
    pub stderr_path: PathBuf,
    /// The rest of the daemon's stdout (after the `listening on` line).
    pub stdout: BufReader<ChildStdout>,
}

/// The token of [`token_file`] and [`Daemon::start_with_token`].
pub const TOKEN: &str = "test-token-0123456789abcdef";

/// A file holding [`TOKEN`], in a temporary directory of its own.
pub fn token_file(name: &str) -> PathBuf {
    let file = temp_dir(&format!("{name}-token")).join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    file
}

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fabric-serve-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Daemon {
    /// Starts `fabric serve --listen 127.0.0.1:0 ARGS…` and waits for its address.
    pub fn start(name: &str, args: &[&str]) -> Daemon {
        Self::start_cmd(name, Command::new(env!("CARGO_BIN_EXE_fabric")), args)
    }

    /// [`Daemon::start`] inside namespace `netns` (`ip netns exec NETNS fabric serve …`);
    /// the caller talks to it from inside `netns` too (its loopback is the daemon's).
    pub fn start_in(name: &str, netns: &str, args: &[&str]) -> Daemon {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, env!("CARGO_BIN_EXE_fabric")]);
        Self::start_cmd(name, cmd, args)
    }

    /// Starts `CMD serve --listen 127.0.0.1:0 ARGS…`, waits for its address and its
    /// first snapshot.
    pub fn start_cmd(name: &str, cmd: Command, args: &[&str]) -> Daemon {
        let d = Self::launch_cmd(name, cmd, args);
        d.wait_for(|d| d.get("/api/v1/telemetry").status == 200, WAIT);
        d
    }

    /// `fabric serve --listen 127.0.0.1:0 ARGS…` with a token file holding [`TOKEN`]
    /// (`--token-file`), waited for as [`Daemon::start`] does: [`Daemon::post`] then
    /// acts on it.
    pub fn start_with_token(name: &str, args: &[&str]) -> Daemon {
        let file = token_file(name);
        let mut args = args.to_vec();
        args.extend_from_slice(&["--token-file", file.to_str().unwrap()]);
        Self::start(name, &args)
    }

    /// Starts `fabric serve --listen 127.0.0.1:0 ARGS…` and waits for its address only
    /// (not for a snapshot: for a source that may never give one).
    pub fn launch(name: &str, args: &[&str]) -> Daemon {
        Self::launch_cmd(name, Command::new(env!("CARGO_BIN_EXE_fabric")), args)
    }

    /// Starts `CMD serve --listen 127.0.0.1:0 ARGS…` and waits for its address.
    pub fn launch_cmd(name: &str, mut cmd: Command, args: &[&str]) -> Daemon {
        let dir = temp_dir(name);
        let stderr_path = dir.join("stderr.log");
        let mut child = cmd
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .expect("starting fabric serve");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| {
                let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                panic!("unexpected first line {line:?}; stderr: {err}")
            })
            .to_string();
        Daemon {
            child,
            addr,
            stderr_path,
            stdout: out,
        }
    }

    /// `POST PATH` with the token of [`Daemon::start_with_token`].
    pub fn post(&self, path: &str) -> Response {
        let auth = format!("Bearer {TOKEN}");
        self.request("POST", path, &[("Authorization", auth.as_str())], b"")
    }

    /// The events the daemon keeps (up to 1,000) after index `since`.
    pub fn events_after(&self, since: usize) -> Vec<serde_json::Value> {
        let all = self.json("/api/v1/events?limit=1000");
        let all = all.as_array().unwrap();
        all[since.min(all.len())..].to_vec()
    }

    /// Waits up to `limit` for a `reroute` event of `link` after event index `since`;
    /// the events after `since` up to and including it.
    pub fn wait_reroute(&self, since: usize, link: u64, limit: Duration) -> Vec<serde_json::Value> {
        let t = Instant::now();
        loop {
            let ev = self.events_after(since);
            if let Some(i) = ev
                .iter()
                .position(|e| e["what"]["kind"] == "reroute" && e["what"]["links"][0] == link)
            {
                return ev[..=i].to_vec();
            }
            assert!(
                t.elapsed() < limit,
                "no reroute of link {link} within {limit:?}; events {ev:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Link id at `switch:port`, from the `fabric_link_info` series.
    pub fn link_at(&self, switch: &str, port: u16) -> u64 {
        let m = self.get("/metrics").text();
        let prefix = format!("fabric_link_info{{switch=\"{switch}\",port=\"{port}\",");
        let line = m
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no fabric_link_info for {switch}:{port}"));
        let at = line.find("link=\"").unwrap() + 6;
        line[at..].split('"').next().unwrap().parse().unwrap()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// A request: `head` is the request line and headers without the final blank line.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        for (k, v) in headers {
            req += &format!("{k}: {v}\r\n");
        }
        if !body.is_empty() || method == "POST" {
            req += &format!("Content-Length: {}\r\n", body.len());
        }
        req += "\r\n";
        let mut raw = req.into_bytes();
        raw.extend_from_slice(body);
        self.raw(&raw)
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.text()))
    }

    /// Sends raw bytes, reads the answer until the server closes.
    pub fn raw(&self, bytes: &[u8]) -> Response {
        raw(&self.addr, bytes)
    }

    pub fn wait_for(&self, mut f: impl FnMut(&Daemon) -> bool, limit: Duration) {
        let t = Instant::now();
        while !f(self) {
            assert!(
                t.elapsed() < limit,
                "condition not met within {limit:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn health(&self) -> serde_json::Value {
        self.json("/api/v1/health")
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(15),
                "no exit 15 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    /// SIGTERM first (a `--testbed` daemon then deletes its namespaces, also when a test
    /// fails half-way), SIGKILL after 5 s.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the sample `name` (metric name and labels, exactly) in an exposition.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Sends raw bytes to `addr`, reads the answer until the server closes.
pub fn raw(addr: &str, bytes: &[u8]) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(bytes).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    Response::parse(&buf)
}

/// `GET path` on `addr`.
pub fn http_get(addr: &str, path: &str) -> Response {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// A parsed answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn parse(buf: &[u8]) -> Response {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            return Response {
                status: 0,
                headers: Vec::new(),
                body: buf.to_vec(),
            };
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let raw = &buf[end + 4..];
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked { dechunk(raw) } else { raw.to_vec() };
        Response {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }
}

/// The payload of a chunked body (as much as arrived).
pub fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&raw[..nl]).trim(), 16).unwrap_or(0);
        raw = &raw[nl + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(raw.len());
        out.extend_from_slice(&raw[..take]);
        raw = &raw[take..];
        raw = raw.strip_prefix(b"\r\n").unwrap_or(raw);
    }
    out
}

/// An open stream connection read line by line.
pub struct Stream {
    pub reader: BufReader<TcpStream>,
    pub status: u16,
}

impl Stream {
    pub fn open(addr: &str, path: &str) -> Stream {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        Stream { reader, status }
    }

    /// The next NDJSON line (one frame), undoing the chunked encoding.
    pub fn next_line(&mut self) -> Option<String> {
        let mut pending = Vec::new();
        loop {
            let mut size = String::new();
            if self.reader.read_line(&mut size).ok()? == 0 {
                return None;
            }
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            if n == 0 {
                return None;
            }
            let mut chunk = vec![0; n + 2];
            self.reader.read_exact(&mut chunk).ok()?;
            chunk.truncate(n);
            pending.extend_from_slice(&chunk);
            if pending.ends_with(b"\n") {
                return Some(String::from_utf8(pending).unwrap());
            }
        }
    }
}

/// `promtool check rules RULES` and `promtool test rules TESTS`, run in `dir` (a docs
/// folder); a failure shows promtool's output.
pub fn promtool_check_and_test(dir: &str, rules: &str, tests: &str) {
    for args in [["check", "rules", rules], ["test", "rules", tests]] {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A TCP port free on loopback right now ([`testkit::free_port`]).
pub fn free_port() -> u16 {
    testkit::free_port()
}

/// Runs `ip ARGS…`; fails the test with ip's error if it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
