//! IPv4 header (RFC 791) with DSCP and ECN (RFC 2474, RFC 3168). Only option-less
//! headers (IHL = 5) are accepted: RoCEv2 never sends options.

use std::net::Ipv4Addr;

use super::{Field, WireError, WireResult, be16, internet_checksum, put16};

mod field {
    use super::Field;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLAGS_FRAG: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC: Field = 12..16;
    pub const DST: Field = 16..20;
}

/// Header length (no options).
pub const HEADER_LEN: usize = 20;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// ECN codepoints (RFC 3168 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecn {
    NotEct = 0,
    Ect1 = 1,
    Ect0 = 2,
    Ce = 3,
}

impl Ecn {
    pub fn from_bits(b: u8) -> Ecn {
        match b & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

/// A view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// A view: version 4, IHL 5, total length within the buffer.
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[field::VER_IHL] != 0x45 {
            return Err(WireError::Malformed("ipv4 version/ihl (expected 0x45)"));
        }
        let len = be16(b, field::LENGTH) as usize;
        if len < HEADER_LEN {
            return Err(WireError::Malformed("ipv4 total length"));
        }
        if len > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buffer })
    }
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::TOS] >> 2
    }
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.buffer.as_ref()[field::TOS])
    }
    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT)
    }
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
    pub fn src(&self) -> Ipv4Addr {
        let b: [u8; 4] = self.buffer.as_ref()[field::SRC].try_into().expect("4");
        b.into()
    }
    pub fn dst(&self) -> Ipv4Addr {
        let b: [u8; 4] = self.buffer.as_ref()[field::DST].try_into().expect("4");
        b.into()
    }
    /// Whether the header checksum is valid.
    pub fn verify_checksum(&self) -> bool {
        internet_checksum(&self.buffer.as_ref()[..HEADER_LEN]) == 0
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.total_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Recompute the header checksum.
    pub fn fill_checksum(&mut self) {
        put16(self.buffer.as_mut(), field::CHECKSUM, 0);
        let c = internet_checksum(&self.buffer.as_ref()[..HEADER_LEN]);
        put16(self.buffer.as_mut(), field::CHECKSUM, c);
    }
    /// Set the ECN bits and update the checksum incrementally (RFC 1624 eqn. 3), so a
    /// switch can mark CE without touching anything else.
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = self.buffer.as_mut();
        let old_word = u16::from_be_bytes([b[0], b[1]]);
        b[field::TOS] = (b[field::TOS] & !3) | ecn as u8;
        let new_word = u16::from_be_bytes([b[0], b[1]]);
        let hc = be16(b, field::CHECKSUM);
        // HC' = ~(~HC + ~m + m')
        let mut sum = (!hc) as u32 + (!old_word) as u32 + new_word as u32;
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        put16(b, field::CHECKSUM, !(sum as u16));
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = self.total_len() as usize;
        &mut self.buffer.as_mut()[HEADER_LEN..len]
    }
}

/// The fields of an IPv4 header we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub dscp: u8,
    pub ecn: Ecn,
    pub ident: u16,
    pub ttl: u8,
    pub protocol: u8,
    pub payload_len: usize,
}

impl Repr {
    /// Parse, rejecting a bad checksum and fragments.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        if !p.verify_checksum() {
            return Err(WireError::Checksum("ipv4 header"));
        }
        let ff = be16(p.buffer.as_ref(), field::FLAGS_FRAG);
        if ff & 0x3fff != 0 {
            return Err(WireError::Malformed("ipv4 fragment"));
        }
        Ok(Repr {
            src: p.src(),
            dst: p.dst(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            ident: p.ident(),
            ttl: p.ttl(),
            protocol: p.protocol(),
            payload_len: p.total_len() as usize - HEADER_LEN,
        })
    }
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Emit the header (DF set) with a valid checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[field::VER_IHL] = 0x45;
        b[field::TOS] = (self.dscp << 2) | self.ecn as u8;
        put16(b, field::LENGTH, (HEADER_LEN + self.payload_len) as u16);
        put16(b, field::IDENT, self.ident);
        put16(b, field::FLAGS_FRAG, 0x4000);
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        b[field::SRC].copy_from_slice(&self.src.octets());
        b[field::DST].copy_from_slice(&self.dst.octets());
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 10.0.0.1 -> 10.0.0.2, DSCP 26, ECT(0), UDP, 28 bytes total, ident 1, DF, TTL 64.
    const HDR: [u8; 20] = [
        0x45, 0x6a, 0x00, 0x1c, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x26, 0x64, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02,
    ];

    fn repr() -> Repr {
        Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 26,
            ecn: Ecn::Ect0,
            ident: 1,
            ttl: 64,
            protocol: PROTO_UDP,
            payload_len: 8,
        }
    }

    #[test]
    fn emit_matches_vector_and_parses_back() {
        let mut b = [0u8; 28];
        repr().emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..20], &HDR);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn ce_marking_keeps_the_checksum_valid() {
        let mut b = [0u8; 28];
        repr().emit(&mut Packet::new_unchecked(&mut b[..]));
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_ecn(Ecn::Ce);
        assert!(p.verify_checksum());
        assert_eq!(p.ecn(), Ecn::Ce);
        assert_eq!(p.dscp(), 26);
        let mut full = b;
        Packet::new_unchecked(&mut full[..]).fill_checksum();
        assert_eq!(full, b, "incremental update equals a full recompute");
    }

    #[test]
    fn bad_checksum_is_rejected() {
        let mut b = [0u8; 28];
        repr().emit(&mut Packet::new_unchecked(&mut b[..]));
        b[8] = 1; // TTL changed without a checksum update
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Repr::parse(&p).unwrap_err(),
            WireError::Checksum("ipv4 header")
        );
    }

    #[test]
    fn wrong_version_or_length() {
        let mut b = HDR;
        b[0] = 0x46;
        assert!(Packet::new_checked(&b[..]).is_err());
        assert_eq!(
            Packet::new_checked(&HDR[..]).unwrap_err(),
            WireError::Truncated
        );
    }
}
