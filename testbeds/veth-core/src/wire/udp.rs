//! UDP header (RFC 768). RoCEv2 uses destination port 4791 and, over IPv4, a zero
//! checksum (allowed by RFC 768; the ICRC protects the payload).

use super::{Field, WireError, WireResult, be16, put16};

mod field {
    use super::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// Header length.
pub const HEADER_LEN: usize = 8;
/// The RoCEv2 UDP destination port (IANA).
pub const ROCEV2_PORT: u16 = 4791;

/// A view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// A view; the length field must cover the header and fit in the buffer.
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = be16(b, field::LENGTH) as usize;
        if len < HEADER_LEN {
            return Err(WireError::Malformed("udp length"));
        }
        if len > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buffer })
    }
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }
    pub fn is_empty(&self) -> bool {
        self.len() as usize <= HEADER_LEN
    }
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
    /// The payload, as long as the length field says.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v)
    }
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v)
    }
    pub fn set_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v)
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v)
    }
}

/// The fields of a UDP header (checksum emitted as zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload_len: usize,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() as usize - HEADER_LEN,
        })
    }
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len((HEADER_LEN + self.payload_len) as u16);
        p.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HDR: [u8; 10] = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x0a, 0x00, 0x00, 0xaa, 0xbb];

    #[test]
    fn vector() {
        let p = Packet::new_checked(&HDR[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr {
                src_port: 0xc000,
                dst_port: ROCEV2_PORT,
                payload_len: 2
            }
        );
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        let mut b = [0u8; 10];
        r.emit(&mut Packet::new_unchecked(&mut b[..]));
        b[8..].copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(b, HDR);
    }

    #[test]
    fn bad_lengths() {
        let mut h = HDR;
        h[5] = 4;
        assert_eq!(
            Packet::new_checked(&h[..]).unwrap_err(),
            WireError::Malformed("udp length")
        );
        h[5] = 11;
        assert_eq!(
            Packet::new_checked(&h[..]).unwrap_err(),
            WireError::Truncated
        );
    }
}
