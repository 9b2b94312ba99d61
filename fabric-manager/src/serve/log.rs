//! One-line log records on stderr: `2026-11-23T17:30:00.123Z LEVEL message`.
//! The daemon logs every rejected request, dropped client and source error.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// RFC 3339 UTC time of `t` with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day) — H. Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn write(level: &str, msg: &str) {
    let line = format!("{} {level} {msg}\n", rfc3339(SystemTime::now()));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Something worth knowing.
pub fn info(msg: &str) {
    write("INFO", msg);
}

/// Something went wrong and was survived.
pub fn warn(msg: &str) {
    write("WARN", msg);
}

/// A failure that repeats (a source down for minutes fails every sample) is said once:
/// the first time, again only when its message changes, and once more when it ends
/// with how many times it happened. Every occurrence is still counted by the caller.
#[derive(Debug, Default)]
pub struct Repeated {
    /// The failing thing's message and how often it repeated, per `what`.
    failing: std::collections::HashMap<String, (String, u64)>,
}

impl Repeated {
    /// `what` failed with `msg`: the line to log, `None` while it repeats unchanged.
    pub fn failed(&mut self, what: &str, msg: &str) -> Option<String> {
        match self.failing.get_mut(what) {
            Some((last, n)) if last == msg => {
                *n += 1;
                None
            }
            _ => {
                self.failing.insert(what.to_string(), (msg.to_string(), 1));
                Some(format!("{what}: {msg}"))
            }
        }
    }

    /// `what` succeeded: the line saying it recovered, if it was failing.
    pub fn ok(&mut self, what: &str) -> Option<String> {
        let (msg, n) = self.failing.remove(what)?;
        Some(format!(
            "{what}: recovered after {n} failure{} (last: {msg})",
            if n == 1 { "" } else { "s" }
        ))
    }

    /// [`Self::failed`], logged as a warning.
    pub fn warn(&mut self, what: &str, msg: &str) {
        if let Some(line) = self.failed(what, msg) {
            warn(&line);
        }
    }

    /// [`Self::ok`], logged.
    pub fn info_ok(&mut self, what: &str) {
        if let Some(line) = self.ok(what) {
            info(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_repeated_failure_is_said_once_and_its_end_with_the_count() {
        let mut r = Repeated::default();
        assert_eq!(r.ok("source"), None);
        assert_eq!(r.failed("source", "down").as_deref(), Some("source: down"));
        assert_eq!(r.failed("source", "down"), None);
        assert_eq!(r.failed("drift", "x").as_deref(), Some("drift: x"));
        assert_eq!(r.failed("source", "down"), None);
        assert_eq!(
            r.failed("source", "refused").as_deref(),
            Some("source: refused"),
            "a new message is said"
        );
        assert_eq!(r.failed("source", "refused"), None);
        assert_eq!(
            r.ok("source").as_deref(),
            Some("source: recovered after 2 failures (last: refused)")
        );
        assert_eq!(r.ok("source"), None);
        assert_eq!(
            r.failed("source", "refused").as_deref(),
            Some("source: refused")
        );
    }

    #[test]
    fn formats_utc_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_000_000_123);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
