//! ETS at the switch's egress ([`crate::switch::SwitchConfig::ets`]): the priority a port
//! serves next. The scheduler is `cc_algos::ets::Ets` (the simulator runs the same one);
//! this module hands it the priorities that may send now (a frame queued, not paused by
//! PFC) and their head frames' sizes. PFC frames keep going first, as without ETS.

use cc_algos::ets::{Ets, PRIORITIES};
use cc_algos::{Instant, PfcEgress};

/// The priority to send from at `now`, given each priority's head frame length (`None`:
/// empty); `None` when no priority may send.
pub(crate) fn select(
    ets: &mut Ets,
    now: Instant,
    pfc_out: &PfcEgress,
    head_len: [Option<u64>; PRIORITIES],
) -> Option<usize> {
    let mut ready = 0u8;
    for (p, h) in head_len.iter().enumerate() {
        if h.is_some() && !pfc_out.is_paused(now, p as u8) {
            ready |= 1 << p;
        }
    }
    ets.select(ready, |p| head_len[p].unwrap_or(0))
}
