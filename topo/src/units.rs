//! Link rates: bits per second as `u64`, parsed from `400G`, `200Gb/s`, `100 Gbit/s`,
//! `25000M`, `1.6T` or a plain integer (bits/s).

use std::fmt;

/// Rates must be below this (10^18 bits/s), so sums over a fabric's links stay in range.
pub const MAX_BPS: u64 = 1_000_000_000_000_000_000;

/// A line rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(pub u64);

impl Rate {
    /// Gigabits per second.
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    /// Bits per second.
    pub fn bps(self) -> u64 {
        self.0
    }
    /// Parses `400G`, `400Gb/s`, `400 Gbit/s`, `1.6T`, `100M`, `10000000000`.
    pub fn parse(s: &str) -> Result<Rate, String> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let mut body = lower.as_str();
        for suffix in ["bit/s", "bps", "b/s", "bit", "b"] {
            if let Some(x) = body.strip_suffix(suffix) {
                body = x;
                break;
            }
        }
        let body = body.trim_end();
        let (num, mult) = match body.chars().last() {
            Some('k') => (&body[..body.len() - 1], 1e3),
            Some('m') => (&body[..body.len() - 1], 1e6),
            Some('g') => (&body[..body.len() - 1], 1e9),
            Some('t') => (&body[..body.len() - 1], 1e12),
            _ => (body, 1.0),
        };
        let v: f64 = num.trim().parse().map_err(|_| {
            format!(
                "`{s}` is not a rate (expected e.g. \"400G\", \"200Gb/s\" or bits/s as an integer)"
            )
        })?;
        let bps = v * mult;
        if !(bps.is_finite() && (1.0..MAX_BPS as f64).contains(&bps)) {
            return Err(format!("`{s}` is out of range for a link rate"));
        }
        Ok(Rate(bps.round() as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        let (x, u) = if v >= 1e12 {
            (v / 1e12, "Tb/s")
        } else if v >= 1e9 {
            (v / 1e9, "Gb/s")
        } else if v >= 1e6 {
            (v / 1e6, "Mb/s")
        } else {
            (v, "b/s")
        };
        if (x - x.round()).abs() < 1e-9 {
            write!(f, "{}{u}", x.round() as u64)
        } else {
            write!(f, "{x:.2}{u}")
        }
    }
}

impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate such as \"400G\" or an integer number of bits/s")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
                if v == 0 {
                    return Err(E::custom("a link rate must be positive"));
                }
                if v >= MAX_BPS {
                    return Err(E::custom(format!(
                        "{v} bits/s is out of range for a link rate (expected less than 10^18)"
                    )));
                }
                Ok(Rate(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Rate, E> {
                if v <= 0 {
                    return Err(E::custom("a link rate must be positive"));
                }
                self.visit_u64(v as u64)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rate, E> {
                Rate::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(Rate::parse("400G").unwrap(), Rate::gbps(400));
        assert_eq!(Rate::parse("200Gb/s").unwrap(), Rate::gbps(200));
        assert_eq!(Rate::parse("100 Gbit/s").unwrap(), Rate::gbps(100));
        assert_eq!(Rate::parse("1.6T").unwrap(), Rate::gbps(1600));
        assert_eq!(Rate::parse("25000M").unwrap(), Rate::gbps(25));
        assert_eq!(Rate::parse("1000").unwrap(), Rate(1000));
        assert!(Rate::parse("fast").unwrap_err().contains("not a rate"));
        assert!(Rate::parse("-5G").is_err());
        assert_eq!(Rate::gbps(400).to_string(), "400Gb/s");
        assert_eq!(Rate::gbps(1600).to_string(), "1.60Tb/s");
    }
}
