//! InfiniBand transport headers as RoCEv2 carries them, and the RoCEv2 ICRC.
//!
//! - BTH, Base Transport Header (IBTA Vol. 1 §9.2, 12 bytes): opcode, SE/M/PadCnt/TVer,
//!   P_Key, Resv8a, DestQP, AckReq, PSN.
//! - AETH, ACK Extended Transport Header (§9.3.5, 4 bytes): syndrome, MSN.
//! - ICRC (§7.8.1; RoCEv2: Annex A17.3.3): CRC-32 (the Ethernet polynomial) over a
//!   pseudo-packet made of 8 bytes of `0xFF` standing for the masked LRH, the IP header
//!   with DSCP/ECN, TTL and header checksum set to all ones, the UDP header with its
//!   checksum set to all ones, the BTH with Resv8a set to all ones, then the rest of the
//!   transport headers and the payload. It is appended little-endian, as Linux `rxe` and
//!   Wireshark do. Because the ECN bits are masked, a switch may mark CE without
//!   recomputing it.

use super::{Field, WireError, WireResult, be16, put16};

/// BTH length.
pub const BTH_LEN: usize = 12;
/// AETH length.
pub const AETH_LEN: usize = 4;
/// ICRC length.
pub const ICRC_LEN: usize = 4;

/// BTH opcodes we use (IBTA Vol. 1 Table 38; CNP from Annex A17.9.3).
pub mod opcode {
    /// RC SEND Only.
    pub const RC_SEND_ONLY: u8 = 0x04;
    /// RC Acknowledge (carries an AETH).
    pub const RC_ACK: u8 = 0x11;
    /// RoCEv2 Congestion Notification Packet.
    pub const CNP: u8 = 0x81;
    /// UEC RCCC credit grant (this testbed's encoding): an RC opcode reserved in the IBA
    /// (0x1E), so that tshark still decodes BTH; payload = 8-byte big-endian credit bytes.
    pub const CREDIT: u8 = 0x1e;
    /// UEC RCCC credit request (this testbed's encoding, reserved RC opcode 0x1F);
    /// payload = 8-byte big-endian requested bytes.
    pub const CREDIT_REQUEST: u8 = 0x1f;
}

/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;

mod field {
    use super::Field;
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PKEY: Field = 2..4;
    pub const RESV8A: usize = 4;
    pub const DEST_QP: Field = 5..8;
    pub const ACKREQ: usize = 8;
    pub const PSN: Field = 9..12;
}

fn be24(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes([0, b[f.start], b[f.start + 1], b[f.start + 2]])
}

fn put24(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_be_bytes()[1..]);
}

/// A view of a BTH (and what follows it).
#[derive(Debug, Clone)]
pub struct BthPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> BthPacket<T> {
    pub fn new_unchecked(buffer: T) -> Self {
        BthPacket { buffer }
    }
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        if buffer.as_ref().len() < BTH_LEN {
            return Err(WireError::Truncated);
        }
        Ok(BthPacket { buffer })
    }
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x80 != 0
    }
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> 4) & 3
    }
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & 0x0f
    }
    pub fn pkey(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PKEY)
    }
    pub fn dest_qp(&self) -> u32 {
        be24(self.buffer.as_ref(), field::DEST_QP)
    }
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACKREQ] & 0x80 != 0
    }
    pub fn psn(&self) -> u32 {
        be24(self.buffer.as_ref(), field::PSN)
    }
    /// Everything after the BTH.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[BTH_LEN..]
    }
}

/// The fields of a BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BthRepr {
    pub opcode: u8,
    pub solicited: bool,
    pub pad_count: u8,
    pub pkey: u16,
    /// 24 bits.
    pub dest_qp: u32,
    pub ack_req: bool,
    /// 24 bits.
    pub psn: u32,
}

impl BthRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &BthPacket<T>) -> WireResult<BthRepr> {
        if p.tver() != 0 {
            return Err(WireError::Malformed("bth transport version"));
        }
        Ok(BthRepr {
            opcode: p.opcode(),
            solicited: p.solicited(),
            pad_count: p.pad_count(),
            pkey: p.pkey(),
            dest_qp: p.dest_qp(),
            ack_req: p.ack_req(),
            psn: p.psn(),
        })
    }
    pub const fn buffer_len(&self) -> usize {
        BTH_LEN
    }
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut BthPacket<T>) {
        let b = p.buffer.as_mut();
        b[field::OPCODE] = self.opcode;
        b[field::FLAGS] = ((self.solicited as u8) << 7) | ((self.pad_count & 3) << 4);
        put16(b, field::PKEY, self.pkey);
        b[field::RESV8A] = 0;
        put24(b, field::DEST_QP, self.dest_qp & 0xff_ffff);
        b[field::ACKREQ] = (self.ack_req as u8) << 7;
        put24(b, field::PSN, self.psn & 0xff_ffff);
    }
}

/// AETH syndromes (IBTA Vol. 1 Table 43): ACK with credit count, or NAK with a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syndrome {
    /// ACK; 5-bit credit count (0x1f = invalid/unlimited).
    Ack { credits: u8 },
    /// RNR NAK with a timer code.
    RnrNak { timer: u8 },
    /// NAK: 0 = PSN sequence error.
    Nak { code: u8 },
}

impl Syndrome {
    pub fn to_byte(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak { code } => 0x60 | (code & 0x1f),
        }
    }
    pub fn from_byte(b: u8) -> WireResult<Syndrome> {
        match b >> 5 {
            0 => Ok(Syndrome::Ack { credits: b & 0x1f }),
            1 => Ok(Syndrome::RnrNak { timer: b & 0x1f }),
            3 => Ok(Syndrome::Nak { code: b & 0x1f }),
            _ => Err(WireError::Malformed("aeth syndrome")),
        }
    }
}

