//! Wire formats of the congestion testbed. Every format has two levels (STYLE.md
//! point 9, after smoltcp `wire`): a zero-copy `Packet<T: AsRef<[u8]>>` view with
//! `new_checked` and named field ranges, and a `Repr` with `parse` / `emit` /
//! `buffer_len`. Malformed input is an [`WireError`], never a panic.
//!
//! - [`ethernet`]: Ethernet II header.
//! - [`ipv4`]: IPv4 header (DSCP, ECN, checksum; ECN rewrite with a correct checksum).
//! - [`udp`]: UDP header.
//! - [`ib`]: InfiniBand BTH and AETH as carried by RoCEv2 (IBTA Vol. 1 §9.2, §9.3.5),
//!   and the RoCEv2 ICRC (IBTA Annex A17.3.3).
//! - [`pfc`]: 802.1Qbb priority flow control frames (MAC control, opcode 0x0101).
//! - [`roce`]: a whole RoCEv2 frame (Ethernet/IPv4/UDP 4791/BTH[/AETH]/payload/ICRC).

pub mod ethernet;
pub mod ib;
pub mod ipv4;
pub mod pfc;
pub mod roce;
pub mod udp;

/// Why a frame could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer is shorter than the header (or than a length field says).
    #[error("truncated")]
    Truncated,
    /// A field has a value this parser does not accept.
    #[error("malformed field: {0}")]
    Malformed(&'static str),
    /// A checksum or CRC does not match.
    #[error("bad checksum: {0}")]
    Checksum(&'static str),
}

/// Result of parsing.
pub type WireResult<T> = core::result::Result<T, WireError>;

pub(crate) type Field = core::ops::Range<usize>;

pub(crate) fn be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

pub(crate) fn put16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
