//! IEEE 802.1Qbb priority-based flow control frames: a MAC control frame (ethertype
//! 0x8808) to 01:80:c2:00:00:01 with opcode 0x0101, a class-enable vector and eight
//! pause times in quanta of 512 bit times (802.1Qbb §36.1.3, 802.3 Annex 31D).
//! The frame is padded to the 60-byte minimum (64 with the FCS the NIC adds).

use super::ethernet::{self, ETHERTYPE_MAC_CONTROL, Mac};
use super::{WireError, WireResult, be16, put16};

/// The reserved multicast address MAC control frames are sent to.
pub const PFC_DST: Mac = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// The PFC opcode.
pub const OPCODE_PFC: u16 = 0x0101;
/// Frame length without FCS (minimum Ethernet frame).
pub const FRAME_LEN: usize = 60;
/// Bytes of the PFC body after the Ethernet header: opcode, vector, 8 times.
pub const BODY_LEN: usize = 2 + 2 + 16;

/// A view of a PFC body (the Ethernet payload of a MAC control frame).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        if buffer.as_ref().len() < BODY_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Packet { buffer })
    }
    pub fn opcode(&self) -> u16 {
        be16(self.buffer.as_ref(), 0..2)
    }
    pub fn class_enable(&self) -> u16 {
        be16(self.buffer.as_ref(), 2..4)
    }
    pub fn quanta(&self, prio: usize) -> u16 {
        be16(self.buffer.as_ref(), 4 + 2 * prio..6 + 2 * prio)
    }
}

/// The fields of a PFC frame body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Bit `p` set: the time for priority `p` is valid.
    pub class_enable: u8,
    /// Pause time per priority, in quanta of 512 bit times (0 = resume).
    pub quanta: [u16; 8],
}

impl Repr {
    /// Pause (`quanta` > 0) or resume (`quanta` = 0) one priority.
    pub fn single(prio: u8, quanta: u16) -> Repr {
        let mut q = [0u16; 8];
        q[prio as usize & 7] = quanta;
        Repr {
            class_enable: 1 << (prio & 7),
            quanta: q,
        }
    }
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> WireResult<Repr> {
        if p.opcode() != OPCODE_PFC {
            return Err(WireError::Malformed("mac control opcode (expected 0x0101)"));
        }
        if p.class_enable() > 0xff {
            return Err(WireError::Malformed("pfc class-enable vector"));
        }
        let mut quanta = [0u16; 8];
        for (i, q) in quanta.iter_mut().enumerate() {
            *q = p.quanta(i);
        }
        Ok(Repr {
            class_enable: p.class_enable() as u8,
            quanta,
        })
    }
    pub const fn buffer_len(&self) -> usize {
        BODY_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        put16(b, 0..2, OPCODE_PFC);
        put16(b, 2..4, self.class_enable as u16);
        for i in 0..8 {
            put16(b, 4 + 2 * i..6 + 2 * i, self.quanta[i]);
        }
    }
    /// A whole 60-byte frame from `src`.
    pub fn to_frame(&self, src: Mac) -> [u8; FRAME_LEN] {
        let mut f = [0u8; FRAME_LEN];
        let mut e = ethernet::Packet::new_unchecked(&mut f[..]);
        ethernet::Repr {
            dst: PFC_DST,
            src,
            ethertype: ETHERTYPE_MAC_CONTROL,
        }
        .emit(&mut e);
        self.emit(&mut Packet::new_unchecked(e.payload_mut()));
        f
    }
    /// Parse a whole frame: `Ok(None)` if it is not a MAC control frame.
    pub fn from_frame(frame: &[u8]) -> WireResult<Option<Repr>> {
        let e = ethernet::checked(frame)?;
        if ethernet::ethertype(&e) != ETHERTYPE_MAC_CONTROL {
            return Ok(None);
        }
        Ok(Some(Repr::parse(&Packet::new_checked(e.payload())?)?))
    }
}

/// Duration of `quanta` pause quanta at `link_bps`, in nanoseconds (one quantum is 512 bit times).
pub fn quanta_to_nanos(quanta: u16, link_bps: u64) -> u64 {
    (quanta as u128 * 512 * 1_000_000_000 / link_bps.max(1) as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_vector() {
        let f = Repr::single(3, 0xffff).to_frame([2, 0, 0, 0, 0, 9]);
        let mut want = [0u8; 60];
        want[..14].copy_from_slice(&[1, 0x80, 0xc2, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x88, 0x08]);
        want[14..18].copy_from_slice(&[0x01, 0x01, 0x00, 0x08]);
        want[18 + 6..18 + 8].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(f, want);
        assert_eq!(Repr::from_frame(&f).unwrap(), Some(Repr::single(3, 0xffff)));
    }

    #[test]
    fn other_opcodes_and_frames() {
        let mut f = Repr::single(0, 1).to_frame([2; 6]);
        f[14] = 0x00; // opcode 0x0001 = 802.3x PAUSE, not PFC
        assert!(Repr::from_frame(&f).is_err());
        let mut ip = f;
        ip[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(Repr::from_frame(&ip).unwrap(), None);
        assert!(Repr::from_frame(&f[..20]).is_err());
    }

    #[test]
    fn quanta_time() {
        // 0xffff quanta at 1 Gb/s = 65535 * 512 ns
        assert_eq!(quanta_to_nanos(0xffff, 1_000_000_000), 33_553_920);
        assert_eq!(quanta_to_nanos(1, 100_000_000_000), 5);
    }
}
