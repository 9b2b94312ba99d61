//! The tenants' traffic classes at a switch: the priority an entry's traffic carries,
//! its DSCP and PCP, and the ETS weight of each priority from the entries' shares (what
//! the simulator's and the veth switch's ETS schedulers take, `[network] ets`).
//!
//! Class *c* is 802.1p priority (PCP) *c* and DSCP class selector `c << 3` (RFC 2474
//! §4.2.2.2); the switches map a frame back with `dscp >> 3`.

use super::Tenants;
use crate::model::NodeId;

/// The DSCP that carries class `class` (class selector codepoint).
pub fn dscp(class: u8) -> u8 {
    (class & 7) << 3
}

impl Tenants {
    /// The class the traffic of host `h` carries: its entry's service level (the
    /// entry's first class unless the file says otherwise); `None` for a host in no entry.
    pub fn class_of_host(&self, h: NodeId) -> Option<u8> {
        self.owner(h).map(|e| self.entries()[e].sl)
    }

    /// ETS weight per priority 0-7: each entry's share split evenly over its classes
    /// (the remainder to its first class), summed per class; a class some entry uses
    /// gets at least 1. Priorities no entry uses stay 0, strict priority, as the
    /// control class (CNPs, ACKs) must.
    pub fn ets_weights(&self) -> [u8; 8] {
        let mut w = [0u32; 8];
        let mut used = [false; 8];
        for e in self.entries() {
            let n = e.classes.len().max(1) as u32;
            for (i, &c) in e.classes.iter().enumerate() {
                let c = c as usize & 7;
                used[c] = true;
                w[c] += e.share / n + if i == 0 { e.share % n } else { 0 };
            }
        }
        // Shares add up to at most 100 % (checked when the file is read).
        std::array::from_fn(|c| if used[c] { w[c].clamp(1, 100) as u8 } else { 0 })
    }
}
