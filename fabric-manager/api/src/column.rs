//! [`Column`]: one value per port (or per flow), stored dense or sparse.
//!
//! In JSON a column is one of
//! * a dense array `[v0, v1, …]`;
//! * a sparse object `{"n": N, "i": [indices…], "v": [values…]}` (indices strictly
//!   increasing, every value non-zero), when most values are zero;
//! * a packed object `{"n": N, "p": "<base64>"}` (see [`crate::packed`]: LEB128 varints,
//!   zero runs as `0, run − 1`), only for columns of [`PACK_MIN`] entries or more, where
//!   nobody reads the numbers by eye.
//!
//! The writer picks whichever is shortest ([`Column::serialize`]); readers accept all. A sparse column stays sparse in memory,
//! so a small input never allocates more than its own size (`n` alone allocates nothing).

use crate::packed;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Columns shorter than this are never written packed (they stay readable).
pub const PACK_MIN: usize = 256;

/// One `u64` per index, dense or sparse. Equality is by value, not by representation.
#[derive(Clone, Debug)]
pub enum Column {
    /// Every value, in index order.
    Dense(Vec<u64>),
    /// Only the non-zero values.
    Sparse {
        /// Number of indices (the column's length).
        n: u32,
        /// Indices of the non-zero values, strictly increasing, each `< n`.
        idx: Vec<u32>,
        /// The values, same length as `idx`.
        val: Vec<u64>,
    },
}

impl Default for Column {
    fn default() -> Self {
        Column::Dense(Vec::new())
    }
}

impl Column {
    /// `n` zeros (sparse, allocates nothing).
    pub fn zeros(n: usize) -> Self {
        Column::Sparse {
            n: n as u32,
            idx: Vec::new(),
            val: Vec::new(),
        }
    }

    /// Length (number of ports or flows).
    pub fn len(&self) -> usize {
        match self {
            Column::Dense(v) => v.len(),
            Column::Sparse { n, .. } => *n as usize,
        }
    }

    /// True when the column has no index at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value at `i` (0 past the end or where a sparse column has no entry).
    pub fn get(&self, i: usize) -> u64 {
        match self {
            Column::Dense(v) => v.get(i).copied().unwrap_or(0),
            Column::Sparse { idx, val, .. } => match idx.binary_search(&(i as u32)) {
                Ok(k) => val[k],
                Err(_) => 0,
            },
        }
    }

    /// Every value in index order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            Column::Dense(v) => Box::new(v.iter().copied()),
            Column::Sparse { n, idx, val } => {
                let mut k = 0;
                Box::new((0..*n).map(move |i| {
                    if idx.get(k) == Some(&i) {
                        k += 1;
                        val[k - 1]
                    } else {
                        0
                    }
                }))
            }
        }
    }

    /// `(index, value)` of the non-zero values, in index order.
    pub fn nonzero(&self) -> Box<dyn Iterator<Item = (usize, u64)> + '_> {
        match self {
            Column::Dense(v) => Box::new(v.iter().copied().enumerate().filter(|&(_, x)| x != 0)),
            Column::Sparse { idx, val, .. } => {
                Box::new(idx.iter().zip(val.iter()).map(|(&i, &x)| (i as usize, x)))
            }
        }
    }

    /// Sum of all values (saturating).
    pub fn sum(&self) -> u64 {
        self.nonzero().fold(0u64, |a, (_, x)| a.saturating_add(x))
    }

    /// All values as a vector.
    pub fn to_dense(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// Adds each value into `out` at its index (saturating), in one pass; indices past the
    /// end of `out` are ignored.
    pub fn add_to(&self, out: &mut [u64]) {
        match self {
            Column::Dense(v) => {
                for (o, &x) in out.iter_mut().zip(v) {
                    *o = o.saturating_add(x);
                }
            }
            Column::Sparse { idx, val, .. } => {
                for (&i, &x) in idx.iter().zip(val) {
                    if let Some(o) = out.get_mut(i as usize) {
                        *o = o.saturating_add(x);
                    }
                }
            }
        }
    }

    /// True when every value is zero.
    pub fn all_zero(&self) -> bool {
        self.nonzero().next().is_none()
    }
}

impl From<Vec<u64>> for Column {
    fn from(v: Vec<u64>) -> Self {
        Column::Dense(v)
    }
}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.nonzero().eq(other.nonzero())
    }
}

impl Eq for Column {}

/// Decimal digits of `x` (JSON length of the number).
fn digits(x: u64) -> usize {
    x.checked_ilog10().map_or(1, |d| d as usize + 1)
}

impl Serialize for Column {
    /// The shortest of dense, sparse and (from [`PACK_MIN`] entries) packed, counting
    /// JSON characters.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.len();
        let (mut dense_len, mut sparse_len) = (n, 16 + digits(n as u64));
        for (i, x) in self.nonzero() {
            dense_len += digits(x) - 1;
            sparse_len += digits(i as u64) + digits(x) + 2;
        }
        let packed_len = if n >= PACK_MIN {
            14 + digits(n as u64) + packed::b64_len(packed::encoded_len(self))
        } else {
            usize::MAX
        };
        if packed_len < dense_len.min(sparse_len) {
            let mut m = s.serialize_map(Some(2))?;
            m.serialize_entry("n", &(n as u32))?;
            m.serialize_entry("p", &packed::to_base64(&packed::encode(self)))?;
            m.end()
        } else if dense_len <= sparse_len {
            s.collect_seq(self.iter())
        } else {
            let (idx, val): (Vec<u32>, Vec<u64>) =
                self.nonzero().map(|(i, x)| (i as u32, x)).unzip();
            let mut m = s.serialize_map(Some(3))?;
            m.serialize_entry("n", &(n as u32))?;
            m.serialize_entry("i", &idx)?;
            m.serialize_entry("v", &val)?;
            m.end()
        }
    }
}

