//! `topo`: the fabric model and everything computed from it, purely (no I/O
//! beyond what a caller hands in, no clock): specs, generators, presets,
//! addressing, routing engines, verification, failures and exporters.
