//! `testbeds`: everything that drives the pure cores (`topo`, `cc-algos`) with packets:
//! the packet-level simulator ([`sim`]), real veth testbeds ([`veth`]), the shared
//! workload language ([`scenario`]) and metrics/plots ([`report`]).

pub mod report;
pub mod scenario;
pub mod sim;
pub mod veth;
