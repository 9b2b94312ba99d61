//! Unit newtypes: time in integer picoseconds, sizes in bytes, rates in bit/s.
//!
//! Picoseconds in a `u64` give 213 days of range and exact serialisation times:
//! one byte at 800 Gb/s is 10 ps.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use serde::{Deserialize, Serialize};

const PS_PER_NS: u64 = 1_000;
const PS_PER_US: u64 = 1_000_000;
const PS_PER_MS: u64 = 1_000_000_000;
const PS_PER_S: u64 = 1_000_000_000_000;

/// A point in (simulated or real) time, in picoseconds since an arbitrary epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Instant(u64);

/// A span of time in picoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Duration(u64);

/// A number of bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Bytes(pub u64);

/// A data rate in bits per second.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Rate(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant (≈213 days after the epoch).
    pub const MAX: Instant = Instant(u64::MAX);

    pub const fn from_picos(ps: u64) -> Self {
        Instant(ps)
    }
    pub const fn picos(self) -> u64 {
        self.0
    }
    pub const fn nanos(self) -> u64 {
        self.0 / PS_PER_NS
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later than `self`.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.0.checked_add(d.0) {
            Some(v) => Some(Instant(v)),
            None => None,
        }
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
}

const fn scale(n: u64, unit: u64) -> u64 {
    match n.checked_mul(unit) {
        Some(v) => v,
        None => panic!("duration overflows u64 picoseconds"),
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn picos(ps: u64) -> Self {
        Duration(ps)
    }
    pub const fn nanos(ns: u64) -> Self {
        Duration(scale(ns, PS_PER_NS))
    }
    pub const fn micros(us: u64) -> Self {
        Duration(scale(us, PS_PER_US))
    }
    pub const fn millis(ms: u64) -> Self {
        Duration(scale(ms, PS_PER_MS))
    }
    pub const fn secs(s: u64) -> Self {
        Duration(scale(s, PS_PER_S))
    }
    /// From floating-point seconds, rounded to the nearest picosecond (saturating).
    pub fn from_secs_f64(s: f64) -> Self {
        Duration((s * PS_PER_S as f64).round().clamp(0.0, u64::MAX as f64) as u64)
    }
    pub const fn as_picos(self) -> u64 {
        self.0
    }
    pub const fn as_nanos(self) -> u64 {
        self.0 / PS_PER_NS
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / PS_PER_US as f64
    }
    pub const fn saturating_sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
    pub const fn checked_add(self, o: Duration) -> Option<Duration> {
        match self.0.checked_add(o.0) {
            Some(v) => Some(Duration(v)),
            None => None,
        }
    }
    /// Multiply by a float factor (e.g. 0.75·RTT), rounded, saturating.
    pub fn mul_f64(self, f: f64) -> Duration {
        Duration((self.0 as f64 * f).round().clamp(0.0, u64::MAX as f64) as u64)
    }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    /// Decimal kilobytes (1 KB = 1000 B), as papers and switch configs count them.
    pub const fn kb(n: u64) -> Self {
        Bytes(scale(n, 1_000))
    }
    /// Decimal megabytes (1 MB = 10⁶ B).
    pub const fn mb(n: u64) -> Self {
        Bytes(scale(n, 1_000_000))
    }
    pub const fn kib(n: u64) -> Self {
        Bytes(n * 1024)
    }
    pub const fn mib(n: u64) -> Self {
        Bytes(n * 1024 * 1024)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
    pub const fn bits(self) -> u64 {
        self.0 * 8
    }
    pub const fn saturating_sub(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(o.0))
    }
    /// Multiply by a float factor, rounded to the nearest byte (saturating at zero).
    pub fn mul_f64(self, f: f64) -> Bytes {
        Bytes((self.0 as f64 * f).round().clamp(0.0, u64::MAX as f64) as u64)
    }
}

impl Rate {
    pub const ZERO: Rate = Rate(0);

    pub const fn bps(b: u64) -> Self {
        Rate(b)
    }
    pub const fn kbps(k: u64) -> Self {
        Rate(scale(k, 1_000))
    }
    pub const fn mbps(m: u64) -> Self {
        Rate(scale(m, 1_000_000))
    }
    pub const fn gbps(g: u64) -> Self {
        Rate(scale(g, 1_000_000_000))
    }
    /// From floating-point bit/s, rounded (saturating at zero).
    pub fn from_bps_f64(b: f64) -> Self {
        Rate(b.round().clamp(0.0, u64::MAX as f64) as u64)
    }
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Serialisation time of `b` at this rate, rounded up to the next picosecond.
    /// A zero rate gives [`Duration::MAX`].
    pub fn tx_time(self, b: Bytes) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        let ps = (b.0 as u128 * 8 * PS_PER_S as u128).div_ceil(self.0 as u128);
        Duration(ps.min(u64::MAX as u128) as u64)
    }
    /// Bytes sent at this rate during `d` (rounded down).
    pub fn bytes_in(self, d: Duration) -> Bytes {
        let b = self.0 as u128 * d.0 as u128 / (8 * PS_PER_S as u128);
        Bytes(b.min(u64::MAX as u128) as u64)
    }
    /// Bandwidth-delay product.
    pub fn bdp(self, rtt: Duration) -> Bytes {
        self.bytes_in(rtt)
    }
    /// Multiply by a float factor, rounded, saturating.
    pub fn mul_f64(self, f: f64) -> Rate {
        Rate::from_bps_f64(self.0 as f64 * f)
    }
    /// The rate as floating-point bit/s (for algorithms that compute in `f64`).
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }
    /// The rate at which `b` bytes are carried in `d` (rounded down); zero for an empty span.
    pub fn from_bytes_per(b: Bytes, d: Duration) -> Rate {
        if d.0 == 0 {
            return Rate::ZERO;
        }
        let r = b.0 as u128 * 8 * PS_PER_S as u128 / d.0 as u128;
        Rate(r.min(u64::MAX as u128) as u64)
    }
    pub const fn saturating_add(self, o: Rate) -> Rate {
        Rate(self.0.saturating_add(o.0))
    }
    pub const fn saturating_sub(self, o: Rate) -> Rate {
        Rate(self.0.saturating_sub(o.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.checked_add(d.0).expect("Instant overflow"))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}
/// `a - b` for instants is saturating: a time before `b` gives zero.
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, o: Instant) -> Duration {
        self.saturating_since(o)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.checked_add(o.0).expect("Duration overflow"))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, o: Duration) {
        *self = *self + o;
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, o: Duration) -> Duration {
        self.saturating_sub(o)
    }
}
impl Mul<u64> for Bytes {
    type Output = Bytes;
    fn mul(self, k: u64) -> Bytes {
        Bytes(self.0.checked_mul(k).expect("Bytes overflow"))
    }
}
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, k: u64) -> Duration {
        Duration(self.0.checked_mul(k).expect("Duration overflow"))
    }
}
impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, k: u64) -> Duration {
        Duration(self.0 / k)
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.0 += o.0;
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, o: Bytes) -> Bytes {
        self.saturating_sub(o)
    }
}
impl SubAssign for Bytes {
    fn sub_assign(&mut self, o: Bytes) {
        *self = *self - o;
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= PS_PER_S {
            write!(f, "{:.3} s", ps as f64 / PS_PER_S as f64)
        } else if ps >= PS_PER_MS {
            write!(f, "{:.3} ms", ps as f64 / PS_PER_MS as f64)
        } else if ps >= PS_PER_US {
            write!(f, "{:.3} µs", ps as f64 / PS_PER_US as f64)
        } else {
            write!(f, "{:.3} ns", ps as f64 / PS_PER_NS as f64)
        }
    }
}
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}", Duration(self.0))
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if b >= 1e9 {
            write!(f, "{:.3} Gb/s", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{:.3} Mb/s", b / 1e6)
        } else {
            write!(f, "{:.0} b/s", b)
        }
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_time_is_exact() {
        assert_eq!(Rate::gbps(100).tx_time(Bytes(1250)), Duration::nanos(100));
        assert_eq!(Rate::gbps(800).tx_time(Bytes(1)), Duration::picos(10));
        // 4096 B at 400 Gb/s = 81.92 ns
        assert_eq!(
            Rate::gbps(400).tx_time(Bytes(4096)),
            Duration::picos(81_920)
        );
        // rounds up
        assert_eq!(
            Rate::bps(3).tx_time(Bytes(1)),
            Duration::picos(2_666_666_666_667)
        );
    }

    #[test]
    fn bdp() {
        // 100 Gb/s × 14.02 µs = 175,250 B
        assert_eq!(Rate::gbps(100).bdp(Duration::nanos(14_020)), Bytes(175_250));
    }

    #[test]
    fn helpers_added_for_the_algorithms() {
        assert_eq!(Bytes::kb(5), Bytes(5_000));
        assert_eq!(Bytes::mb(10), Bytes(10_000_000));
        assert_eq!(Bytes(175_284).mul_f64(1.5), Bytes(262_926));
        assert_eq!(Bytes(4150) * 8, Bytes(33_200));
        // 125,000 B in 10 µs is 100 Gb/s; an empty span is no rate.
        assert_eq!(
            Rate::from_bytes_per(Bytes(125_000), Duration::micros(10)),
            Rate::gbps(100)
        );
        assert_eq!(Rate::from_bytes_per(Bytes(1), Duration::ZERO), Rate::ZERO);
        assert_eq!(Rate::gbps(1).saturating_sub(Rate::gbps(2)), Rate::ZERO);
        assert_eq!(
            Rate::bps(u64::MAX).saturating_add(Rate::bps(1)),
            Rate::bps(u64::MAX)
        );
    }

    #[test]
    fn instant_arithmetic_saturates_backwards() {
        let a = Instant::ZERO + Duration::micros(5);
        let b = Instant::ZERO + Duration::micros(7);
        assert_eq!(b - a, Duration::micros(2));
        assert_eq!(a - b, Duration::ZERO);
    }
}
