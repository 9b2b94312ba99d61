//! Human-readable quantities in scenario files: sizes (`"2MB"`, `"64KiB"`, `4096`),
//! times (`"10us"`, `"1.5ms"`, `"0"`) and rates (`"100Gbps"`), plus host sets
//! (`"all"`, `"0..16"`, `"0..=15"`, `[1, 5, 9]`).
//!
//! Decimal prefixes are powers of ten (`MB` = 10⁶ B, as htsim's "2 MB" flows),
//! binary prefixes powers of two (`MiB` = 2²⁰ B).

use cc_algos::{Bytes, Duration, Rate};
use serde::{Deserialize, Deserializer, Serialize};

/// The largest size a scenario may give (a flow, a buffer, a threshold): 1 TiB. Larger
/// flows would take hours of simulated time and overflow per-flow packet counters
/// (2³² packets of 4 KiB is ~17.6 TB).
pub const MAX_SIZE: Bytes = Bytes(1 << 40);

/// The largest time a scenario may give (a start, a duration, a period): one hour of
/// virtual time, far beyond any packet-level run, and far from the u64-picosecond
/// limit (~213 days) that sums of times must stay under.
pub const MAX_TIME: Duration = Duration::picos(3_600 * 1_000_000_000_000);

/// The largest host index a host set may name: 2²⁴ − 1 (16.7 M hosts, well above a
/// 100k-GPU fabric), so that no host set can ask for an unbounded allocation.
pub const MAX_HOST_INDEX: u32 = (1 << 24) - 1;

fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!("`{s}` does not start with a number"));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}`: `{num}` is not a number"))?;
    Ok((v, unit.trim()))
}

/// Parse a size: `4096`, `"4096B"`, `"2MB"` (10⁶), `"64KiB"` (2¹⁰), `"1GB"`.
pub fn parse_size(s: &str) -> Result<Bytes, String> {
    let (v, unit) = split_number(s)?;
    let mult: f64 = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "`{s}`: unknown size unit `{unit}` (expected B, KB, MB, GB, TB, KiB, MiB or GiB)"
            ));
        }
    };
    let b = v * mult;
    if !b.is_finite() || b > MAX_SIZE.0 as f64 {
        return Err(format!(
            "`{s}` is larger than the largest size a scenario may give, 1 TiB ({} B)",
            MAX_SIZE.0
        ));
    }
    if b.fract() != 0.0 {
        return Err(format!("`{s}` is not a whole number of bytes"));
    }
    Ok(Bytes(b as u64))
}

fn size_in_range(n: u64) -> Result<Bytes, String> {
    if n > MAX_SIZE.0 {
        return Err(format!(
            "size {n} B is larger than the largest size a scenario may give, 1 TiB ({} B)",
            MAX_SIZE.0
        ));
    }
    Ok(Bytes(n))
}

/// Parse a time: `"0"`, `"500ns"`, `"10us"` (or `µs`), `"1.5ms"`, `"2s"`, `"100ps"`.
pub fn parse_time(s: &str) -> Result<Duration, String> {
    let (v, unit) = split_number(s)?;
    let ps_per: f64 = match unit {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        "" if v == 0.0 => 1.0,
        "" => {
            return Err(format!(
                "`{s}`: a time needs a unit (ps, ns, us, ms or s), e.g. \"{s}us\""
            ));
        }
        _ => {
            return Err(format!(
                "`{s}`: unknown time unit `{unit}` (expected ps, ns, us, ms or s)"
            ));
        }
    };
    let ps = (v * ps_per).round();
    if !ps.is_finite() || ps > MAX_TIME.as_picos() as f64 {
        return Err(format!(
            "`{s}` is longer than the longest time a scenario may give, 3600s (one hour of virtual time)"
        ));
    }
    Ok(Duration::picos(ps as u64))
}

/// Parse a rate: `"100Gbps"`, `"400G"`, `"25Gb/s"`, `"800Mbps"`.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) = split_number(s)?;
    let mult = match unit {
        "bps" | "b/s" => 1.0,
        "K" | "Kbps" | "kbps" | "Kb/s" => 1e3,
        "M" | "Mbps" | "Mb/s" => 1e6,
        "G" | "Gbps" | "Gb/s" => 1e9,
        "T" | "Tbps" | "Tb/s" => 1e12,
        _ => {
            return Err(format!(
                "`{s}`: unknown rate unit `{unit}` (expected bps, Kbps, Mbps, Gbps or Tbps)"
            ));
        }
    };
    Ok(Rate::from_bps_f64(v * mult))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Num(u64),
    Float(f64),
    Str(String),
}

/// Serde adapter: a size given as an integer (bytes) or a string with a unit.
pub fn de_size<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
    match NumOrStr::deserialize(d)? {
        NumOrStr::Num(n) => size_in_range(n).map_err(serde::de::Error::custom),
        NumOrStr::Float(f) => Err(serde::de::Error::custom(format!(
            "size {f} must be a whole number of bytes or a string such as \"2MB\""
        ))),
        NumOrStr::Str(s) => parse_size(&s).map_err(serde::de::Error::custom),
    }
}

/// Serde adapter: an optional size.
pub fn de_opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
    de_size(d).map(Some)
}

/// Serde adapter: a time given as a string with a unit (or the integer 0).
pub fn de_time<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    match NumOrStr::deserialize(d)? {
        NumOrStr::Num(0) => Ok(Duration::ZERO),
        NumOrStr::Num(n) => Err(serde::de::Error::custom(format!(
            "time {n} needs a unit: write it as a string such as \"{n}us\""
        ))),
        NumOrStr::Float(f) => Err(serde::de::Error::custom(format!(
            "time {f} needs a unit: write it as a string such as \"{f}us\""
        ))),
        NumOrStr::Str(s) => parse_time(&s).map_err(serde::de::Error::custom),
    }
}

/// Serde adapter: an optional time.
pub fn de_opt_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    de_time(d).map(Some)
}

/// Serde adapter: a rate string.
pub fn de_opt_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
    let s = String::deserialize(d)?;
    parse_rate(&s).map(Some).map_err(serde::de::Error::custom)
}

/// A set of host indices (0-based, in the fabric's host order).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum HostSet {
    /// Every host of the fabric.
    #[default]
    All,
    /// `start..end` (end exclusive).
    Range(u32, u32),
    /// An explicit list, in order.
    List(Vec<u32>),
}

impl HostSet {
    /// Parse `"all"`, `"a..b"`, `"a..=b"` or a single index.
    pub fn parse(s: &str) -> Result<HostSet, String> {
        let s = s.trim();
        if s == "all" {
            return Ok(HostSet::All);
        }
        let num = |x: &str| -> Result<u32, String> {
            let x = x.trim();
            if x.is_empty() {
                return Err(format!(
                    "`{s}`: a range needs both ends, e.g. \"0..16\" or \"0..=15\""
                ));
            }
            match x.parse::<u64>() {
                Ok(h) if h <= MAX_HOST_INDEX as u64 => Ok(h as u32),
                Ok(h) => Err(format!(
                    "`{s}`: host index {h} is larger than the largest allowed, {MAX_HOST_INDEX}"
                )),
                Err(_) => Err(format!("`{s}`: `{x}` is not a host index")),
            }
        };
        if let Some((a, b)) = s.split_once("..=") {
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err(format!("`{s}`: empty range"));
            }
            // b ≤ MAX_HOST_INDEX < u32::MAX: no overflow.
            return Ok(HostSet::Range(a, b + 1));
        }
        if let Some((a, b)) = s.split_once("..") {
            let (a, b) = (num(a)?, num(b)?);
            if b <= a {
                return Err(format!("`{s}`: empty range"));
            }
            return Ok(HostSet::Range(a, b));
        }
        num(s).map(|h| HostSet::List(vec![h])).map_err(|_| {
            format!("`{s}`: expected \"all\", \"a..b\", \"a..=b\" or a list of host indices")
        })
    }

    /// The member hosts of a fabric with `n` hosts; an index ≥ `n` is an error.
    pub fn resolve(&self, n: u32) -> Result<Vec<u32>, String> {
        // Check the bounds before anything is allocated.
        let largest = match self {
            HostSet::All => None,
            HostSet::Range(_, b) => Some(b.saturating_sub(1)),
            HostSet::List(l) => l.iter().copied().find(|&h| h >= n),
        };
        if let Some(bad) = largest.filter(|&h| h >= n) {
            return Err(format!(
                "host {bad} does not exist: the fabric has {n} hosts (0..{n})"
            ));
        }
        let v: Vec<u32> = match self {
            HostSet::All => (0..n).collect(),
            HostSet::Range(a, b) => (*a..*b).collect(),
            HostSet::List(l) => l.clone(),
        };
        if let Some(bad) = v.iter().find(|&&h| h >= n) {
            return Err(format!(
                "host {bad} does not exist: the fabric has {n} hosts (0..{n})"
            ));
        }
        let mut seen = v.clone();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("host {} is listed twice", w[0]));
        }
        Ok(v)
    }
}

impl<'de> Deserialize<'de> for HostSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Str(String),
            List(Vec<u32>),
            One(u32),
        }
        match Raw::deserialize(d)? {
            Raw::Str(s) => HostSet::parse(&s).map_err(serde::de::Error::custom),
            Raw::List(l) if l.is_empty() => Err(serde::de::Error::custom("empty host list")),
            Raw::List(l) => Ok(HostSet::List(l)),
            Raw::One(h) => Ok(HostSet::List(vec![h])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2MB").unwrap(), Bytes(2_000_000));
        assert_eq!(parse_size("64KiB").unwrap(), Bytes(65_536));
        assert_eq!(parse_size("4096").unwrap(), Bytes(4096));
        assert_eq!(parse_size("1.5MB").unwrap(), Bytes(1_500_000));
        assert!(
            parse_size("2 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(
            parse_size("MB")
                .unwrap_err()
                .contains("does not start with a number")
        );
        assert!(parse_size("1.5B").unwrap_err().contains("whole number"));
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("10us").unwrap(), Duration::micros(10));
        assert_eq!(parse_time("1.5ms").unwrap(), Duration::micros(1500));
        assert_eq!(parse_time("0").unwrap(), Duration::ZERO);
        assert!(parse_time("5").unwrap_err().contains("needs a unit"));
        assert!(parse_time("5h").unwrap_err().contains("unknown time unit"));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100Gbps").unwrap(), Rate::gbps(100));
        assert_eq!(parse_rate("400G").unwrap(), Rate::gbps(400));
        assert!(parse_rate("100GBps").is_err());
    }

    #[test]
    fn huge_quantities_get_an_error_that_names_the_limit() {
        let e = parse_time("20000000s").unwrap_err();
        assert!(e.contains("3600s"), "{e}");
        let e = parse_size("20TB").unwrap_err();
        assert!(e.contains("1 TiB"), "{e}");
        assert_eq!(parse_size("1TB").unwrap(), Bytes(1_000_000_000_000));
        let e = HostSet::parse("..=4294967295").unwrap_err();
        assert!(e.contains("both ends"), "{e}");
        let e = HostSet::parse("0..=4294967295").unwrap_err();
        assert!(e.contains("largest allowed"), "{e}");
        let e = HostSet::parse("0..1000000000").unwrap_err();
        assert!(e.contains("largest allowed, 16777215"), "{e}");
        // Checked before anything is allocated.
        let e = HostSet::parse("0..10000000")
            .unwrap()
            .resolve(16)
            .unwrap_err();
        assert_eq!(
            e,
            "host 9999999 does not exist: the fabric has 16 hosts (0..16)"
        );
    }

    #[test]
    fn host_sets() {
        assert_eq!(
            HostSet::parse("0..4").unwrap().resolve(8).unwrap(),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            HostSet::parse("2..=3").unwrap().resolve(8).unwrap(),
            vec![2, 3]
        );
        assert_eq!(
            HostSet::parse("all").unwrap().resolve(3).unwrap(),
            vec![0, 1, 2]
        );
        assert!(HostSet::parse("4..2").is_err());
        let e = HostSet::List(vec![1, 9]).resolve(8).unwrap_err();
        assert!(e.contains("host 9 does not exist"), "{e}");
        assert!(
            HostSet::List(vec![1, 1])
                .resolve(8)
                .unwrap_err()
                .contains("twice")
        );
    }

    proptest! {
        #[test]
        fn size_roundtrip(n in 0u64..1_000_000_000_000) {
            prop_assert_eq!(parse_size(&format!("{n}B")).unwrap(), Bytes(n));
            prop_assert_eq!(parse_size(&n.to_string()).unwrap(), Bytes(n));
        }

        #[test]
        fn time_ns_roundtrip(n in 0u64..1_000_000_000) {
            prop_assert_eq!(parse_time(&format!("{n}ns")).unwrap(), Duration::nanos(n));
        }

        #[test]
        fn unbounded_quantities_are_in_range_or_refused(
            n in any::<u64>(),
            frac in 0u32..1000,
            unit in prop::sample::select(vec!["", "B", "KB", "MB", "GB", "TB", "GiB", "ps", "ns", "us", "ms", "s"]),
        ) {
            for text in [format!("{n}{unit}"), format!("{n}.{frac}{unit}")] {
                if let Ok(b) = parse_size(&text) {
                    prop_assert!(b <= MAX_SIZE, "{text} -> {b:?}");
                }
                if let Ok(t) = parse_time(&text) {
                    prop_assert!(t <= MAX_TIME, "{text} -> {t:?}");
                }
            }
        }

        #[test]
        fn host_sets_never_allocate_beyond_the_fabric(a in any::<u64>(), b in any::<u64>(), n in 0u32..4096) {
            for text in [format!("{a}..{b}"), format!("{a}..={b}"), format!("..={b}"), a.to_string()] {
                if let Ok(v) = HostSet::parse(&text).and_then(|set| set.resolve(n)) {
                    prop_assert!(v.len() <= n as usize);
                    prop_assert!(v.iter().all(|&h| h < n));
                }
            }
        }

        #[test]
        fn garbage_never_panics(s in ".{0,12}") {
            let _ = parse_size(&s);
            let _ = parse_time(&s);
            let _ = parse_rate(&s);
            let _ = HostSet::parse(&s);
        }
    }
}
