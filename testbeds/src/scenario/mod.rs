//! `scenario` (being built).
