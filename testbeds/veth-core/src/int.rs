//! In-band network telemetry (INT) for HPCC (Li et al., "HPCC: High Precision Congestion
//! Control", SIGCOMM 2019, §3.2 and Fig. 4) on the veth engine's RoCE frames: every switch
//! egress appends one record to a data packet as it leaves (egress queue length, the
//! port's transmitted-byte counter, the departure time, the port's rate), the receiver
//! copies the records into its ACK, and the sender hands them to
//! `cc_algos::SenderCc::on_ack_int` — as the simulator does (`sim`'s `engine/int.rs`), so
//! `cc_algos::Hpcc` runs unchanged on both.
//!
//! # Wire format
//! The records live in the RoCE payload after the sender's 8-byte timestamp (the engine's
//! data payload is otherwise zeros), big-endian:
//!
//! ```text
//! payload[8]        hop count n (0..=MAX_HOPS)
//! payload[9..12]    reserved (0)
//! payload[12..]     n records of HOP_LEN bytes:
//!                   departure time (real ns, u64) | tx bytes (u64) | queue bytes (u32) |
//!                   rate (Mb/s, u32) | port (u32)
//! ```
//!
//! The port field names the egress that wrote the record (the low 32 bits of the
//! switch port's MAC, unique in a testbed): with packet spraying consecutive packets of
//! a flow leave a hop through different ports, and HPCC compares a record only with the
//! previous one of the same port (`cc_algos::IntHop::port`), as in the simulator.
//!
//! A switch that stamps a record recomputes the ICRC (it covers the payload). In a run
//! with INT every ACK and NAK payload ends in a trailer: the records of the data packet
//! it answers (none for a delayed ACK or a NAK), then their count in the last byte.
//! Times and rates are the wire's (real); [`Hop::to_virtual`] scales them to the
//! controller's virtual time, as every other input of the congestion control is scaled
//! (`endpoint`'s time scaling): queue and byte counts are not scaled.
//!
//! HPCC's own format packs a hop into 8 bytes (§5.2); a wider record here costs nothing
//! (the payload carries zeros) and keeps counters from wrapping.

use cc_algos::{Bytes, Instant, IntHop, Rate};

use crate::endpoint::TimeScale;
use crate::wire::{ethernet, ib, ipv4, udp};

/// The most hops a packet records (HPCC's limit; a 3-tier fat-tree path has 5).
pub const MAX_HOPS: usize = 5;
/// Bytes of one record.
pub const HOP_LEN: usize = 28;
/// Bytes of the block header (hop count and reserved).
pub const HEADER_LEN: usize = 4;
/// Bytes the block needs in a payload with every record used.
pub const BLOCK_LEN: usize = HEADER_LEN + MAX_HOPS * HOP_LEN;
/// Where the block starts in a data packet's payload (after the sender's timestamp).
pub const DATA_OFFSET: usize = 8;
/// The smallest data payload that carries a full block.
pub const MIN_PAYLOAD: usize = DATA_OFFSET + BLOCK_LEN;

/// Offset of the RoCE payload in a frame (Ethernet, IPv4 without options, UDP, BTH).
const PAYLOAD_IN_FRAME: usize =
    ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + ib::BTH_LEN;

/// One hop's record as it is on the wire (real time and rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hop {
    /// When the packet left the egress port (real ns since the engine's start).
    pub ts_ns: u64,
    /// The port's transmitted bytes, this packet included (free-running).
    pub tx_bytes: u64,
    /// Bytes left in the port's egress queues after this packet.
    pub qlen: u32,
    /// The port's rate (real, Mb/s).
    pub rate_mbps: u32,
    /// Which egress port wrote the record (unique in a testbed: [`port_id`]).
    pub port: u32,
}

/// The id a switch port writes into its records: the low 32 bits of its MAC (a
/// testbed gives every interface its own, `veth::mac_for`).
pub fn port_id(mac: [u8; 6]) -> u32 {
    u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]])
}

impl Hop {
    fn emit(&self, b: &mut [u8]) {
        b[0..8].copy_from_slice(&self.ts_ns.to_be_bytes());
        b[8..16].copy_from_slice(&self.tx_bytes.to_be_bytes());
        b[16..20].copy_from_slice(&self.qlen.to_be_bytes());
        b[20..24].copy_from_slice(&self.rate_mbps.to_be_bytes());
        b[24..28].copy_from_slice(&self.port.to_be_bytes());
    }

