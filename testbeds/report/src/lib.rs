//! `report`: what every kind of run (simulator, veth testbed) is measured by, and how it
//! is shown. Pure: no I/O beyond writing the SVG files a caller asks for.
//!
//! - [`outcome`]: one outcome model for every kind of run (flows, fabric counters) and
//!   the figures computed from it once: FCT percentiles, slowdown, Jain's index, goodput.
//! - [`compare`]: two runs of the same workplan side by side, flows matched by id; a
//!   flow carried differently by the two is an error, not a quiet mismatch.
//! - [`metrics`]: percentiles and Jain's fairness index.
//! - [`plots`]: SVG charts (line charts, a utilisation heat map, grouped bars) drawn with
//!   `plotters`.
//! - [`table`]: a Markdown table writer used by the comparison commands.
//!
//! ```
//! use report::table;
//! let t = table(&["scheme", "busbw"], &[vec!["ecmp".into(), "31%".into()]]);
//! assert!(t.contains("| ecmp | 31% |"));
//! ```

pub mod compare;
pub mod metrics;
pub mod outcome;
pub mod plots;

pub use metrics::{jain, percentile};

use std::fmt::Write as _;

/// A Markdown table.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(
        s,
        "|{}|",
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}
