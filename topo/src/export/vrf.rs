//! Per-tenant VRFs on the leaves ([`crate::tenants::leaf::leaf_vrfs`]) in three formats,
//! one file per leaf that has any:
//!
//! | format | file | loads with |
//! |---|---|---|
//! | `vrf-ip` | `vrf/ip/<leaf>.batch` | `ip -batch` (iproute2): VRF devices, enslaved ports, tables |
//! | `vrf-frr` | `vrf/frr/<leaf>.conf` | FRR staticd: `vrf` blocks of static routes, next hops leaked from the default VRF (`nexthop-vrf default`) |
//! | `vrf-sonic` | `vrf/sonic/<leaf>.json` | SONiC `swssconfig` (APPL_DB `VRF_TABLE`, `INTF_TABLE` `vrf_name`, `ROUTE_TABLE:<vrf>:<prefix>`) |
//!
//! Each VRF table starts with an `unreachable` default in both families, so a lookup that
//! misses is dropped instead of falling through to the main table (Linux tries the rules
//! after the l3mdev rule otherwise). The `ip` file re-adds the main table's host route of
//! every port it enslaves (enslaving cycles the port, which flushes it), so traffic from the
//! uplinks still reaches the host.

use std::io::{self, Write};

use crate::export::routes::{LinuxIf, SonicIf};
use crate::model::Fabric;
use crate::tenants::leaf::{LeafVrf, Out};

use super::{ExportError, Sink, sink};

/// Metric of the `unreachable` default (the kernel's highest, as iproute2's VRF docs use).
pub const UNREACHABLE_METRIC: u32 = 4_278_198_272;

/// A VRF export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VrfFormat {
    /// `ip -batch`.
    Ip,
    /// FRR static routes per VRF.
    Frr,
    /// SONiC APPL_DB JSON.
    Sonic,
}

impl VrfFormat {
    /// Every format.
    pub const ALL: [VrfFormat; 3] = [VrfFormat::Ip, VrfFormat::Frr, VrfFormat::Sonic];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            VrfFormat::Ip => "vrf-ip",
            VrfFormat::Frr => "vrf-frr",
            VrfFormat::Sonic => "vrf-sonic",
        }
    }

    fn file(self, leaf: &str) -> String {
        match self {
            VrfFormat::Ip => format!("vrf/ip/{leaf}.batch"),
            VrfFormat::Frr => format!("vrf/frr/{leaf}.conf"),
            VrfFormat::Sonic => format!("vrf/sonic/{leaf}.json"),
        }
    }
}

/// Writes `format` for every leaf of `vrfs` (grouped by leaf, as `leaf_vrfs` returns them).
pub fn export<S: Sink>(
    f: &Fabric,
    vrfs: &[LeafVrf],
    format: VrfFormat,
    sink: &mut S,
) -> Result<(), ExportError> {
    for group in vrfs.chunk_by(|a, b| a.leaf == b.leaf) {
        let leaf = f.node_name(group[0].leaf);
        sink::with_file(sink, &format.file(leaf), |w| {
            Ok(match format {
                VrfFormat::Ip => write_ip(group, w),
                VrfFormat::Frr => write_frr(leaf, group, w),
                VrfFormat::Sonic => write_sonic(group, w),
            }?)
        })?;
    }
    Ok(())
}

/// One leaf's VRFs as `ip -batch` lines.
pub fn write_ip(vrfs: &[LeafVrf], w: &mut dyn Write) -> io::Result<()> {
    for v in vrfs {
        let (d, t) = (&v.device, v.table);
        writeln!(w, "link add {d} type vrf table {t}")?;
        writeln!(w, "link set {d} up")?;
        writeln!(
            w,
            "route replace table {t} unreachable default metric {UNREACHABLE_METRIC}"
        )?;
        writeln!(
            w,
            "route replace table {t} unreachable ::/0 metric {UNREACHABLE_METRIC}"
        )?;
        for &(p, _) in &v.ports {
            writeln!(w, "link set {} master {d}", LinuxIf(p))?;
        }
        for r in &v.routes {
            if let Out::Local(p) = r.out
                && v.ports.iter().any(|&(q, _)| q == p)
            {
                // The main table's route, flushed by the enslave: transit from the uplinks.
                if let Some(a) = r.v4 {
                    writeln!(w, "route replace {a}/32 dev {}", LinuxIf(p))?;
                }
                if let Some(a) = r.v6 {
                    writeln!(w, "route replace {a}/128 dev {}", LinuxIf(p))?;
                }
            }
        }
        for r in &v.routes {
            if let Some(a) = r.v4 {
                write!(w, "route replace table {t} {a}/32")?;
                ip_out(w, &r.out, |u| u.via4.map(|x| x.to_string()))?;
            }
            if let Some(a) = r.v6 {
                write!(w, "route replace table {t} {a}/128")?;
                ip_out(w, &r.out, |u| u.via6.map(|x| x.to_string()))?;
            }
        }
    }
    Ok(())
}

