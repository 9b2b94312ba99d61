//! The packed column payload: LEB128 varints, zero runs as `0, run − 1`, in base64
//! (RFC 4648 §4 alphabet, no padding). A busy counter of 15 decimal digits takes 9–10
//! characters instead of 16, and a run of zeros of any length 2–4.

use crate::Column;

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Bytes of `x` as a LEB128 varint.
pub fn varint_len(x: u64) -> usize {
    (64 - (x | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Characters of base64 without padding for `bytes` bytes.
pub fn b64_len(bytes: usize) -> usize {
    (bytes * 4).div_ceil(3)
}

/// The varint bytes of a column (before base64).
pub fn encode(c: &Column) -> Vec<u8> {
    let mut out = Vec::new();
    let mut zeros = 0u64;
    for x in c.iter() {
        if x == 0 {
            zeros += 1;
            continue;
        }
        if zeros > 0 {
            put_varint(&mut out, 0);
            put_varint(&mut out, zeros - 1);
            zeros = 0;
        }
        put_varint(&mut out, x);
    }
    if zeros > 0 {
        put_varint(&mut out, 0);
        put_varint(&mut out, zeros - 1);
    }
    out
}

/// Length in varint bytes of [`encode`]'s output, without building it.
pub fn encoded_len(c: &Column) -> usize {
    let (mut len, mut prev) = (0, None::<usize>);
    let n = c.len();
    for (i, x) in c.nonzero() {
        let gap = i - prev.map_or(0, |p| p + 1);
        if gap > 0 {
            len += 1 + varint_len(gap as u64 - 1);
        }
        len += varint_len(x);
        prev = Some(i);
    }
    let tail = n - prev.map_or(0, |p| p + 1);
    if tail > 0 {
        len += 1 + varint_len(tail as u64 - 1);
    }
    len
}

/// Encodes base64 (RFC 4648 §4 alphabet) without padding.
pub fn to_base64(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(b64_len(bytes.len()));
    for ch in bytes.chunks(3) {
        let w = ch
            .iter()
            .enumerate()
            .fold(0u32, |w, (i, &b)| w | (u32::from(b) << (16 - 8 * i)));
        for k in 0..=ch.len() {
            s.push(B64[(w >> (18 - 6 * k)) as usize & 63] as char);
        }
    }
    s
}

/// Decodes base64 (RFC 4648 §4 alphabet, padding not allowed).
pub fn from_base64(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0);
    for (pos, ch) in s.bytes().enumerate() {
        let v = match ch {
            b'A'..=b'Z' => ch - b'A',
            b'a'..=b'z' => ch - b'a' + 26,
            b'0'..=b'9' => ch - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("packed column: byte {pos} is not base64")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

fn get_varint(b: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b
            .get(*pos)
            .ok_or("packed column: a varint runs past the end")?;
        *pos += 1;
        x |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(x);
        }
    }
    Err("packed column: a varint is longer than 10 bytes".into())
}

/// Decodes `n` values; memory stays proportional to the input (a sparse result when
/// most values are zero).
pub fn decode(n: u32, s: &str) -> Result<Column, String> {
    let b = from_base64(s)?;
    // `idx` is filled only once a zero run shows the column is not dense.
    let (mut idx, mut val) = (Vec::<u32>::new(), Vec::new());
    let (mut i, mut pos, mut dense) = (0u64, 0, true);
    while pos < b.len() {
        let x = get_varint(&b, &mut pos)?;
        if x == 0 {
            if dense {
                idx.extend(0..val.len() as u32);
                dense = false;
            }
            i += get_varint(&b, &mut pos)?.saturating_add(1);
        } else {
            if i >= u64::from(n) {
                return Err(format!("packed column: more than n = {n} values"));
            }
            if !dense {
                idx.push(i as u32);
            }
            val.push(x);
            i += 1;
        }
        if i > u64::from(n) {
            return Err(format!("packed column: more than n = {n} values"));
        }
    }
    if i != u64::from(n) {
        return Err(format!("packed column: {i} values but n = {n}"));
    }
    Ok(if dense {
        Column::Dense(val)
    } else {
        Column::Sparse { n, idx, val }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_counts_right() {
        let cols = [
            Column::Dense(vec![0, 0, 5, 0, u64::MAX, 127, 128, 0]),
            Column::Dense(vec![]),
            Column::Dense(vec![1]),
            Column::zeros(1000),
        ];
        for c in cols {
            let bytes = encode(&c);
            assert_eq!(bytes.len(), encoded_len(&c));
            let s = to_base64(&bytes);
            assert_eq!(s.len(), b64_len(bytes.len()));
            assert_eq!(decode(c.len() as u32, &s).unwrap(), c);
        }
        assert_eq!(to_base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(to_base64(b"fo"), "Zm8");
        assert!(decode(2, "!!").unwrap_err().contains("not base64"));
        assert!(
            decode(1, &to_base64(&[3, 4]))
                .unwrap_err()
                .contains("more than n = 1")
        );
        assert!(
            decode(3, &to_base64(&[3]))
                .unwrap_err()
                .contains("1 values but n = 3")
        );
        assert!(
            decode(3, &to_base64(&[0x80]))
                .unwrap_err()
                .contains("past the end")
        );
        assert!(
            decode(3, &to_base64(&[0xff; 11]))
                .unwrap_err()
                .contains("longer than 10")
        );
    }
}
