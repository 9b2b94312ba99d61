//! The standard `process_*` families every Prometheus exporter carries (the names and
//! meanings of the Go and Python clients' process collectors), read from `/proc/self`,
//! and `fabric_build_info{version}` = 1.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::metrics::Selection;

/// What `/proc/self` says about this process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessStats {
    /// User + system CPU time, s.
    pub cpu_seconds: f64,
    /// Resident set size, bytes.
    pub resident_bytes: u64,
    /// Virtual memory size, bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors.
    pub max_fds: u64,
    /// Start time since the Unix epoch, s.
    pub start_time_seconds: f64,
    /// Threads.
    pub threads: u64,
}

/// Fields of `/proc/self/stat` after the command name (proc(5): field 3 is index 0).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    // The command name is in parentheses and may hold spaces: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().collect())
}

/// Reads the stats (`None` when `/proc` is not there or not as proc(5) describes it).
pub fn read() -> Option<ProcessStats> {
    // SAFETY: sysconf has no preconditions.
    let (tick, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK) as f64,
            libc::sysconf(libc::_SC_PAGESIZE) as u64,
        )
    };
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f = stat_fields(&stat)?;
    let num = |field: usize| -> Option<u64> { f.get(field - 3)?.parse().ok() };
    let btime: f64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: writes the limit into `lim`.
    let max_fds = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur
    } else {
        0
    };
    Some(ProcessStats {
        cpu_seconds: (num(14)? + num(15)?) as f64 / tick,
        virtual_bytes: num(23)?,
        resident_bytes: num(24)? * page,
        threads: num(20)?,
        start_time_seconds: btime + num(22)? as f64 / tick,
        open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as u64,
        max_fds,
    })
}

/// Encodes `process_*` (when `/proc` can be read) and `fabric_build_info`.
pub fn encode(sel: &Selection, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
    if sel.family("fabric_build_info") {
        let mut m = enc.encode_descriptor(
            "fabric_build_info",
            "The daemon's version (value 1)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(1).encode(m.encode_family(&[("version", env!("CARGO_PKG_VERSION"))])?)?;
    }
    let Some(p) = read() else { return Ok(()) };
    if sel.family("process_cpu_seconds") {
        let m = enc.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(p.cpu_seconds).encode(m)?;
    }
    let gauges = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            p.resident_bytes as f64,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            p.virtual_bytes as f64,
        ),
        (
            "process_open_fds",
            "Number of open file descriptors",
            p.open_fds as f64,
        ),
        (
            "process_max_fds",
            "Maximum number of open file descriptors",
            p.max_fds as f64,
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            p.start_time_seconds,
        ),
        ("process_threads", "Number of OS threads", p.threads as f64),
    ];
    for (name, help, v) in gauges.into_iter().filter(|g| sel.family(g.0)) {
        let m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
        ConstGauge::new(v).encode(m)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_back() {
        let p = read().expect("/proc/self");
        assert!(p.resident_bytes > 1 << 20, "{p:?}");
        assert!(p.open_fds >= 3 && p.open_fds <= p.max_fds, "{p:?}");
        assert!(p.threads >= 1);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86_400.0 * 365.0);
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_is_skipped() {
        let f = stat_fields("42 (a b) c) S 1 2").unwrap();
        assert_eq!(f, vec!["S", "1", "2"]);
    }
}