struct ColumnVisitor;

impl<'de> Visitor<'de> for ColumnVisitor {
    type Value = Column;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of counters, a sparse column {\"n\", \"i\", \"v\"} or a packed one {\"n\", \"p\"}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Column, A::Error> {
        // The size hint comes from the input; never trust it beyond a small reservation.
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(x) = seq.next_element::<u64>()? {
            v.push(x);
        }
        if v.len() > u32::MAX as usize {
            return Err(de::Error::custom("column longer than 2^32 - 1 entries"));
        }
        Ok(Column::Dense(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Column, A::Error> {
        let (mut n, mut idx, mut val) = (None, None::<Vec<u32>>, None::<Vec<u64>>);
        let mut packed = None::<PackedBytes>;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "n" => n = Some(map.next_value::<u32>()?),
                "i" => idx = Some(map.next_value()?),
                "v" => val = Some(map.next_value()?),
                "p" => packed = Some(map.next_value()?),
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let n = n.ok_or_else(|| de::Error::missing_field("n"))?;
        if let Some(p) = packed {
            if idx.is_some() || val.is_some() {
                return Err(de::Error::custom(
                    "a column is either packed (p) or sparse (i, v)",
                ));
            }
            return packed::decode_bytes(n, &p.0).map_err(de::Error::custom);
        }
        let idx = idx.unwrap_or_default();
        let val = val.unwrap_or_default();
        sparse_checked(n, idx, val).map_err(de::Error::custom)
    }
}

/// The bytes of a packed column's `p`, base64 undone straight from the JSON text (no
/// `String` in between).
struct PackedBytes(Vec<u8>);

impl<'de> Deserialize<'de> for PackedBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PackedBytes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a base64 string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<PackedBytes, E> {
                let mut out = Vec::new();
                packed::from_base64_into(s.as_bytes(), &mut out).map_err(E::custom)?;
                Ok(PackedBytes(out))
            }
        }
        d.deserialize_str(V)
    }
}

/// A sparse column after checking its invariants (the message names the broken one).
fn sparse_checked(n: u32, idx: Vec<u32>, val: Vec<u64>) -> Result<Column, String> {
    if idx.len() != val.len() {
        return Err(format!(
            "sparse column: {} indices but {} values",
            idx.len(),
            val.len()
        ));
    }
    if let Some(w) = idx.windows(2).find(|w| w[0] >= w[1]) {
        return Err(format!(
            "sparse column: indices must be strictly increasing ({} then {})",
            w[0], w[1]
        ));
    }
    if let Some(&last) = idx.last()
        && last >= n
    {
        return Err(format!("sparse column: index {last} is not below n = {n}"));
    }
    // Zero values are legal but pointless; drop them so equality stays by value.
    let (idx, val) = idx.into_iter().zip(val).filter(|&(_, x)| x != 0).unzip();
    Ok(Column::Sparse { n, idx, val })
}

impl<'de> Deserialize<'de> for Column {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ColumnVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_shorter_form_and_reads_both() {
        let mut v = vec![0u64; 100];
        v[7] = 12345;
        let c = Column::Dense(v.clone());
        let s = serde_json::to_string(&c).unwrap();
        assert_eq!(s, r#"{"n":100,"i":[7],"v":[12345]}"#);
        let back: Column = serde_json::from_str(&s).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.to_dense(), v);
        let full = Column::Dense((1..=5).collect());
        assert_eq!(serde_json::to_string(&full).unwrap(), "[1,2,3,4,5]");
        assert_eq!(Column::zeros(3), Column::Dense(vec![0, 0, 0]));
        assert_eq!(Column::zeros(3).sum(), 0);
    }

    #[test]
    fn long_busy_columns_are_packed() {
        let v: Vec<u64> = (0..1000u64)
            .map(|i| 180_000_000_000_000 + i * 7919)
            .collect();
        let c = Column::Dense(v);
        let s = serde_json::to_string(&c).unwrap();
        assert!(s.starts_with(r#"{"n":1000,"p":""#), "{}", &s[..40]);
        let dense: usize = c.iter().map(|x| digits(x) + 1).sum();
        assert!(s.len() * 10 < dense * 7, "{} vs {dense}", s.len());
        assert_eq!(serde_json::from_str::<Column>(&s).unwrap(), c);
        let e = serde_json::from_str::<Column>(r#"{"n":3,"p":"AA","i":[]}"#).unwrap_err();
        assert!(e.to_string().contains("either packed"));
    }

    #[test]
    fn rejects_broken_sparse_columns() {
        for (bad, want) in [
            (r#"{"n":4,"i":[1,1],"v":[2,3]}"#, "strictly increasing"),
            (r#"{"n":4,"i":[4],"v":[2]}"#, "not below n"),
            (r#"{"n":4,"i":[1],"v":[]}"#, "1 indices but 0 values"),
            (r#"{"i":[1],"v":[2]}"#, "missing field `n`"),
            (r#"[1,-2]"#, "invalid value"),
        ] {
            let e = serde_json::from_str::<Column>(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
