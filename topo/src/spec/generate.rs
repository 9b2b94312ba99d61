//! Turns a validated spec ([`Plan`]) into a [`Fabric`].

use super::Spec;
use super::validate::Plan;
use crate::model::*;

/// Builds the fabric of a validated spec.
pub(super) fn generate(spec: &Spec, plan: &Plan) -> Fabric {
    let h = &spec.hosts;
    let np = plan.planes.len();
    let layout = HostLayout {
        servers: plan.servers,
        nics_per_server: h.nics_per_server,
        gpus_per_server: h.gpus_per_server,
        scale_up_domain: h.scale_up_domain.unwrap_or(h.gpus_per_server),
    };
    let mut b = FabricBuilder::new(&spec.name, layout, np);
    let starts = add_nodes(&mut b, plan);
    add_host_links(&mut b, spec, plan, &starts);
    add_leaf_links(&mut b, plan, &starts);
    add_core_links(&mut b, plan, &starts);
    add_global_links(&mut b, plan, &starts);
    b.finish()
}

/// Switches, plane by plane; returns (first leaf, first spine, first core) per plane.
fn add_nodes(b: &mut FabricBuilder, plan: &Plan) -> Vec<(u32, u32, u32)> {
    let np = plan.planes.len();
    let pre = |p: usize| {
        if np > 1 {
            format!("p{p}-")
        } else {
            String::new()
        }
    };
    let mut starts = Vec::new();
    for (pi, pp) in plan.planes.iter().enumerate() {
        let pl = pre(pi);
        let p16 = pi as u16;
        let df = pp.kind == PlaneKind::DragonflyPlus;
        let leaf0 = b.next_id();
        for pod in 0..pp.pods {
            for l in 0..pp.lpp {
                if df {
                    b.add_node(TIER_LEAF, p16, pod, format_args!("{pl}g{pod}-leaf{l}"));
                } else if pp.pods > 1 {
                    b.add_node(TIER_LEAF, p16, pod, format_args!("{pl}pod{pod}-leaf{l}"));
                } else {
                    b.add_node(TIER_LEAF, p16, pod, format_args!("{pl}leaf{l}"));
                }
            }
        }
        let spine0 = b.next_id();
        if pp.per_pod_spines {
            for pod in 0..pp.pods {
                for s in 0..pp.spines {
                    if df {
                        b.add_node(TIER_SPINE, p16, pod, format_args!("{pl}g{pod}-spine{s}"));
                    } else {
                        b.add_node(TIER_SPINE, p16, pod, format_args!("{pl}pod{pod}-agg{s}"));
                    }
                }
            }
        } else {
            for s in 0..pp.spines {
                b.add_node(TIER_SPINE, p16, NONE, format_args!("{pl}spine{s}"));
            }
        }
        let core0 = b.next_id();
        for g in 0..if pp.cores > 0 { pp.spines } else { 0 } {
            for c in 0..pp.cores {
                b.add_node(TIER_CORE, p16, NONE, format_args!("{pl}core{g}-{c}"));
            }
        }
        let end = b.next_id();
        b.f.planes.push(PlaneInfo {
            kind: pp.kind,
            tiers: [leaf0..spine0, spine0..core0, core0..end],
            pods: pp.pods,
            external_up: [0, if pp.cores == 0 && !df { pp.spine_up } else { 0 }, 0],
            external_up_rate_bps: [0, pp.spine_up_rate, 0],
            radix: pp.radix,
        });
        starts.push((leaf0, spine0, core0));
    }
    starts
}

/// Host links: all planes first, so every leaf's down ports precede its up ports.
fn add_host_links(b: &mut FabricBuilder, spec: &Spec, plan: &Plan, starts: &[(u32, u32, u32)]) {
    let h = &spec.hosts;
    let np = plan.planes.len();
    let nplanes = np as u32;
    for (pi, pp) in plan.planes.iter().enumerate() {
        let (leaf0, _, _) = starts[pi];
        for s in 0..plan.servers {
            let pod = s / pp.servers_per_pod;
            let ls = s % pp.servers_per_pod;
            for j in 0..plan.rails {
                let g = j * nplanes + pi as u32;
                let r = g / h.ports_per_nic;
                let host = NodeId(s * h.nics_per_server + r);
                let leaf_local = if h.rail_optimized {
                    j * (pp.lpp / plan.rails) + ls / pp.leaf_down
                } else {
                    (ls * plan.rails + j) / pp.leaf_down
                };
                let leaf = NodeId(leaf0 + pod * pp.lpp + leaf_local);
                b.add_link(host, leaf, h.rate.0, h.delay_ns);
            }
        }
    }
}

/// Leaf → spine links.
fn add_leaf_links(b: &mut FabricBuilder, plan: &Plan, starts: &[(u32, u32, u32)]) {
    for (pi, pp) in plan.planes.iter().enumerate() {
        let (leaf0, spine0, _) = starts[pi];
        for pod in 0..pp.pods {
            for l in 0..pp.lpp {
                let leaf = NodeId(leaf0 + pod * pp.lpp + l);
                for u in 0..pp.leaf_up {
                    let s = if pp.per_pod_spines {
                        pod * pp.spines + u % pp.spines
                    } else {
                        u % pp.spines
                    };
                    b.add_link(leaf, NodeId(spine0 + s), pp.leaf_up_rate, pp.leaf_delay);
                }
            }
        }
    }
}

/// Aggregation → core links.
fn add_core_links(b: &mut FabricBuilder, plan: &Plan, starts: &[(u32, u32, u32)]) {
    for (pi, pp) in plan.planes.iter().enumerate() {
        if pp.cores == 0 {
            continue;
        }
        let (_, spine0, core0) = starts[pi];
        for pod in 0..pp.pods {
            for j in 0..pp.spines {
                let agg = NodeId(spine0 + pod * pp.spines + j);
                for u in 0..pp.spine_up {
                    let c = NodeId(core0 + j * pp.cores + u % pp.cores);
                    b.add_link(agg, c, pp.spine_up_rate, pp.spine_delay);
                }
            }
        }
    }
}

/// Dragonfly+ global links: port i of group g goes to group g + 1 + (i mod (G-1)).
fn add_global_links(b: &mut FabricBuilder, plan: &Plan, starts: &[(u32, u32, u32)]) {
    for (pi, pp) in plan.planes.iter().enumerate() {
        if pp.kind != PlaneKind::DragonflyPlus {
            continue;
        }
        let (_, spine0, _) = starts[pi];
        let g_n = pp.pods;
        let hh = pp.spine_up;
        let per_group = pp.spines * hh;
        for g in 0..g_n {
            for i in 0..per_group {
                let off = 1 + i % (g_n - 1);
                let m = i / (g_n - 1);
                let g2 = (g + off) % g_n;
                if g < g2 {
                    let i2 = m * (g_n - 1) + (g_n - off - 1);
                    let s1 = NodeId(spine0 + g * pp.spines + i / hh);
                    let s2 = NodeId(spine0 + g2 * pp.spines + i2 / hh);
                    b.add_link(s1, s2, pp.spine_up_rate, pp.spine_delay);
                }
            }
        }
    }
}