    fn parse(b: &[u8]) -> Hop {
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8"));
        let u32_at = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().expect("4"));
        Hop {
            ts_ns: u64_at(0),
            tx_bytes: u64_at(8),
            qlen: u32_at(16),
            rate_mbps: u32_at(20),
            port: u32_at(24),
        }
    }

    /// The record as the controller sees it: time and rate scaled to virtual, bytes not.
    pub fn to_virtual(&self, scale: TimeScale) -> IntHop {
        IntHop {
            qlen: Bytes(u64::from(self.qlen)),
            tx_bytes: self.tx_bytes,
            ts: scale.to_virtual(Instant::from_picos(self.ts_ns.saturating_mul(1000))),
            link_rate: Rate::bps(u64::from(self.rate_mbps) * 1_000_000 * scale.0),
            port: Some(self.port),
        }
    }
}

/// Append `hop` to the INT block of RoCE data frame `frame` and refresh its ICRC.
/// Returns false (frame unchanged) when the frame is not a RoCE SEND Only packet of the
/// usual layout, its payload is too short for a block (a trimmed packet), or it already
/// holds [`MAX_HOPS`] records.
pub fn stamp(frame: &mut [u8], hop: Hop) -> bool {
    let Some(payload_end) = frame.len().checked_sub(ib::ICRC_LEN) else {
        return false;
    };
    if payload_end < PAYLOAD_IN_FRAME + MIN_PAYLOAD
        || frame[ethernet::HEADER_LEN] != 0x45
        || frame[ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN]
            != ib::opcode::RC_SEND_ONLY
    {
        return false;
    }
    let block = PAYLOAD_IN_FRAME + DATA_OFFSET;
    let n = frame[block] as usize;
    if n >= MAX_HOPS {
        return false;
    }
    let at = block + HEADER_LEN + n * HOP_LEN;
    hop.emit(&mut frame[at..at + HOP_LEN]);
    frame[block] = (n + 1) as u8;
    let crc = ib::icrc_ipv4(&frame[ethernet::HEADER_LEN..payload_end]);
    frame[payload_end..].copy_from_slice(&crc.to_le_bytes());
    true
}

/// The records a data packet's RoCE payload holds (none when it has no block).
pub fn records_of_data(payload: &[u8]) -> &[u8] {
    let Some(&n) = payload.get(DATA_OFFSET) else {
        return &[];
    };
    let n = (n as usize).min(MAX_HOPS);
    let at = DATA_OFFSET + HEADER_LEN;
    payload.get(at..at + n * HOP_LEN).unwrap_or_default()
}

/// Longest INT trailer of an ACK: every record and the count.
pub const TRAILER_MAX: usize = MAX_HOPS * HOP_LEN + 1;

/// Write the ACK trailer echoing `records` (from [`records_of_data`]; empty for an ACK
/// that answers no stamped packet) into `out`: the records, then their count in the
/// last byte, so the trailer is found from the end of any ACK or NAK payload. Returns
/// its length (at least 1).
pub fn write_trailer(records: &[u8], out: &mut [u8]) -> usize {
    let n = (records.len() / HOP_LEN).min(MAX_HOPS);
    let len = n * HOP_LEN;
    out[..len].copy_from_slice(&records[..len]);
    out[len] = n as u8;
    len + 1
}

/// Split an ACK or NAK payload that ends in an INT trailer into what precedes it and
/// the echoed records; `None` if the trailer is missing or claims more than there is.
pub fn split_trailer(payload: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&n, body) = payload.split_last()?;
    let n = n as usize;
    if n > MAX_HOPS || body.len() < n * HOP_LEN {
        return None;
    }
    let (rest, records) = body.split_at(body.len() - n * HOP_LEN);
    Some((rest, records))
}

