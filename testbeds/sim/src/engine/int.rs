//! In-band network telemetry for HPCC (Li et al., SIGCOMM 2019, §3.2 and Fig. 4): every
//! switch egress appends one record (queue length, tx-byte counter, timestamp, link rate)
//! to a data packet as it leaves; the receiver copies the records into the ACK; the
//! sender hands them to `SenderCc::on_ack_int`, so `cc_algos::Hpcc` runs unchanged.
//!
//! Records live beside the packet slots (`KnobState::int_hops`, one vector per slot,
//! reused), only in runs whose algorithm is HPCC.

use super::*;
use cc_algos::IntHop;

impl<Q: EventQueue> Sim<Q> {
    /// A packet slot was (re)allocated: it starts with no records.
    #[inline]
    pub(super) fn int_alloc(&mut self, id: u32) {
        let i = id as usize;
        if self.kx.int_hops.len() <= i {
            self.kx.int_hops.resize_with(i + 1, Vec::new);
        }
        self.kx.int_hops[i].clear();
    }

    /// Switch egress `p` sends data packet `id`: append this hop's record. The queue
    /// length is what the packet leaves behind; the tx counter includes the packet.
    pub(super) fn int_stamp(&mut self, p: u32, id: u32) {
        let pu = p as usize;
        let hop = IntHop {
            qlen: Bytes(self.port[pu].qtotal),
            tx_bytes: self.pc[pu].tx_bytes,
            ts: Instant::from_picos(self.now),
            link_rate: self.net.port_rate[pu],
            port: Some(p),
        };
        self.kx.int_hops[id as usize].push(hop);
    }

    /// A packet is delivered: its records move to the scratch buffer (its slot is
    /// about to be freed and may be reused by the ACK it triggers).
    pub(super) fn int_take(&mut self, id: u32) {
        self.kx.int_scratch.clear();
        std::mem::swap(&mut self.kx.int_scratch, &mut self.kx.int_hops[id as usize]);
    }

    /// The ACK in slot `id` echoes the records of the data packet just delivered.
    pub(super) fn int_echo(&mut self, id: u32) {
        std::mem::swap(&mut self.kx.int_scratch, &mut self.kx.int_hops[id as usize]);
        self.kx.int_scratch.clear();
    }
}
