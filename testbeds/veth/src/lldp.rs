//! LLDP (IEEE 802.1AB-2016) frames: just enough to name a port's neighbour — the
//! mandatory Chassis ID, Port ID and Time To Live TLVs and the End TLV (§8.5), sent to
//! the nearest-bridge group address `01:80:c2:00:00:0e` with ethertype `0x88cc`.
//!
//! Two levels (../shared/STYLE.md point 9): [`Tlvs`], a zero-copy walk over an LLDPDU's
//! TLVs (`new_checked` refuses a truncated one), and [`LldpRepr`] with `parse` / `emit`
//! / `buffer_len`. A TLV header is 16 bits: type (7 bits) then length (9 bits).
//! Chassis IDs are sent with subtype 7 (locally assigned: the node's name), port IDs with
//! subtype 5 (interface name); any subtype is accepted on receive.

/// Destination MAC of LLDP frames (nearest bridge, §7.1).
pub const LLDP_MULTICAST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
/// LLDP ethertype.
pub const ETHERTYPE_LLDP: u16 = 0x88cc;
/// TLV types (§8.4.1).
const TLV_END: u8 = 0;
const TLV_CHASSIS: u8 = 1;
const TLV_PORT: u8 = 2;
const TLV_TTL: u8 = 3;
/// Chassis ID subtype "locally assigned" (§8.5.2.2), port ID subtype "interface name".
const CHASSIS_LOCAL: u8 = 7;
const PORT_IFNAME: u8 = 5;
/// Longest ID string a Chassis/Port ID TLV carries (§8.5.2, §8.5.3: 1–255 octets).
pub const MAX_ID: usize = 255;

/// Why an LLDPDU was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LldpError {
    /// A TLV runs past the end of the frame.
    #[error("TLV at offset {at}: length {len} runs past the end ({left} bytes left)")]
    Truncated { at: usize, len: usize, left: usize },
    /// A mandatory TLV is missing or out of order (§8.2: chassis, port, TTL first).
    #[error("TLV {index}: expected type {expected}, found {found}")]
    Order {
        index: usize,
        expected: u8,
        found: u8,
    },
    /// A TLV has a length its type does not allow.
    #[error("TLV type {ty}: length {len}, expected {expected}")]
    Length {
        ty: u8,
        len: usize,
        expected: &'static str,
    },
    /// An ID longer than [`MAX_ID`] or empty, when emitting.
    #[error("{what} ID of {len} bytes: expected 1 to {MAX_ID}")]
    Id { what: &'static str, len: usize },
}

/// A zero-copy walk over the TLVs of an LLDPDU (the Ethernet payload).
#[derive(Debug, Clone, Copy)]
pub struct Tlvs<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Tlvs<'a> {
    /// Checks every TLV fits in `buf` (up to the End TLV or the end of `buf`).
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, LldpError> {
        let t = Tlvs { buf, at: 0 };
        let mut at = 0;
        while at + 2 <= buf.len() {
            let (ty, len) = header(&buf[at..]);
            if at + 2 + len > buf.len() {
                return Err(LldpError::Truncated {
                    at,
                    len,
                    left: buf.len() - at - 2,
                });
            }
            if ty == TLV_END {
                break;
            }
            at += 2 + len;
        }
        Ok(t)
    }
}

fn header(b: &[u8]) -> (u8, usize) {
    let h = u16::from_be_bytes([b[0], b[1]]);
    ((h >> 9) as u8, usize::from(h & 0x1ff))
}

impl<'a> Iterator for Tlvs<'a> {
    /// `(type, value)`.
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at + 2 > self.buf.len() {
            return None;
        }
        let (ty, len) = header(&self.buf[self.at..]);
        let v = self.buf.get(self.at + 2..self.at + 2 + len)?;
        if ty == TLV_END {
            self.at = self.buf.len();
            return None;
        }
        self.at += 2 + len;
        Some((ty, v))
    }
}

/// The neighbour an LLDPDU names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LldpRepr {
    /// Chassis ID (the node's name here).
    pub chassis: String,
    /// Port ID (the interface name here).
    pub port: String,
    /// Seconds the information stays valid.
    pub ttl: u16,
}

impl LldpRepr {
    /// Parses an LLDPDU (the Ethernet payload): chassis, port and TTL must come first,
    /// in that order; other TLVs are skipped. IDs are read as UTF-8 (lossy) after their
    /// subtype byte.
    pub fn parse(buf: &[u8]) -> Result<LldpRepr, LldpError> {
        let mut tlvs = Tlvs::new_checked(buf)?;
        let mut take = |index: usize, expected: u8| match tlvs.next() {
            Some((ty, v)) if ty == expected => Ok(v),
            Some((found, _)) => Err(LldpError::Order {
                index,
                expected,
                found,
            }),
            None => Err(LldpError::Order {
                index,
                expected,
                found: TLV_END,
            }),
        };
        let id = |ty: u8, v: &[u8]| {
            if v.len() < 2 || v.len() > MAX_ID + 1 {
                return Err(LldpError::Length {
                    ty,
                    len: v.len(),
                    expected: "2 to 256",
                });
            }
            Ok(String::from_utf8_lossy(&v[1..]).into_owned())
        };
        let chassis = id(TLV_CHASSIS, take(0, TLV_CHASSIS)?)?;
        let port = id(TLV_PORT, take(1, TLV_PORT)?)?;
        let ttl = take(2, TLV_TTL)?;
        let ttl: [u8; 2] = ttl.try_into().map_err(|_| LldpError::Length {
            ty: TLV_TTL,
            len: ttl.len(),
            expected: "2",
        })?;
        Ok(LldpRepr {
            chassis,
            port,
            ttl: u16::from_be_bytes(ttl),
        })
    }

