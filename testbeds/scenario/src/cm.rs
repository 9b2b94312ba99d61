//! htsim connection matrices (`.cm`, and the `.tm` traffic-matrix files of its UEC
//! build, the same format), so one workload runs in htsim and here.
//!
//! The format (htsim `datacenter/connection_matrix.cpp`):
//!
//! ```text
//! Nodes 16
//! Connections 15
//! 1->0 id 1 start 0 size 2000000
//! 2->0 id 2 start 0 size 2000000
//! ```
//!
//! `start` is in microseconds, `size` in bytes. htsim's trigger extensions
//! (`trigger`, `send_done_trigger`, `recv_done_trigger`, `Triggers`) are rejected
//! with a precise error rather than silently ignored. Every number is bounded (file
//! size, nodes, connections, start, size), each with an error that names its limit.

use super::{Result, ScenarioError, Workplan};
use crate::MAX_FLOWS;
use crate::units::{MAX_HOST_INDEX, MAX_SIZE, MAX_TIME};
use cc_algos::{Bytes, Duration};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

/// The largest matrix file read: 256 MiB (about 6 M connection lines; a 1,024-host
/// all-to-all is 1 M lines, ~40 MB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Whether `path` names an htsim connection matrix by its extension (`.cm`, `.tm`).
pub fn is_matrix_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "cm" || e == "tm")
}

/// One connection.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    /// Source node (host index).
    pub src: u32,
    /// Destination node.
    pub dst: u32,
    /// Connection id as written.
    pub id: u64,
    /// Start time.
    pub start: Duration,
    /// Bytes.
    pub size: Bytes,
}

/// A parsed connection matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionMatrix {
    /// `Nodes N`.
    pub nodes: u32,
    /// The connections, in file order.
    pub connections: Vec<Connection>,
}

impl ConnectionMatrix {
    /// Read a `.cm` / `.tm` file (at most [`MAX_FILE_BYTES`]).
    pub fn from_file(path: &Path) -> Result<ConnectionMatrix> {
        Self::from_file_capped(path, MAX_FILE_BYTES)
    }

