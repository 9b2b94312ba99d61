//! A whole RoCEv2 frame: Ethernet / IPv4 (DSCP, ECN) / UDP 4791 / BTH [/ AETH] /
//! payload / ICRC. CNPs carry 16 reserved bytes of payload (Annex A17.9.3).

use std::net::Ipv4Addr;

use super::ethernet::{self, ETHERTYPE_IPV4, Mac};
use super::ib::{self, AethRepr, BthPacket, BthRepr, DEFAULT_PKEY, icrc_ipv4, opcode};
use super::ipv4::{self, Ecn, PROTO_UDP};
use super::udp::{self, ROCEV2_PORT};
use super::{WireError, WireResult};

/// Offset of the IP header in a frame.
pub const IP_OFFSET: usize = ethernet::HEADER_LEN;
/// Bytes of headers before the payload (without AETH) plus the ICRC.
pub const OVERHEAD: usize =
    ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + ib::BTH_LEN + ib::ICRC_LEN;
/// Payload length of a CNP.
pub const CNP_PAYLOAD: usize = 16;

/// The fields of a RoCEv2 frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub eth_dst: Mac,
    pub eth_src: Mac,
    pub ip_src: Ipv4Addr,
    pub ip_dst: Ipv4Addr,
    pub dscp: u8,
    pub ecn: Ecn,
    pub ttl: u8,
    pub ident: u16,
    /// UDP source port: flow entropy for ECMP.
    pub udp_src: u16,
    pub bth: BthRepr,
    /// Present exactly when the opcode is [`opcode::RC_ACK`].
    pub aeth: Option<AethRepr>,
    pub payload_len: usize,
}

impl Repr {
    /// An RC SEND Only data packet (DSCP 26, PSN 0, QP 1) from `ip_src` to `ip_dst` with
    /// entropy value `udp_src` and `payload_len` bytes of payload: what tests and
    /// benchmarks feed a switch.
    pub fn send_only(ip_src: Ipv4Addr, ip_dst: Ipv4Addr, udp_src: u16, payload_len: usize) -> Repr {
        Repr {
            eth_dst: [2, 0, 0, 0, 0, 1],
            eth_src: [2, 0, 0, 0, 0, 2],
            ip_src,
            ip_dst,
            dscp: 26,
            ecn: Ecn::Ect0,
            ttl: 64,
            ident: 0,
            udp_src,
            bth: BthRepr {
                opcode: opcode::RC_SEND_ONLY,
                solicited: false,
                pad_count: 0,
                pkey: DEFAULT_PKEY,
                dest_qp: 1,
                ack_req: false,
                psn: 0,
            },
            aeth: None,
            payload_len,
        }
    }

    /// The frame, with a zero payload of `payload_len` bytes.
    pub fn to_frame(&self) -> Vec<u8> {
        let mut b = vec![0u8; self.buffer_len()];
        self.emit(&mut b, &vec![0u8; self.payload_len]);
        b
    }

    fn transport_len(&self) -> usize {
        ib::BTH_LEN + self.aeth.map_or(0, |a| a.buffer_len()) + self.payload_len + ib::ICRC_LEN
    }

    /// The frame length.
    pub fn buffer_len(&self) -> usize {
        ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + self.transport_len()
    }