    /// Bytes [`Self::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        (2 + 1 + self.chassis.len()) + (2 + 1 + self.port.len()) + (2 + 2) + 2
    }

    /// Writes the LLDPDU (chassis, port, TTL, End).
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), LldpError> {
        for (what, s) in [("chassis", &self.chassis), ("port", &self.port)] {
            if s.is_empty() || s.len() > MAX_ID {
                return Err(LldpError::Id { what, len: s.len() });
            }
        }
        let mut tlv = |ty: u8, sub: Option<u8>, v: &[u8]| {
            let len = v.len() + usize::from(sub.is_some());
            out.extend_from_slice(&((u16::from(ty) << 9) | len as u16).to_be_bytes());
            out.extend(sub);
            out.extend_from_slice(v);
        };
        tlv(TLV_CHASSIS, Some(CHASSIS_LOCAL), self.chassis.as_bytes());
        tlv(TLV_PORT, Some(PORT_IFNAME), self.port.as_bytes());
        tlv(TLV_TTL, None, &self.ttl.to_be_bytes());
        tlv(TLV_END, None, &[]);
        Ok(())
    }

    /// A whole Ethernet frame from `src`.
    pub fn frame(&self, src: [u8; 6]) -> Result<Vec<u8>, LldpError> {
        let mut f = Vec::with_capacity(14 + self.buffer_len());
        f.extend_from_slice(&LLDP_MULTICAST);
        f.extend_from_slice(&src);
        f.extend_from_slice(&ETHERTYPE_LLDP.to_be_bytes());
        self.emit(&mut f)?;
        Ok(f)
    }

    /// The LLDPDU of an Ethernet frame: `None` if it is not LLDP.
    pub fn parse_frame(frame: &[u8]) -> Option<Result<LldpRepr, LldpError>> {
        if frame.len() < 14 || frame[12..14] != ETHERTYPE_LLDP.to_be_bytes() {
            return None;
        }
        Some(Self::parse(&frame[14..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `leaf0` port `p2`, TTL 120: bytes written out by hand from §8.5.
    const VECTOR: [u8; 24] = [
        0x02, 0x06, 0x07, b'l', b'e', b'a', b'f', b'0', // chassis: type 1, len 6, local
        0x04, 0x03, 0x05, b'p', b'2', // port: type 2, len 3, ifname
        0x06, 0x02, 0x00, 0x78, // TTL: type 3, len 2, 120
        0x00, 0x00, // End
        0xaa, 0xbb, 0xcc, 0xdd, 0xee, // Ethernet padding after End
    ];

    fn leaf0() -> LldpRepr {
        LldpRepr {
            chassis: "leaf0".into(),
            port: "p2".into(),
            ttl: 120,
        }
    }

    #[test]
    fn test_vector_parses_and_emits() {
        assert_eq!(LldpRepr::parse(&VECTOR), Ok(leaf0()));
        let mut out = Vec::new();
        leaf0().emit(&mut out).unwrap();
        assert_eq!(out, VECTOR[..19]);
        assert_eq!(leaf0().buffer_len(), 19);
        let f = leaf0().frame([2, 0, 0, 0, 0, 1]).unwrap();
        assert_eq!(&f[..6], &LLDP_MULTICAST);
        assert_eq!(LldpRepr::parse_frame(&f), Some(Ok(leaf0())));
        let mut ip = f.clone();
        ip[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert_eq!(LldpRepr::parse_frame(&ip), None);
    }

    #[test]
    fn bad_frames_are_refused_with_the_reason() {
        assert!(matches!(
            LldpRepr::parse(&VECTOR[..10]),
            Err(LldpError::Truncated { at: 8, len: 3, .. })
        ));
        // Port before chassis.
        let mut swapped = VECTOR[8..13].to_vec();
        swapped.extend_from_slice(&VECTOR[..8]);
        assert!(matches!(
            LldpRepr::parse(&swapped),
            Err(LldpError::Order {
                index: 0,
                expected: 1,
                found: 2
            })
        ));
        // A TTL of 3 bytes.
        let mut ttl3 = VECTOR[..13].to_vec();
        ttl3.extend_from_slice(&[0x06, 0x03, 0, 0, 1, 0, 0]);
        assert!(matches!(
            LldpRepr::parse(&ttl3),
            Err(LldpError::Length { ty: 3, len: 3, .. })
        ));
        let long = LldpRepr {
            chassis: "x".repeat(256),
            ..leaf0()
        };
        assert!(matches!(
            long.emit(&mut Vec::new()),
            Err(LldpError::Id { len: 256, .. })
        ));
    }

    proptest! {
        #[test]
        fn emit_then_parse_is_identity(c in "[a-z0-9-]{1,64}", p in "p[0-9]{1,3}", ttl: u16) {
            let r = LldpRepr { chassis: c, port: p, ttl };
            let mut out = Vec::new();
            r.emit(&mut out).unwrap();
            prop_assert_eq!(out.len(), r.buffer_len());
            prop_assert_eq!(LldpRepr::parse(&out), Ok(r));
        }

        #[test]
        fn any_bytes_parse_or_fail_without_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = LldpRepr::parse(&b);
            let _ = LldpRepr::parse_frame(&b);
        }
    }
}
