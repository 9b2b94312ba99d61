//! `sim` (being built).