    /// Emit the frame into `buf[..buffer_len()]` with `payload` (which must be
    /// `payload_len` long) and a valid IP checksum and ICRC.
    pub fn emit(&self, buf: &mut [u8], payload: &[u8]) {
        assert_eq!(payload.len(), self.payload_len, "payload length");
        let len = self.buffer_len();
        let buf = &mut buf[..len];
        let mut e = ethernet::Packet::new_unchecked(&mut *buf);
        ethernet::Repr {
            dst: self.eth_dst,
            src: self.eth_src,
            ethertype: ETHERTYPE_IPV4,
        }
        .emit(&mut e);
        let tl = self.transport_len();
        let ip = &mut buf[IP_OFFSET..];
        ipv4::Repr {
            src: self.ip_src,
            dst: self.ip_dst,
            dscp: self.dscp,
            ecn: self.ecn,
            ident: self.ident,
            ttl: self.ttl,
            protocol: PROTO_UDP,
            payload_len: udp::HEADER_LEN + tl,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut *ip));
        let u = &mut ip[ipv4::HEADER_LEN..];
        udp::Repr {
            src_port: self.udp_src,
            dst_port: ROCEV2_PORT,
            payload_len: tl,
        }
        .emit(&mut udp::Packet::new_unchecked(&mut *u));
        let t = &mut u[udp::HEADER_LEN..];
        self.bth.emit(&mut BthPacket::new_unchecked(&mut *t));
        let mut off = ib::BTH_LEN;
        if let Some(a) = self.aeth {
            a.emit(&mut t[off..off + ib::AETH_LEN]);
            off += ib::AETH_LEN;
        }
        t[off..off + payload.len()].copy_from_slice(payload);
        let ip_end = len - IP_OFFSET - ib::ICRC_LEN;
        let crc = icrc_ipv4(&buf[IP_OFFSET..IP_OFFSET + ip_end]);
        buf[len - ib::ICRC_LEN..].copy_from_slice(&crc.to_le_bytes());
    }

    /// Parse a frame; checks the IP checksum and the ICRC. Returns the fields and the payload.
    pub fn parse(frame: &[u8]) -> WireResult<(Repr, &[u8])> {
        let e = ethernet::checked(frame)?;
        if ethernet::ethertype(&e) != ETHERTYPE_IPV4 {
            return Err(WireError::Malformed("ethertype (expected IPv4)"));
        }
        let ipp = ipv4::checked(e.payload())?;
        let ip = ipv4::Repr::parse(&ipp)?;
        if ip.protocol != PROTO_UDP {
            return Err(WireError::Malformed("ip protocol (expected UDP)"));
        }
        let up = udp::checked(ipp.payload())?;
        if up.dst_port() != ROCEV2_PORT {
            return Err(WireError::Malformed("udp port (expected 4791)"));
        }
        let t = up.payload();
        if t.len() < ib::BTH_LEN + ib::ICRC_LEN {
            return Err(WireError::Truncated);
        }
        let bth = BthRepr::parse(&BthPacket::new_checked(t)?)?;
        let ip_bytes = &e.payload()[..ipp.total_len() as usize];
        let split = ip_bytes.len() - ib::ICRC_LEN;
        let want = u32::from_le_bytes(ip_bytes[split..].try_into().expect("4"));
        if icrc_ipv4(&ip_bytes[..split]) != want {
            return Err(WireError::Checksum("roce icrc"));
        }
        let mut off = ib::BTH_LEN;
        let aeth = if bth.opcode == opcode::RC_ACK {
            let a = AethRepr::parse(&t[off..t.len() - ib::ICRC_LEN])?;
            off += ib::AETH_LEN;
            Some(a)
        } else {
            None
        };
        let start = IP_OFFSET + ipv4::HEADER_LEN + udp::HEADER_LEN + off;
        let end = IP_OFFSET + ipp.total_len() as usize - ib::ICRC_LEN;
        let payload_len = end - start;
        Ok((
            Repr {
                eth_dst: e.dst_addr().0,
                eth_src: e.src_addr().0,
                ip_src: ip.src,
                ip_dst: ip.dst,
                dscp: ip.dscp,
                ecn: ip.ecn,
                ttl: ip.ttl,
                ident: ip.ident,
                udp_src: up.src_port(),
                bth,
                aeth,
                payload_len,
            },
            &frame[start..end],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::ib::Syndrome;
    use super::*;

    pub(crate) fn cnp() -> Repr {
        Repr {
            eth_dst: [2, 0xfa, 0, 0, 0, 1],
            eth_src: [2, 0xfa, 0, 0, 0, 2],
            ip_src: Ipv4Addr::new(10, 0, 0, 2),
            ip_dst: Ipv4Addr::new(10, 0, 0, 1),
            dscp: 48,
            ecn: Ecn::NotEct,
            ttl: 64,
            ident: 0,
            udp_src: 0xc000,
            bth: BthRepr {
                opcode: opcode::CNP,
                solicited: false,
                pad_count: 0,
                pkey: DEFAULT_PKEY,
                dest_qp: 0x11,
                ack_req: false,
                psn: 0,
            },
            aeth: None,
            payload_len: CNP_PAYLOAD,
        }
    }

    #[test]
    fn cnp_roundtrip_and_length() {
        let r = cnp();
        assert_eq!(r.buffer_len(), 14 + 20 + 8 + 12 + 16 + 4);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b, &[0u8; 16]);
        let (p, pl) = Repr::parse(&b).unwrap();
        assert_eq!(p, r);
        assert_eq!(pl, &[0u8; 16]);
    }

    #[test]
    fn ack_with_aeth_roundtrip() {
        let mut r = cnp();
        r.bth.opcode = opcode::RC_ACK;
        r.aeth = Some(AethRepr {
            syndrome: Syndrome::Ack { credits: 0x1f },
            msn: 3,
        });
        r.payload_len = 8;
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b, &42u64.to_be_bytes());
        let (p, pl) = Repr::parse(&b).unwrap();
        assert_eq!(p, r);
        assert_eq!(pl, &42u64.to_be_bytes());
    }

    #[test]
    fn ce_mark_does_not_break_icrc_but_payload_flip_does() {
        let r = cnp();
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b, &[7u8; 16]);
        ipv4::set_ecn(
            &mut ipv4::Packet::new_unchecked(&mut b[IP_OFFSET..]),
            Ecn::Ce,
        );
        assert_eq!(Repr::parse(&b).unwrap().0.ecn, Ecn::Ce);
        b[60] ^= 1;
        assert_eq!(
            Repr::parse(&b).unwrap_err(),
            WireError::Checksum("roce icrc")
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = Repr::parse(&data);
            let _ = super::super::pfc::Repr::from_frame(&data);
        }

        #[test]
        fn corrupted_valid_frames_never_panic(pos in 0usize..78, val in proptest::num::u8::ANY, cut in 0usize..78) {
            let r = cnp();
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut b, &[1u8; 16]);
            let pos = pos % b.len();
            b[pos] = val;
            let _ = Repr::parse(&b);
            let _ = Repr::parse(&b[..cut.min(b.len())]);
        }
    }
}
