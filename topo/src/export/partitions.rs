//! OpenSM `partitions.conf` from a tenant file's partitions
//! ([`crate::tenants::enforce::Enforcement`]), one file per plane (each plane is its own
//! subnet with its own SM; a host's port GUID differs per plane).
//!
//! ```text
//! Default=0x7fff, ipoib : ALL_CAS=limited, ALL_SWITCHES=full, SELF=full;
//! a=0x0001, sl=0 : 0x0002c90300000001=full, …;
//! storage=0x0100, sl=0 : 0x0002c90300000e01=full, 0x0002c90300000001=limited, …;
//! ```
//!
//! Every host is a limited member of the default partition (it reaches the SM, nothing
//! else there); switches and the SM are full members. A partition's `sl=` is the SL its
//! path records carry; with OpenSM's `qos TRUE` and the identity SL→VL map that lanes use
//! (`docs/exports.md`), SL *n* runs on VL *n*, so a tenant's class is its lane.
//! [`crate::tenants::enforce::parse_partitions`] reads the file back.

use std::io::{self, Write};

use crate::addressing::AddressPlan;
use crate::export::ib::lid_port_guid;
use crate::model::Fabric;
use crate::tenants::enforce::{Enforcement, Membership};
use crate::tenants::{DEFAULT_PKEY, Tenants};

use super::{ExportError, Sink, sink};

/// Writes the `partitions.conf` of `plane`.
pub fn write(
    f: &Fabric,
    addr: &AddressPlan,
    t: &Tenants,
    enf: &Enforcement,
    plane: u16,
    w: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        w,
        "# OpenSM partitions of fabric {} plane {plane}: {} tenants and services (written by fabric)",
        f.name(),
        t.entries().len()
    )?;
    writeln!(
        w,
        "# Ports talk only through a shared PKey with a full member among them; limited members"
    )?;
    writeln!(
        w,
        "# (tenants of a shared service) reach its full members and never each other."
    )?;
    for p in &enf.partitions {
        if p.pkey == DEFAULT_PKEY {
            writeln!(
                w,
                "{}={:#06x}, ipoib : ALL_CAS=limited, ALL_SWITCHES=full, SELF=full;",
                p.name, p.pkey
            )?;
            continue;
        }
        write!(w, "{}={:#06x}, sl={} :", p.name, p.pkey, p.sl)?;
        let members = p
            .members
            .iter()
            .filter(|(h, _)| f.attachment(*h, plane).is_some());
        let mut first = true;
        for (h, m) in members {
            let how = match m {
                Membership::Full => "full",
                Membership::Limited => "limited",
            };
            let sep = if first { "" } else { "," };
            write!(
                w,
                "{sep}\n    {:#018x}={how}",
                lid_port_guid(f, addr, *h, plane)
            )?;
            first = false;
        }
        writeln!(w, ";")?;
    }
    Ok(())
}

/// Writes `opensm/plane<p>/partitions.conf` for every plane.
pub fn export<S: Sink>(
    f: &Fabric,
    addr: &AddressPlan,
    t: &Tenants,
    enf: &Enforcement,
    sink: &mut S,
) -> Result<(), ExportError> {
    for p in 0..f.num_planes() as u16 {
        sink::with_file(sink, &format!("opensm/plane{p}/partitions.conf"), |w| {
            Ok(write(f, addr, t, enf, p, w)?)
        })?;
    }
    Ok(())
}
