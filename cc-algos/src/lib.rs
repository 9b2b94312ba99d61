//! `cc-algos`: congestion control as pure, clock-injected state machines.
//!
//! Nothing in this crate reads a clock, opens a socket or sleeps. Time is an
//! [`Instant`] argument, timers are deadlines ([`SenderCc::next_timeout`] /
//! [`SenderCc::on_timeout`]), so the same controller runs in a unit test, in the
//! packet simulator (`testbeds::sim`) and on real packets (`testbeds::veth`).
//!
//! Layout:
//! - [`units`]: `Instant`, `Duration` (integer picoseconds), `Bytes`, `Rate` (bit/s).
//! - [`traits`]: the sender, receiver and switch-side interfaces every algorithm implements.
//!
//! ```
//! use cc_algos::{Duration, Instant, Rate, Bytes};
//! let t = Instant::ZERO + Duration::micros(55);
//! assert_eq!(t.picos(), 55_000_000);
//! assert_eq!(Rate::gbps(100).tx_time(Bytes(1250)), Duration::nanos(100));
//! ```

pub mod traits;
pub mod units;

pub use traits::{Ack, CcMetrics, SenderCc};
pub use units::{Bytes, Duration, Instant, Rate};