    fn from_file_capped(path: &Path, cap: u64) -> Result<ConnectionMatrix> {
        let file = path.display().to_string();
        let io = |source| ScenarioError::Io {
            file: file.clone(),
            source,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .map_err(io)?
            .take(cap + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > cap {
            return Err(ScenarioError::Parse {
                file,
                message: format!(
                    "larger than {} bytes, the most a connection matrix may be",
                    cap
                ),
            });
        }
        Self::parse(&text, &file)
    }

    /// Parse `.cm` text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<ConnectionMatrix> {
        let err = |line: usize, message: String| ScenarioError::ConnectionMatrix {
            file: file.to_string(),
            line,
            message,
        };
        let mut nodes: Option<u32> = None;
        let mut declared: Option<usize> = None;
        let mut connections = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let ln = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let toks: Vec<&str> = line.split_whitespace().collect();
            match toks[0] {
                "Nodes" => {
                    let v = toks
                        .get(1)
                        .and_then(|t| t.parse::<u32>().ok())
                        .ok_or_else(|| err(ln, "expected `Nodes N` with N a node count".into()))?;
                    if v == 0 || v > MAX_HOST_INDEX + 1 {
                        return Err(err(
                            ln,
                            format!("`Nodes {v}`: expected 1 to {} nodes", MAX_HOST_INDEX + 1),
                        ));
                    }
                    nodes = Some(v);
                    continue;
                }
                "Connections" => {
                    let v = toks
                        .get(1)
                        .and_then(|t| t.parse::<usize>().ok())
                        .ok_or_else(|| {
                            err(
                                ln,
                                "expected `Connections M` with M a connection count".into(),
                            )
                        })?;
                    declared = Some(v);
                    continue;
                }
                "Triggers" | "trigger" => {
                    return Err(err(
                        ln,
                        "htsim triggers are not supported; give flows with start times only".into(),
                    ));
                }
                _ => {}
            }
            let n = nodes.ok_or_else(|| err(ln, "connection before the `Nodes N` line".into()))?;
            let (src, dst) = toks[0].split_once("->").ok_or_else(|| {
                err(
                    ln,
                    format!(
                        "expected `src->dst id N start T size B`, found `{}`",
                        toks[0]
                    ),
                )
            })?;
            let node = |s: &str, what: &str| -> Result<u32> {
                let v: u32 = s
                    .parse()
                    .map_err(|_| err(ln, format!("{what} `{s}` is not a node number")))?;
                if v >= n {
                    return Err(err(ln, format!("{what} {v} is not below `Nodes {n}`")));
                }
                Ok(v)
            };
            let (src, dst) = (node(src, "source")?, node(dst, "destination")?);
            if src == dst {
                return Err(err(ln, format!("connection from node {src} to itself")));
            }
            let (mut id, mut start, mut size) = (None, None, None);
            let mut k = 1;
            while k < toks.len() {
                let key = toks[k];
                let val = toks
                    .get(k + 1)
                    .ok_or_else(|| err(ln, format!("`{key}` has no value")))?;
                match key {
                    "id" => {
                        id = Some(val.parse::<u64>().map_err(|_| {
                            err(ln, format!("id `{val}` is not a non-negative integer"))
                        })?)
                    }
                    "start" => {
                        let us: f64 = val
                            .parse()
                            .ok()
                            .filter(|v: &f64| *v >= 0.0 && v.is_finite())
                            .ok_or_else(|| {
                                err(ln, format!("start `{val}` is not a time in microseconds"))
                            })?;
                        let max_us = MAX_TIME.as_picos() / 1_000_000;
                        if us > max_us as f64 {
                            return Err(err(
                                ln,
                                format!("start {val} µs is beyond the limit of {max_us} µs"),
                            ));
                        }
                        start = Some(Duration::from_secs_f64(us * 1e-6));
                    }
                    "size" => {
                        let b: u64 = val.parse().map_err(|_| {
                            err(ln, format!("size `{val}` is not a whole number of bytes"))
                        })?;
                        if b == 0 {
                            return Err(err(ln, "size 0: a connection must carry bytes".into()));
                        }
                        if b > MAX_SIZE.0 {
                            return Err(err(
                                ln,
                                format!("size {b} B is beyond the limit of {} B", MAX_SIZE.0),
                            ));
                        }
                        size = Some(Bytes(b));
                    }
                    "trigger" | "send_done_trigger" | "recv_done_trigger" | "priority" => {
                        return Err(err(
                            ln,
                            format!("`{key}` (an htsim extension) is not supported"),
                        ));
                    }
                    _ => return Err(err(ln, format!("unknown field `{key}`"))),
                }
                k += 2;
            }
            if connections.len() >= MAX_FLOWS {
                return Err(err(
                    ln,
                    format!("more than {MAX_FLOWS} connections, the most a scenario may have"),
                ));
            }
            connections.push(Connection {
                src,
                dst,
                id: id.unwrap_or(connections.len() as u64),
                start: start.unwrap_or(Duration::ZERO),
                size: size.ok_or_else(|| err(ln, "missing `size B`".into()))?,
            });
        }
        let nodes = nodes.ok_or_else(|| err(1, "missing `Nodes N` line".into()))?;
        if let Some(m) = declared
            && m != connections.len()
        {
            return Err(err(
                text.lines().count(),
                format!(
                    "`Connections {m}` but {} connection lines",
                    connections.len()
                ),
            ));
        }
        Ok(ConnectionMatrix { nodes, connections })
    }

    /// The sized, unconditioned flows of a plan as a matrix htsim can run
    /// (flows with dependencies or no size are skipped; the count says how many).
    pub fn from_plan(plan: &Workplan, nodes: u32) -> (ConnectionMatrix, usize) {
        let mut skipped = 0;
        let mut connections = Vec::new();
        for f in &plan.flows {
            match f.size {
                Some(size) if f.after.is_empty() => connections.push(Connection {
                    src: f.src,
                    dst: f.dst,
                    id: f.id as u64 + 1,
                    start: f.start - cc_algos::Instant::ZERO,
                    size,
                }),
                _ => skipped += 1,
            }
        }
        (ConnectionMatrix { nodes, connections }, skipped)
    }

