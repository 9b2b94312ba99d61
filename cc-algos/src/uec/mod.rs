//! Ultra Ethernet 1.0 congestion management: NSCC (sender window), RCCC (receiver
//! credit) and entropy-value path selection for packet spraying.

pub mod ev;
pub mod nscc;
pub mod rccc;

pub use ev::{EvConfig, EvPolicy, EvPolicyKind, PathSignal};
pub use nscc::{Nscc, NsccConfig, Quadrant, unloaded_rtt};
pub use rccc::{RcccConfig, RcccReceiver, RcccSender};
