//! `veth_core`: the sans-IO core of the veth congestion testbed — everything that decides
//! what happens to a frame, with no socket, no namespace and no clock (time is an
//! argument, as in `cc-algos`). The I/O shell that runs it on real veth links is crate `veth`.
//!
//! Layout:
//! - [`wire`]: wire formats (Ethernet, IPv4, UDP, InfiniBand BTH/AETH, RoCEv2 ICRC, PFC),
//!   each a zero-copy `Packet<T>` view plus a `Repr` (STYLE.md point 9).
//! - [`switch`]: the userspace switch: egress queues paced at link rate (strict priority,
//!   or ETS between weighted priorities), shared buffer, ECN marking, PFC, trimming, counters.
//! - [`fabric`]: many switches behind one flat port numbering, served by one loop,
//!   with scheduled link failures and re-routes.
//! - [`endpoint`]: RoCEv2 senders/receivers driving `cc-algos` controllers.
//! - [`spray`]: packet spraying for the endpoints: the sender's EV policy (`cc-algos`)
//!   and a receiver window that accepts packets out of order.
//! - [`pcap`]: a pcap writer (what a port sees) over any `io::Write`, decodable by tshark
//!   as RoCE and PFC.
//!
//! ```
//! use veth_core::wire::pfc;
//! let frame = pfc::Repr::single(3, 0xffff).to_frame([2, 0, 0, 0, 0, 1]);
//! let back = pfc::Repr::from_frame(&frame).unwrap().unwrap();
//! assert_eq!(back.quanta[3], 0xffff);
//! ```

pub mod endpoint;
mod ets;
pub mod fabric;
pub mod int;
pub mod pcap;
pub mod spray;
pub mod switch;
pub mod wire;
