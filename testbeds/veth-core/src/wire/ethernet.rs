//! Ethernet II header: destination, source, ethertype (IEEE 802.3 §3.2).

use super::{Field, WireError, WireResult, be16, put16};

/// A MAC address.
pub type Mac = [u8; 6];

mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// Header length.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// IPv4 ethertype.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// MAC control ethertype (PAUSE and PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// A read/write view of an Ethernet frame.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// A view, or [`WireError::Truncated`] if shorter than the header.
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buffer })
    }
    pub fn dst(&self) -> Mac {
        self.buffer.as_ref()[field::DST]
            .try_into()
            .expect("6 bytes")
    }
    pub fn src(&self) -> Mac {
        self.buffer.as_ref()[field::SRC]
            .try_into()
            .expect("6 bytes")
    }
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_dst(&mut self, m: Mac) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&m);
    }
    pub fn set_src(&mut self, m: Mac) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&m);
    }
    pub fn set_ethertype(&mut self, t: u16) {
        put16(self.buffer.as_mut(), field::ETHERTYPE, t);
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The fields of an Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub dst: Mac,
    pub src: Mac,
    pub ethertype: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        Ok(Repr {
            dst: p.dst(),
            src: p.src(),
            ethertype: p.ethertype(),
        })
    }
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_dst(self.dst);
        p.set_src(self.src);
        p.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 14] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x02, 0xfa, 0x00, 0x00, 0x00, 0x01, 0x88, 0x08,
    ];

    #[test]
    fn parse_and_emit_vector() {
        let p = Packet::new_checked(&FRAME[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.dst, [0x01, 0x80, 0xc2, 0, 0, 1]);
        assert_eq!(r.ethertype, ETHERTYPE_MAC_CONTROL);
        let mut buf = [0u8; 14];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, FRAME);
    }

    #[test]
    fn short_is_truncated() {
        assert_eq!(
            Packet::new_checked(&FRAME[..13]).unwrap_err(),
            WireError::Truncated
        );
    }
}