fn ip_out(
    w: &mut dyn Write,
    out: &Out,
    via: impl Fn(&crate::tenants::leaf::Uplink) -> Option<String>,
) -> io::Result<()> {
    match out {
        Out::Local(p) => writeln!(w, " dev {}", LinuxIf(*p)),
        Out::Uplinks(hops) => {
            for u in hops {
                if let Some(v) = via(u) {
                    write!(w, " nexthop via {v} dev {}", LinuxIf(u.port))?;
                }
            }
            writeln!(w)
        }
    }
}

/// One leaf's VRFs as FRR configuration (staticd).
pub fn write_frr(leaf: &str, vrfs: &[LeafVrf], w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "! {leaf}: tenant VRFs, generated by fabric")?;
    writeln!(
        w,
        "! The VRF devices and their ports come from the kernel (vrf/ip/{leaf}.batch)."
    )?;
    for v in vrfs {
        writeln!(w, "vrf {}", v.device)?;
        writeln!(w, " ip route 0.0.0.0/0 blackhole 255")?;
        writeln!(w, " ipv6 route ::/0 blackhole 255")?;
        for r in &v.routes {
            for (fam, dst) in [
                ("ip", r.v4.map(|a| format!("{a}/32"))),
                ("ipv6", r.v6.map(|a| format!("{a}/128"))),
            ] {
                let Some(dst) = dst else { continue };
                match &r.out {
                    Out::Local(p) => writeln!(w, " {fam} route {dst} {}", LinuxIf(*p))?,
                    Out::Uplinks(hops) => {
                        for u in hops {
                            let via = if fam == "ip" {
                                u.via4.map(|x| x.to_string())
                            } else {
                                u.via6.map(|x| x.to_string())
                            };
                            if let Some(via) = via {
                                writeln!(
                                    w,
                                    " {fam} route {dst} {via} {} nexthop-vrf default",
                                    LinuxIf(u.port)
                                )?;
                            }
                        }
                    }
                }
            }
        }
        writeln!(w, "exit-vrf\n!")?;
    }
    writeln!(w, "end")
}

/// One leaf's VRFs as SONiC APPL_DB entries (swssconfig JSON).
pub fn write_sonic(vrfs: &[LeafVrf], w: &mut dyn Write) -> io::Result<()> {
    let mut items: Vec<String> = Vec::new();
    for v in vrfs {
        items.push(format!(
            "  {{\n    \"VRF_TABLE:{}\": {{\n      \"v4\": \"true\",\n      \"v6\": \"true\"\n    }},\n    \"OP\": \"SET\"\n  }}",
            v.device
        ));
        for &(p, _) in &v.ports {
            items.push(format!(
                "  {{\n    \"INTF_TABLE:{}\": {{\n      \"vrf_name\": \"{}\"\n    }},\n    \"OP\": \"SET\"\n  }}",
                SonicIf(p),
                v.device
            ));
        }
        for r in &v.routes {
            for dst in [
                r.v4.map(|a| format!("{a}/32")),
                r.v6.map(|a| format!("{a}/128")),
            ]
            .into_iter()
            .flatten()
            {
                let v6 = dst.contains(':');
                let (nh, ifs): (Vec<String>, Vec<String>) = match &r.out {
                    Out::Local(p) => (
                        vec![if v6 { "::" } else { "0.0.0.0" }.to_string()],
                        vec![SonicIf(*p).to_string()],
                    ),
                    Out::Uplinks(hops) => hops
                        .iter()
                        .filter_map(|u| {
                            let via = if v6 {
                                u.via6.map(|x| x.to_string())
                            } else {
                                u.via4.map(|x| x.to_string())
                            };
                            Some((via?, SonicIf(u.port).to_string()))
                        })
                        .unzip(),
                };
                items.push(format!(
                    "  {{\n    \"ROUTE_TABLE:{}:{dst}\": {{\n      \"nexthop\": \"{}\",\n      \"ifname\": \"{}\"\n    }},\n    \"OP\": \"SET\"\n  }}",
                    v.device,
                    nh.join(","),
                    ifs.join(",")
                ));
            }
        }
    }
    writeln!(w, "[\n{}\n]", items.join(",\n"))
}
