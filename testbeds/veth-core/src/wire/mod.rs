//! Wire formats of the congestion testbed. Every format has two levels (STYLE.md
//! point 9): a zero-copy `Packet<T: AsRef<[u8]>>` view with `new_checked` and named
//! field ranges, and a `Repr` with `parse` / `emit` / `buffer_len`. Malformed input is a
//! [`WireError`], never a panic.
//!
//! Ethernet, IPv4 and UDP are smoltcp's `wire` types (`EthernetFrame`, `Ipv4Packet`,
//! `UdpPacket` and their `Repr`s); their modules here only add what RoCEv2 needs on top
//! (DSCP/ECN/ident in the IPv4 `Repr`, CE marking with a valid checksum, a zero UDP
//! checksum) and map smoltcp's errors onto [`WireError`]. What smoltcp does not have is
//! the project's own, in the same shape: InfiniBand BTH/AETH, the ICRC, RoCEv2 frames
//! and CNPs, and 802.1Qbb PFC.
//!
//! - [`ethernet`]: Ethernet II header (smoltcp).
//! - [`ipv4`]: IPv4 header (smoltcp; DSCP, ECN, CE marking with a valid checksum).
//! - [`udp`]: UDP header (smoltcp).
//! - [`ib`]: InfiniBand BTH and AETH as carried by RoCEv2 (IBTA Vol. 1 §9.2, §9.3.5),
//!   and the RoCEv2 ICRC (IBTA Annex A17.3.3).
//! - [`pfc`]: 802.1Qbb priority flow control frames (MAC control, opcode 0x0101).
//! - [`roce`]: a whole RoCEv2 frame (Ethernet/IPv4/UDP 4791/BTH[/AETH]/payload/ICRC).

pub mod ethernet;
pub mod ib;
pub mod ipv4;
pub mod pfc;
pub mod roce;
pub mod udp;

/// Why a frame could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer is shorter than the header (or than a length field says).
    #[error("truncated")]
    Truncated,
    /// A field has a value this parser does not accept.
    #[error("malformed field: {0}")]
    Malformed(&'static str),
    /// A checksum or CRC does not match.
    #[error("bad checksum: {0}")]
    Checksum(&'static str),
}

/// Result of parsing.
pub type WireResult<T> = core::result::Result<T, WireError>;

pub(crate) type Field = core::ops::Range<usize>;

pub(crate) fn be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

pub(crate) fn put16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every parser of every layer takes any bytes and answers with a value or a
        /// [`WireError`], never a panic, and never reads past the buffer.
        #[test]
        fn every_format_survives_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
            if let Ok(e) = ethernet::checked(&data[..]) {
                let _ = ethernet::Repr::parse(&e);
            }
            if let Ok(ip) = ipv4::checked(&data[..]) {
                let _ = ipv4::Repr::parse(&ip);
                let _ = ip.payload().len();
            }
            if let Ok(u) = udp::checked(&data[..]) {
                let _ = udp::Repr::parse(&u);
            }
            if let Ok(b) = ib::BthPacket::new_checked(&data[..]) {
                let _ = ib::BthRepr::parse(&b);
            }
            let _ = ib::AethRepr::parse(&data);
            if let Ok(p) = pfc::Packet::new_checked(&data[..]) {
                let _ = pfc::Repr::parse(&p);
            }
            let _ = pfc::Repr::from_frame(&data);
            let _ = roce::Repr::parse(&data);
        }

        /// A header whose length fields claim more than the buffer holds is refused.
        #[test]
        fn length_fields_beyond_the_buffer_are_refused(total in 21u16..=u16::MAX, udp_len in 9u16..=u16::MAX) {
            let mut ip = [0u8; 20];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            prop_assert!(ipv4::checked(&ip[..]).is_err());
            let mut u = [0u8; 8];
            u[4..6].copy_from_slice(&udp_len.to_be_bytes());
            prop_assert!(udp::checked(&u[..]).is_err());
        }
    }
}
