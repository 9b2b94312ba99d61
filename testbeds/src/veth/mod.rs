//! `veth` (being built).
