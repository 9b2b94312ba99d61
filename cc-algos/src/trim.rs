//! UEC packet trimming (switch side).
//!
//! When an egress queue is above a threshold, a UEC switch does not drop a data
//! packet: it cuts the payload and forwards only the headers (usually in a
//! higher-priority queue), so the receiver learns of the loss one RTT early and
//! NACKs it (Ultra Ethernet Specification 1.0, packet trimming; the idea is NDP's,
//! Handley et al., SIGCOMM 2017). The sender's NSCC treats the NACK as a congestion
//! signal ([`crate::SenderCc::on_nack`]).

use crate::error::{Result, invalid};
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Trim data packets that would join a queue longer than `threshold`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimPolicy {
    /// Trim when the queue length plus the arriving packet would exceed this.
    pub threshold: Bytes,
    /// Size of what is left of a trimmed packet (its headers). 64 B is the UEC
    /// header allowance htsim's UEC model uses (MTU 4150 B = 4086 B payload + 64 B).
    pub trimmed_size: Bytes,
}

/// What to do with one arriving data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrimDecision {
    /// Enqueue the packet whole.
    Forward,
    /// Cut it to `size` bytes and forward the header (high priority).
    Trim { size: Bytes },
}

impl TrimPolicy {
    /// Checked constructor: positive threshold and trimmed size.
    pub fn new(threshold: Bytes, trimmed_size: Bytes) -> Result<Self> {
        if threshold == Bytes::ZERO {
            return Err(invalid("trim", "threshold", "must be positive"));
        }
        if trimmed_size == Bytes::ZERO {
            return Err(invalid("trim", "trimmed_size", "must be positive"));
        }
        Ok(TrimPolicy {
            threshold,
            trimmed_size,
        })
    }

    /// Decide for a `pkt`-byte data packet arriving at a queue holding `qlen` bytes.
    /// Packets no larger than the trimmed size are never trimmed.
    pub fn decide(&self, qlen: Bytes, pkt: Bytes) -> TrimDecision {
        if pkt > self.trimmed_size && qlen + pkt > self.threshold {
            TrimDecision::Trim {
                size: self.trimmed_size,
            }
        } else {
            TrimDecision::Forward
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_only_above_threshold() {
        let t = TrimPolicy::new(Bytes(10_000), Bytes(64)).unwrap();
        assert_eq!(t.decide(Bytes(5_850), Bytes(4150)), TrimDecision::Forward);
        assert_eq!(
            t.decide(Bytes(5_851), Bytes(4150)),
            TrimDecision::Trim { size: Bytes(64) }
        );
        // A header-sized packet (ACK, NACK) is never trimmed.
        assert_eq!(t.decide(Bytes(1_000_000), Bytes(64)), TrimDecision::Forward);
        assert!(TrimPolicy::new(Bytes(0), Bytes(64)).is_err());
    }
}
