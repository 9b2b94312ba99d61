//! UDP header (RFC 768), through smoltcp's `wire::UdpPacket`/`UdpRepr`. RoCEv2 uses
//! destination port 4791 and, over IPv4, a zero checksum (allowed by RFC 768; the ICRC
//! protects the payload), which is what smoltcp emits when told to skip UDP checksums.

use std::net::Ipv4Addr;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{IpAddress, UdpRepr};

use super::{WireError, WireResult};

pub use smoltcp::wire::UdpPacket as Packet;

/// Header length.
pub const HEADER_LEN: usize = smoltcp::wire::UDP_HEADER_LEN;
/// The RoCEv2 UDP destination port (IANA).
pub const ROCEV2_PORT: u16 = 4791;

/// A checked view: the length field covers the header and fits in the buffer.
pub fn checked<T: AsRef<[u8]>>(buffer: T) -> WireResult<Packet<T>> {
    Packet::new_checked(buffer).map_err(|_| WireError::Truncated)
}

/// The fields of a UDP header we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload_len: usize,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Repr {
        Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() as usize - HEADER_LEN,
        }
    }
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Emit the header with a zero checksum (the payload is written by the caller).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, p: &mut Packet<&mut T>) {
        let unspecified = IpAddress::Ipv4(Ipv4Addr::UNSPECIFIED);
        UdpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
        }
        .emit(
            p,
            &unspecified,
            &unspecified,
            self.payload_len,
            |_| {},
            &ChecksumCapabilities::ignored(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_matches_vector_and_parses_back() {
        let r = Repr {
            src_port: 0xc000,
            dst_port: ROCEV2_PORT,
            payload_len: 4,
        };
        let mut b = [0xffu8; 12];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..8], &[0xc0, 0x00, 0x12, 0xb7, 0x00, 0x0c, 0x00, 0x00]);
        assert_eq!(Repr::parse(&checked(&b[..]).unwrap()), r);
        // The length field says 12: a shorter buffer is truncated.
        assert_eq!(checked(&b[..11]).unwrap_err(), WireError::Truncated);
    }
}
