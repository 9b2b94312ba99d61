//! IPv4 header (RFC 791) with DSCP and ECN (RFC 2474, RFC 3168), through smoltcp's
//! `wire::Ipv4Packet` (the zero-copy view, checksum, DSCP/ECN accessors) and `Ipv4Repr`.
//! This module adds what RoCEv2 needs beyond smoltcp's `Repr` (which emits DSCP 0, ECN 0,
//! ident 0): DSCP, ECN and ident in [`Repr`], and CE marking with a valid checksum.
//! Only option-less headers (IHL = 5) are accepted: RoCEv2 never sends options.

use std::net::Ipv4Addr;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{IpProtocol, Ipv4Repr};

use super::{WireError, WireResult};

pub use smoltcp::wire::Ipv4Packet as Packet;

/// Header length (no options).
pub const HEADER_LEN: usize = smoltcp::wire::IPV4_HEADER_LEN;
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

/// A checked view: version 4, IHL 5, total length within the buffer.
pub fn checked<T: AsRef<[u8]>>(buffer: T) -> WireResult<Packet<T>> {
    let b = buffer.as_ref();
    if b.len() < HEADER_LEN {
        return Err(WireError::Truncated);
    }
    if b[0] != 0x45 {
        return Err(WireError::Malformed("ipv4 version/ihl (expected 0x45)"));
    }
    Packet::new_checked(buffer).map_err(|_| WireError::Truncated)
}

/// The packet's ECN codepoint.
pub fn ecn<T: AsRef<[u8]>>(p: &Packet<T>) -> Ecn {
    Ecn::from_bits(p.ecn())
}

/// Set the ECN bits and refresh the header checksum, so a switch can mark CE without
/// touching anything else.
pub fn set_ecn<T: AsRef<[u8]> + AsMut<[u8]>>(p: &mut Packet<T>, ecn: Ecn) {
    p.set_ecn(ecn as u8);
    p.fill_checksum();
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
        let view = Packet::new_unchecked(p.as_ref());
        let r = Ipv4Repr::parse(&view, &ChecksumCapabilities::default())
            .map_err(|_| WireError::Malformed("ipv4 fragment"))?;
        Ok(Repr {
            src: r.src_addr,
            dst: r.dst_addr,
            dscp: p.dscp(),
            ecn: ecn(p),
            ident: p.ident(),
            ttl: r.hop_limit,
            protocol: r.next_header.into(),
            payload_len: r.payload_len,
        })
    }
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Emit the header (DF set) with a valid checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        Ipv4Repr {
            src_addr: self.src,
            dst_addr: self.dst,
            next_header: IpProtocol::from(self.protocol),
            payload_len: self.payload_len,
            hop_limit: self.ttl,
        }
        .emit(p, &ChecksumCapabilities::ignored());
        p.set_dscp(self.dscp);
        p.set_ecn(self.ecn as u8);
        p.set_ident(self.ident);
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
        let p = checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn ce_marking_keeps_the_checksum_valid() {
        let mut b = [0u8; 28];
        repr().emit(&mut Packet::new_unchecked(&mut b[..]));
        let mut p = checked(&mut b[..]).unwrap();
        set_ecn(&mut p, Ecn::Ce);
        assert!(p.verify_checksum());
        assert_eq!(ecn(&p), Ecn::Ce);
        assert_eq!(p.dscp(), 26);
    }

    #[test]
    fn bad_checksum_is_rejected() {
        let mut b = [0u8; 28];
        repr().emit(&mut Packet::new_unchecked(&mut b[..]));
        b[8] = 1; // TTL changed without a checksum update
        let p = checked(&b[..]).unwrap();
        assert_eq!(
            Repr::parse(&p).unwrap_err(),
            WireError::Checksum("ipv4 header")
        );
    }

    #[test]
    fn wrong_version_or_length() {
        let mut b = HDR;
        b[0] = 0x46;
        assert!(checked(&b[..]).is_err());
        assert_eq!(checked(&HDR[..]).unwrap_err(), WireError::Truncated);
    }
}