    /// Text in htsim's format.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "Nodes {}\nConnections {}\n",
            self.nodes,
            self.connections.len()
        );
        for c in &self.connections {
            let us = c.start.as_micros_f64();
            let _ = writeln!(
                s,
                "{}->{} id {} start {} size {}",
                c.src, c.dst, c.id, us, c.size.0
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_htsim_incast() {
        let t = "Nodes 16\nConnections 2\n1->0 id 1 start 0 size 2000000\n2->0 id 2 start 1.5 size 2000000\n";
        let m = ConnectionMatrix::parse(t, "x.cm").unwrap();
        assert_eq!(m.nodes, 16);
        assert_eq!(m.connections[1].start, Duration::nanos(1500));
        assert_eq!(m.connections[1].size, Bytes(2_000_000));
        assert_eq!(ConnectionMatrix::parse(&m.to_text(), "y.cm").unwrap(), m);
    }

    #[test]
    fn precise_errors() {
        let e = |t: &str| ConnectionMatrix::parse(t, "x.cm").unwrap_err().to_string();
        assert_eq!(
            e("Nodes 4\n1->9 id 1 size 10\n"),
            "x.cm:2: destination 9 is not below `Nodes 4`"
        );
        assert_eq!(
            e("1->2 size 4\n"),
            "x.cm:1: connection before the `Nodes N` line"
        );
        assert_eq!(e("Nodes 4\n1->2 id 1\n"), "x.cm:2: missing `size B`");
        assert_eq!(
            e("Nodes 4\nConnections 2\n1->2 size 4\n"),
            "x.cm:3: `Connections 2` but 1 connection lines"
        );
        assert!(e("Nodes 4\n1->2 size 4 trigger 3\n").contains("not supported"));
    }

    #[test]
    fn a_tm_file_reads_as_a_cm_file_and_huge_values_name_their_limit() {
        let dir = std::env::temp_dir().join(format!("scenario-tm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // htsim's incast_2-1.tm, as its UEC build ships it.
        let p = dir.join("incast_2-1.tm");
        std::fs::write(
            &p,
            "Nodes 16\nConnections 2\n8->0 id 1 start 0 size 2000000\n9->0 id 2 start 0 size 2000000\n",
        )
        .unwrap();
        assert!(is_matrix_file(&p));
        let m = ConnectionMatrix::from_file(&p).unwrap();
        assert_eq!((m.nodes, m.connections.len()), (16, 2));
        assert_eq!(m.connections[1].size, Bytes(2_000_000));
        std::fs::remove_dir_all(&dir).ok();
        let e = |t: &str| ConnectionMatrix::parse(t, "x.tm").unwrap_err().to_string();
        assert_eq!(
            e("Nodes 4294967295\n"),
            "x.tm:1: `Nodes 4294967295`: expected 1 to 16777216 nodes"
        );
        assert_eq!(
            e("Nodes 4\n0->1 size 18446744073709551615\n"),
            "x.tm:2: size 18446744073709551615 B is beyond the limit of 1099511627776 B"
        );
        assert_eq!(
            e("Nodes 4\n0->1 start 1e300 size 5\n"),
            "x.tm:2: start 1e300 µs is beyond the limit of 3600000000 µs"
        );
        // A device that never ends is read up to the cap (256 MiB; 4 KiB here), then
        // refused.
        if Path::new("/dev/zero").exists() {
            let e = ConnectionMatrix::from_file_capped(Path::new("/dev/zero"), 4096)
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                "/dev/zero: larger than 4096 bytes, the most a connection matrix may be"
            );
        }
    }

    proptest! {
        #[test]
        fn roundtrip(conns in proptest::collection::vec((0u32..50, 1u32..50, 1u64..1_000_000_000, 0u64..1_000_000), 1..40)) {
            let m = ConnectionMatrix {
                nodes: 100,
                connections: conns.iter().enumerate().map(|(i, &(s, d, b, t))| Connection {
                    src: s, dst: s + d, id: i as u64, start: Duration::micros(t), size: Bytes(b)
                }).collect(),
            };
            prop_assert_eq!(ConnectionMatrix::parse(&m.to_text(), "p.cm").unwrap(), m);
        }

        /// Any numbers in any field: a matrix whose every value is within its limit, or
        /// an error that names the line.
        #[test]
        fn any_numbers_parse_to_a_bounded_matrix_or_a_line_error(
            nodes in prop_oneof![0u64..40, any::<u64>()],
            conns in proptest::collection::vec(
                (prop_oneof![0u64..40, any::<u64>()], prop_oneof![0u64..40, any::<u64>()],
                 prop_oneof![0u64..1_000_000, any::<u64>()], prop_oneof![0.0f64..1e6, any::<f64>()]),
                0..8),
        ) {
            let mut t = format!("Nodes {nodes}\n");
            for (s, d, b, us) in &conns {
                t += &format!("{s}->{d} id 1 start {us} size {b}\n");
            }
            match ConnectionMatrix::parse(&t, "n.tm") {
                Ok(m) => {
                    prop_assert!(m.nodes <= MAX_HOST_INDEX + 1);
                    for c in &m.connections {
                        prop_assert!(c.src < m.nodes && c.dst < m.nodes);
                        prop_assert!(c.size <= MAX_SIZE && c.size.0 > 0);
                        prop_assert!(c.start <= MAX_TIME);
                    }
                }
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(e.starts_with("n.tm:"), "{}", e);
                }
            }
        }

        #[test]
        fn garbage_never_panics(t in "(Nodes [0-9]{1,2}\n)?([0-9]{0,2}->[0-9]{0,2}( [a-z]{0,5} [0-9.]{0,4}){0,3}\n){0,4}") {
            let _ = ConnectionMatrix::parse(&t, "g.cm");
        }
    }
}
