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

/// Value of each base64 character, 0xff for the others.
const B64_VALUE: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut i = 0;
    while i < 64 {
        t[B64[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Decodes base64 (RFC 4648 §4 alphabet, padding not allowed).
pub fn from_base64(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    from_base64_into(s.as_bytes(), &mut out)?;
    Ok(out)
}

/// Decodes base64 (RFC 4648 §4 alphabet, padding not allowed) onto the end of `out`,
/// four characters (three bytes) at a time through a table.
pub fn from_base64_into(s: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bad = |pos: usize| format!("packed column: byte {pos} is not base64");
    out.reserve(s.len() / 4 * 3 + 2);
    let quads = s.chunks_exact(4);
    let tail = quads.remainder();
    for (k, q) in quads.enumerate() {
        let v = [
            B64_VALUE[q[0] as usize],
            B64_VALUE[q[1] as usize],
            B64_VALUE[q[2] as usize],
            B64_VALUE[q[3] as usize],
        ];
        if (v[0] | v[1] | v[2] | v[3]) & 0xc0 != 0 {
            let j = v.iter().position(|&x| x == 0xff).unwrap_or(0);
            return Err(bad(4 * k + j));
        }
        let w =
            u32::from(v[0]) << 18 | u32::from(v[1]) << 12 | u32::from(v[2]) << 6 | u32::from(v[3]);
        out.extend_from_slice(&[(w >> 16) as u8, (w >> 8) as u8, w as u8]);
    }
    let (mut acc, mut bits) = (0u32, 0);
    for (j, &ch) in tail.iter().enumerate() {
        let v = B64_VALUE[ch as usize];
        if v == 0xff {
            return Err(bad(s.len() - tail.len() + j));
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(())
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

/// Decodes `n` values from base64; memory stays proportional to the input (a sparse
/// result when most values are zero).
pub fn decode(n: u32, s: &str) -> Result<Column, String> {
    decode_bytes(n, &from_base64(s)?)
}

/// Decodes `n` values from the varint bytes (base64 already undone). The result is dense
/// when `n` is at most twice the input's length (a busy column: every value takes a
/// byte or more, so the 8 bytes per value stay within 16× the input), sparse otherwise.
pub fn decode_bytes(n: u32, b: &[u8]) -> Result<Column, String> {
    if n as usize <= 2 * b.len() {
        decode_dense(n, b).map(Column::Dense)
    } else {
        decode_sparse(n, b)
    }
}

fn too_many(n: u32) -> String {
    format!("packed column: more than n = {n} values")
}

fn decode_dense(n: u32, b: &[u8]) -> Result<Vec<u64>, String> {
    let n = n as usize;
    let mut val = Vec::with_capacity(n);
    let mut pos = 0;
    while pos < b.len() {
        let x = get_varint(b, &mut pos)?;
        if x == 0 {
            let run = get_varint(b, &mut pos)?;
            let end = usize::try_from(run)
                .ok()
                .and_then(|r| val.len().checked_add(r)?.checked_add(1))
                .filter(|&e| e <= n)
                .ok_or_else(|| too_many(n as u32))?;
            val.resize(end, 0);
        } else {
            if val.len() >= n {
                return Err(too_many(n as u32));
            }
            val.push(x);
        }
    }
    if val.len() != n {
        return Err(format!("packed column: {} values but n = {n}", val.len()));
    }
    Ok(val)
}

fn decode_sparse(n: u32, b: &[u8]) -> Result<Column, String> {
    let (mut idx, mut val) = (Vec::<u32>::new(), Vec::new());
    let (mut i, mut pos) = (0u64, 0);
    while pos < b.len() {
        let x = get_varint(b, &mut pos)?;
        if x == 0 {
            i = i.saturating_add(get_varint(b, &mut pos)?.saturating_add(1));
        } else {
            if i >= u64::from(n) {
                return Err(too_many(n));
            }
            idx.push(i as u32);
            val.push(x);
            i += 1;
        }
        if i > u64::from(n) {
            return Err(too_many(n));
        }
    }
    if i != u64::from(n) {
        return Err(format!("packed column: {i} values but n = {n}"));
    }
    Ok(Column::Sparse { n, idx, val })
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
        // a zero run of 2^64 - 1 in either form: an error, no overflow
        let mut huge = vec![5, 0];
        huge.extend([0xff; 9]);
        huge.push(0x01);
        for n in [3, 100] {
            assert!(decode_bytes(n, &huge).unwrap_err().contains("more than n"));
        }
    }

    #[test]
    fn busy_columns_decode_dense_and_idle_ones_sparse() {
        let busy = Column::Dense((0..300u64).map(|i| (i % 7) * 1_000_003).collect());
        let idle = Column::Dense((0..300u64).map(|i| u64::from(i == 150) * 9).collect());
        for (c, dense) in [(busy, true), (idle, false)] {
            let back = decode(300, &to_base64(&encode(&c))).unwrap();
            assert_eq!(matches!(back, Column::Dense(_)), dense);
            assert_eq!(back, c);
        }
    }

    #[test]
    fn table_base64_matches_the_bitwise_one() {
        for len in 0..40usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let s = to_base64(&bytes);
            assert_eq!(from_base64(&s).unwrap(), bytes, "{s}");
            for bad in 0..s.len() {
                let mut t = s.clone().into_bytes();
                t[bad] = b'=';
                let e = from_base64(std::str::from_utf8(&t).unwrap()).unwrap_err();
                assert!(e.contains(&format!("byte {bad} ")), "{e}");
            }
        }
    }
}
