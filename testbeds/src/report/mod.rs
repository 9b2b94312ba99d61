//! `report` (being built).
