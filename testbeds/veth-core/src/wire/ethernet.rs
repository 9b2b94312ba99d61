//! Ethernet II header (IEEE 802.3 §3.2), through smoltcp's `wire::EthernetFrame` (the
//! zero-copy view) and `EthernetRepr`; this module adds the MAC-as-bytes and
//! ethertype-as-number shape the switch and endpoints use, and maps smoltcp's errors
//! onto [`WireError`].

use smoltcp::wire::{EthernetAddress, EthernetProtocol, EthernetRepr};

use super::{WireError, WireResult};

pub use smoltcp::wire::EthernetFrame as Packet;

/// A MAC address.
pub type Mac = [u8; 6];

/// Header length.
pub const HEADER_LEN: usize = smoltcp::wire::ETHERNET_HEADER_LEN;
/// IPv4 ethertype.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// MAC control ethertype (PAUSE and PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// A checked view: [`WireError::Truncated`] if shorter than the header.
pub fn checked<T: AsRef<[u8]>>(buffer: T) -> WireResult<Packet<T>> {
    Packet::new_checked(buffer).map_err(|_| WireError::Truncated)
}

/// The ethertype as a number.
pub fn ethertype<T: AsRef<[u8]>>(p: &Packet<T>) -> u16 {
    p.ethertype().into()
}

/// The fields of an Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub dst: Mac,
    pub src: Mac,
    pub ethertype: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Repr {
        Repr {
            dst: p.dst_addr().0,
            src: p.src_addr().0,
            ethertype: ethertype(p),
        }
    }
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        EthernetRepr {
            src_addr: EthernetAddress(self.src),
            dst_addr: EthernetAddress(self.dst),
            ethertype: EthernetProtocol::from(self.ethertype),
        }
        .emit(p);
    }
}

/// Set the destination MAC.
pub fn set_dst<T: AsRef<[u8]> + AsMut<[u8]>>(p: &mut Packet<T>, m: Mac) {
    p.set_dst_addr(EthernetAddress(m));
}

/// Set the source MAC.
pub fn set_src<T: AsRef<[u8]> + AsMut<[u8]>>(p: &mut Packet<T>, m: Mac) {
    p.set_src_addr(EthernetAddress(m));
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 14] = [0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00];

    #[test]
    fn emit_matches_vector_and_parses_back() {
        let r = Repr {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
            ethertype: ETHERTYPE_IPV4,
        };
        let mut b = [0u8; 14];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(b, FRAME);
        assert_eq!(Repr::parse(&checked(&b[..]).unwrap()), r);
        assert_eq!(checked(&b[..13]).unwrap_err(), WireError::Truncated);
    }
}
