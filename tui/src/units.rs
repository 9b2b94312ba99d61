//! Number formatting: rates in bits or bytes with SI prefixes, counts, times.

use serde::Deserialize;

/// Show rates in bits or bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Units {
    /// b/s, kb/s, Mb/s, Gb/s, Tb/s.
    #[default]
    Bits,
    /// B/s, kB/s, MB/s, GB/s, TB/s.
    Bytes,
}

/// A value with an SI prefix and three significant digits: `0`, `999`, `1.20k`, `45.6M`.
pub fn si(v: f64) -> String {
    const P: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    if !v.is_finite() {
        return "—".into();
    }
    let (mut x, mut i) = (v.abs(), 0);
    while x >= 999.5 && i + 1 < P.len() {
        x /= 1000.0;
        i += 1;
    }
    let sign = if v < 0.0 { "-" } else { "" };
    if i == 0 && x == x.trunc() {
        return format!("{sign}{x}");
    }
    let digits = if x >= 99.95 {
        0
    } else if x >= 9.995 {
        1
    } else {
        2
    };
    format!("{sign}{x:.digits$}{}", P[i])
}

/// A rate given in bits per second, in the chosen unit: `812G` + `b/s`.
pub fn rate(bps: f64, u: Units) -> String {
    match u {
        Units::Bits => format!("{}b/s", si(bps)),
        Units::Bytes => format!("{}B/s", si(bps / 8.0)),
    }
}

/// A share 0..=1 as a percentage with no decimals below 10 % shown as one decimal.
pub fn pct(x: f32) -> String {
    let p = x * 100.0;
    if p > 0.0 && p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// Nanoseconds as `h:mm:ss.mmm` (or `m:ss.mmm` under an hour).
pub fn clock(ns: u64) -> String {
    let ms = ns / 1_000_000;
    let (h, m, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}.{milli:03}")
    } else {
        format!("{m}:{s:02}.{milli:03}")
    }
}

/// 365 days in nanoseconds. A timestamp at or above it is read as wall-clock time since
/// the Unix epoch (1970-01-01 00:00 UTC; this value is 1971-01-01 00:00 UTC), one below it
/// as time since a run started: no simulation or recording runs for a year.
const WALL_CLOCK_FROM_NS: u64 = 365 * 86_400 * 1_000_000_000;

/// Formats a timestamp of `ns` nanoseconds on a source's clock, by its size:
/// - under one minute, as a [`duration`]: `850ns`, `300.0µs`, `3.40ms`, `12.35s`;
/// - from one minute to under 365 days ([`WALL_CLOCK_FROM_NS`]), as a [`clock`]:
///   `m:ss.mmm` under an hour, `h:mm:ss.mmm` above (hours not wrapped at 24);
/// - from 365 days on, as wall-clock time since the Unix epoch: its UTC time of day,
///   `08:34:45.796 UTC`, with the date dropped.
pub fn stamp(ns: u64) -> String {
    if ns < 60_000_000_000 {
        duration(ns)
    } else if ns < WALL_CLOCK_FROM_NS {
        clock(ns)
    } else {
        let ms = ns / 1_000_000;
        let (h, m, s, milli) = (
            ms / 3_600_000 % 24,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000,
        );
        format!("{h:02}:{m:02}:{s:02}.{milli:03} UTC")
    }
}

/// A duration in ns as `850ns`, `12.0µs`, `3.40ms`, `2.10s`.
pub fn duration(ns: u64) -> String {
    let x = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.1}µs", x / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2}ms", x / 1e6)
    } else {
        format!("{:.2}s", x / 1e9)
    }
}

/// A playback speed factor with at most three significant digits and no trailing zeros:
/// `1`, `4`, `0.5`, `0.125`, `0.00977`, `1024` (never `0.00999998`).
pub fn speed(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return "—".into();
    }
    let digits = (2 - x.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(1200.0), "1.20k");
        assert_eq!(si(45_600_000.0), "45.6M");
        assert_eq!(si(812e9), "812G");
        assert_eq!(si(f64::NAN), "—");
        assert_eq!(rate(400e9, Units::Bits), "400Gb/s");
        assert_eq!(rate(400e9, Units::Bytes), "50.0GB/s");
        assert_eq!(pct(0.5), "50%");
        assert_eq!(pct(0.012), "1.2%");
        assert_eq!(clock(3_723_450_000_000), "1:02:03.450");
        assert_eq!(clock(83_450_000_000), "1:23.450");
        assert_eq!(duration(3_400_000), "3.40ms");
        assert_eq!(stamp(3_400_000), "3.40ms");
        assert_eq!(stamp(3_723_450_000_000), "1:02:03.450");
        // The boundaries the doc comment names: one minute, and 365 days (the first
        // wall-clock time, 1971-01-01 00:00 UTC).
        assert_eq!(stamp(59_990_000_000), "59.99s");
        assert_eq!(stamp(60_000_000_000), "1:00.000");
        assert_eq!(stamp(WALL_CLOCK_FROM_NS - 1_000_000), "8759:59:59.999");
        assert_eq!(stamp(WALL_CLOCK_FROM_NS), "00:00:00.000 UTC");
        // A testbed daemon's snapshot at 2026-11-27 08:34:45.796 UTC.
        assert_eq!(stamp(1_795_768_485_796_000_000), "08:34:45.796 UTC");
        assert_eq!(speed(1.0), "1");
        assert_eq!(speed(4.0), "4");
        assert_eq!(speed(0.5), "0.5");
        assert_eq!(speed(0.125), "0.125");
        assert_eq!(speed(0.00999998), "0.01");
        assert_eq!(speed(1.0 / 1024.0), "0.000977");
        assert_eq!(speed(1024.0), "1024");
        assert_eq!(speed(0.99999998), "1");
    }
}
