//! `sim` (being built): deterministic packet-level simulator.

pub mod rng;