/// The records of [`records_of_data`] or [`split_trailer`], in path order.
pub fn hops(records: &[u8]) -> impl Iterator<Item = Hop> + '_ {
    records.chunks_exact(HOP_LEN).map(Hop::parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4::Ecn;
    use crate::wire::roce;
    use std::net::Ipv4Addr;

    fn data(payload: usize) -> Vec<u8> {
        let r = roce::Repr::send_only(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            0xc000,
            payload,
        );
        let mut b = vec![0u8; r.buffer_len()];
        let mut pl = vec![0u8; payload];
        pl[..8].copy_from_slice(&42u64.to_be_bytes());
        r.emit(&mut b, &pl);
        b
    }

    fn hop(i: u64) -> Hop {
        Hop {
            ts_ns: 1_000 * i,
            tx_bytes: 4_000 * i,
            qlen: 100 * i as u32,
            rate_mbps: 1000,
            port: 0x00fa_0000 | i as u32,
        }
    }

    #[test]
    fn records_append_in_path_order_and_keep_the_icrc_valid() {
        let mut f = data(4096);
        for i in 1..=3 {
            assert!(stamp(&mut f, hop(i)));
        }
        let (r, payload) = roce::Repr::parse(&f).expect("ICRC still valid");
        assert_eq!(r.ecn, Ecn::Ect0);
        assert_eq!(&payload[..8], &42u64.to_be_bytes(), "timestamp untouched");
        let recs = records_of_data(payload);
        assert_eq!(recs.len(), 3 * HOP_LEN);
        let got: Vec<Hop> = hops(recs).collect();
        assert_eq!(got, vec![hop(1), hop(2), hop(3)]);
        // The receiver's echo comes back whole behind any ACK payload.
        let mut ack = vec![7u8; 14];
        let mut t = [0u8; TRAILER_MAX];
        let n = write_trailer(recs, &mut t);
        ack.extend_from_slice(&t[..n]);
        let (rest, echoed) = split_trailer(&ack).expect("trailer");
        assert_eq!(rest, &[7u8; 14]);
        assert_eq!(hops(echoed).collect::<Vec<_>>(), got);
    }

    #[test]
    fn a_full_block_a_short_payload_and_other_frames_are_left_alone() {
        let mut f = data(4096);
        for i in 0..MAX_HOPS as u64 {
            assert!(stamp(&mut f, hop(i)));
        }
        let before = f.clone();
        assert!(!stamp(&mut f, hop(9)), "a sixth hop does not fit");
        assert_eq!(f, before);
        let mut short = data(64);
        let before = short.clone();
        assert!(!stamp(&mut short, hop(1)));
        assert_eq!(short, before);
        assert!(!stamp(&mut [0u8; 10], hop(1)));
        let mut ack = data(4096);
        ack[PAYLOAD_IN_FRAME - ib::BTH_LEN] = ib::opcode::RC_ACK;
        assert!(!stamp(&mut ack, hop(1)), "only data packets carry records");
    }

    #[test]
    fn an_unstamped_payload_has_no_records_and_a_lying_count_is_refused() {
        assert!(records_of_data(&data(4096)[PAYLOAD_IN_FRAME..]).is_empty());
        assert!(records_of_data(&[0u8; 4]).is_empty());
        let mut pl = vec![0u8; 40];
        pl[8] = 200; // claims 200 hops, holds one at most
        assert!(records_of_data(&pl).is_empty());
        pl[8] = 1;
        assert_eq!(hops(records_of_data(&pl)).count(), 1);
        assert_eq!(split_trailer(&[0u8; 12]), Some((&[0u8; 11][..], &[][..])));
        assert_eq!(split_trailer(&[]), None);
        assert_eq!(
            split_trailer(&[1, 2, 3, 2]),
            None,
            "2 records do not fit in 3 bytes"
        );
        assert_eq!(split_trailer(&[9]), None, "more than MAX_HOPS");
    }

    #[test]
    fn virtual_records_scale_time_and_rate_but_not_bytes() {
        let h = Hop {
            ts_ns: 100_000,
            tx_bytes: 12_345,
            qlen: 6_000,
            rate_mbps: 1000,
            port: 0x0001_0203,
        }
        .to_virtual(TimeScale(100));
        assert_eq!(h.ts, Instant::from_picos(1_000_000));
        assert_eq!(h.link_rate, Rate::gbps(100));
        assert_eq!(h.qlen, Bytes(6_000));
        assert_eq!(h.tx_bytes, 12_345);
        assert_eq!(h.port, Some(0x0001_0203), "the port goes through as it is");
    }

    #[test]
    fn a_port_id_is_the_low_four_bytes_of_the_mac() {
        assert_eq!(port_id([0x02, 0xfb, 0, 1, 2, 0]), 0x0001_0200);
        assert_ne!(
            port_id([0x02, 0xfb, 0, 1, 2, 0]),
            port_id([0x02, 0xfb, 0, 1, 2, 1]),
            "the two ends of a link differ"
        );
    }
}
