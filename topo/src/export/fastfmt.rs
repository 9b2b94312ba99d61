//! Small formatting helpers for the hot loops of the exporters: decimal and hex
//! integers and IPv4 addresses appended to a byte buffer without going through
//! `core::fmt` (several times faster on the millions of lines a 100k-GPU export
//! writes).

use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::addressing::{V4Net, V6Net};

/// Appends `v` in decimal.
pub fn dec(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Appends `v` in decimal, zero-padded to at least `width` digits.
pub fn dec_pad(buf: &mut Vec<u8>, v: u64, width: usize) {
    let start = buf.len();
    dec(buf, v);
    let n = buf.len() - start;
    if n < width {
        buf.splice(start..start, std::iter::repeat_n(b'0', width - n));
    }
}

/// Appends `v` as lower-case hex, zero-padded to `width` digits.
pub fn hex_pad(buf: &mut Vec<u8>, v: u64, width: usize) {
    const D: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - v.leading_zeros() as usize).div_ceil(4).max(1);
    for _ in digits..width {
        buf.push(b'0');
    }
    for k in (0..digits).rev() {
        buf.push(D[((v >> (4 * k)) & 0xf) as usize]);
    }
}

/// Appends a dotted-quad IPv4 address.
pub fn ipv4(buf: &mut Vec<u8>, a: Ipv4Addr) {
    let o = a.octets();
    for (i, b) in o.iter().enumerate() {
        if i > 0 {
            buf.push(b'.');
        }
        dec(buf, u64::from(*b));
    }
}

/// Appends `addr/len`.
pub fn v4net(buf: &mut Vec<u8>, n: V4Net) {
    ipv4(buf, n.addr);
    buf.push(b'/');
    dec(buf, u64::from(n.len));
}

/// Appends an IPv6 address (RFC 5952 text, through `core::fmt`: IPv6 lines are
/// the minority and the zero-compression rules are not worth duplicating).
pub fn ipv6(buf: &mut Vec<u8>, a: Ipv6Addr) {
    let _ = write!(buf, "{a}");
}

/// Appends `addr/len` of an IPv6 prefix.
pub fn v6net(buf: &mut Vec<u8>, n: V6Net) {
    ipv6(buf, n.addr);
    buf.push(b'/');
    dec(buf, u64::from(n.len));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn same_as_core_fmt(v: u64, w in 0usize..20, ip: u32) {
            let mut b = Vec::new();
            dec(&mut b, v);
            prop_assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
            let mut b = Vec::new();
            dec_pad(&mut b, v, w);
            prop_assert_eq!(String::from_utf8(b).unwrap(), format!("{v:0w$}"));
            let mut b = Vec::new();
            hex_pad(&mut b, v, w);
            prop_assert_eq!(String::from_utf8(b).unwrap(), format!("{v:0w$x}"));
            let mut b = Vec::new();
            ipv4(&mut b, Ipv4Addr::from(ip));
            prop_assert_eq!(String::from_utf8(b).unwrap(), Ipv4Addr::from(ip).to_string());
        }
    }
}