/// The fields of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AethRepr {
    pub syndrome: Syndrome,
    /// Message sequence number, 24 bits.
    pub msn: u32,
}

impl AethRepr {
    pub fn parse(b: &[u8]) -> WireResult<AethRepr> {
        if b.len() < AETH_LEN {
            return Err(WireError::Truncated);
        }
        Ok(AethRepr {
            syndrome: Syndrome::from_byte(b[0])?,
            msn: be24(b, 1..4),
        })
    }
    pub const fn buffer_len(&self) -> usize {
        AETH_LEN
    }
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = self.syndrome.to_byte();
        put24(b, 1..4, self.msn & 0xff_ffff);
    }
}

/// The RoCEv2 ICRC of an IPv4 packet `ip` (IP header through the end of the payload,
/// *excluding* the 4 ICRC bytes), per Annex A17.3.3 (see the module doc).
/// `ip` must hold an option-less IPv4 header, a UDP header and at least a BTH.
pub fn icrc_ipv4(ip: &[u8]) -> u32 {
    const IP: usize = 20;
    const UDP: usize = 8;
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    let mut hdr = [0u8; IP + UDP + BTH_LEN];
    hdr.copy_from_slice(&ip[..IP + UDP + BTH_LEN]);
    hdr[1] = 0xff; // DSCP + ECN
    hdr[8] = 0xff; // TTL
    hdr[10] = 0xff; // header checksum
    hdr[11] = 0xff;
    hdr[IP + 6] = 0xff; // UDP checksum
    hdr[IP + 7] = 0xff;
    hdr[IP + UDP + field::RESV8A] = 0xff; // BTH Resv8a
    h.update(&hdr);
    h.update(&ip[IP + UDP + BTH_LEN..]);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bth_vector() {
        // CNP to QP 0x000102, PSN 0, default P_Key.
        let v = [
            0x81, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00,
        ];
        let p = BthPacket::new_checked(&v[..]).unwrap();
        let r = BthRepr::parse(&p).unwrap();
        assert_eq!(r.opcode, opcode::CNP);
        assert_eq!(r.dest_qp, 0x102);
        let mut b = [0u8; 12];
        r.emit(&mut BthPacket::new_unchecked(&mut b[..]));
        assert_eq!(b, v);
        // A SEND with AckReq and PSN 0xabcdef.
        let s = BthRepr {
            opcode: opcode::RC_SEND_ONLY,
            solicited: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            dest_qp: 0x11,
            ack_req: true,
            psn: 0xabcdef,
        };
        s.emit(&mut BthPacket::new_unchecked(&mut b[..]));
        assert_eq!(
            b,
            [0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0xab, 0xcd, 0xef]
        );
    }

    #[test]
    fn aeth_roundtrip_and_bad_syndrome() {
        let a = AethRepr {
            syndrome: Syndrome::Nak { code: 0 },
            msn: 7,
        };
        let mut b = [0u8; 4];
        a.emit(&mut b);
        assert_eq!(b, [0x60, 0, 0, 7]);
        assert_eq!(AethRepr::parse(&b).unwrap(), a);
        assert!(AethRepr::parse(&[0x40, 0, 0, 0]).is_err());
        assert!(AethRepr::parse(&[0, 0]).is_err());
    }

    #[test]
    fn icrc_ignores_exactly_the_masked_fields() {
        let mut ip = vec![0u8; 20 + 8 + 12 + 16];
        for (i, b) in ip.iter_mut().enumerate() {
            *b = i as u8;
        }
        let c = icrc_ipv4(&ip);
        for masked in [1usize, 8, 10, 11, 26, 27, 32] {
            let mut m = ip.clone();
            m[masked] ^= 0x5a;
            assert_eq!(icrc_ipv4(&m), c, "byte {masked} is masked");
        }
        for covered in [0usize, 2, 12, 19, 20, 24, 28, 33, 40, 55] {
            let mut m = ip.clone();
            m[covered] ^= 0x5a;
            assert_ne!(icrc_ipv4(&m), c, "byte {covered} is covered");
        }
    }
}

#[cfg(test)]
mod reference {
    use super::*;

    /// Bitwise reflected CRC-32 (poly 0xEDB88320), independent of crc32fast.
    fn crc32_bitwise(state: u32, data: &[u8]) -> u32 {
        let mut c = state;
        for &b in data {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xedb8_8320
                } else {
                    c >> 1
                };
            }
        }
        c
    }

    #[test]
    fn masked_lrh_seed_matches_linux_rxe() {
        // rxe_icrc.c: "This seed is the result of computing a CRC with a seed of
        // 0xffffffff and 8 bytes of 0xff representing a masked LRH."
        assert_eq!(crc32_bitwise(0xffff_ffff, &[0xff; 8]), 0xdebb_20e3);
    }

    #[test]
    fn icrc_equals_rxe_style_computation_built_by_hand() {
        // IPv4/UDP/BTH + 8-byte payload, built field by field.
        let mut ip = vec![
            0x45, 0x6a, 0x00, 0x30, 0x00, 0x07, 0x40, 0x00, 0x40, 0x11, 0x12, 0x34, 10, 0, 0, 2,
            10, 0, 0, 1, // IPv4
            0xc1, 0x23, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, // UDP
            0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x00, 0x05, // BTH
        ];
        ip.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut ps = ip.clone();
        ps[1] = 0xff;
        ps[8] = 0xff;
        ps[10] = 0xff;
        ps[11] = 0xff;
        ps[26] = 0xff;
        ps[27] = 0xff;
        ps[32] = 0xff;
        let want = !crc32_bitwise(0xdebb_20e3, &ps);
        assert_eq!(icrc_ipv4(&ip), want);
    }
}
