//! SONiC `APPL_DB` `ROUTE_TABLE` entries in the JSON form `swssconfig` loads
//! (sonic-swss `doc/swss-schema.md`, ROUTE_TABLE: key `ROUTE_TABLE:prefix`,
//! fields `nexthop` and `ifname` as comma-separated lists of equal length,
//! `weight` likewise when the next hops are not equally weighted).
//!
//! ```json
//! [
//!   {
//!     "ROUTE_TABLE:10.0.1.0/24": {
//!       "nexthop": "10.1.0.1,10.1.0.5",
//!       "ifname": "Ethernet8,Ethernet12"
//!     },
//!     "OP": "SET"
//!   }
//! ]
//! ```
//! One file per switch; load it on the switch with `swssconfig FILE`.

use std::fmt::Display;
use std::io::{self, Write};

/// Streams the entries of one switch's file; call [`SonicWriter::finish`] at the end.
#[derive(Debug)]
pub struct SonicWriter {
    first: bool,
}

impl SonicWriter {
    /// Starts the JSON array.
    pub fn start<W: Write>(w: &mut W) -> io::Result<Self> {
        w.write_all(b"[")?;
        Ok(Self { first: true })
    }

    /// Writes one `ROUTE_TABLE:<prefix>` entry. `hops` gives (next-hop address,
    /// interface name, weight) per ECMP member; weights are only written when
    /// they differ.
    pub fn route<W: Write, P: Display, A: Display, D: Display>(
        &mut self,
        w: &mut W,
        prefix: P,
        hops: &[(A, D, u32)],
    ) -> io::Result<()> {
        w.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        write!(
            w,
            "  {{\n    \"ROUTE_TABLE:{prefix}\": {{\n      \"nexthop\": \""
        )?;
        for (i, (a, _, _)) in hops.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write!(w, "{a}")?;
        }
        w.write_all(b"\",\n      \"ifname\": \"")?;
        for (i, (_, d, _)) in hops.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write!(w, "{d}")?;
        }
        w.write_all(b"\"")?;
        if hops.windows(2).any(|p| p[0].2 != p[1].2) {
            w.write_all(b",\n      \"weight\": \"")?;
            for (i, (_, _, wt)) in hops.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write!(w, "{wt}")?;
            }
            w.write_all(b"\"")?;
        }
        w.write_all(b"\n    },\n    \"OP\": \"SET\"\n  }")
    }

    /// Closes the JSON array.
    pub fn finish<W: Write>(self, w: &mut W) -> io::Result<()> {
        w.write_all(if self.first { b"]\n" } else { b"\n]\n" })
    }
}
