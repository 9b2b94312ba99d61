//! Topology-only exports (no routing table needed): Graphviz DOT and the
//! Slurm `topology.conf` tree.

use std::io::Write;

use super::{ExportError, dot, slurm};
use crate::model::{Fabric, LinkId};

/// Writes the whole fabric as a DOT graph (all planes, one rank per tier); links that
/// `link_up` rejects are drawn as failed (dashed, red) and counted in a comment.
pub fn write_dot<W: Write>(
    w: &mut W,
    f: &Fabric,
    link_up: &dyn Fn(LinkId) -> bool,
) -> Result<(), ExportError> {
    dot::start(w, f.name())?;
    let failed = (0..f.num_links() as u32)
        .filter(|&l| !link_up(LinkId(l)))
        .count();
    if failed > 0 {
        writeln!(w, "  // {failed} failed links, drawn dashed red")?;
    }
    dot::tier(w, 0, "hosts (NICs)", f.hosts().map(|h| f.node_name(h)))?;
    for t in 1..=3u8 {
        let label = ["leaves", "spines / aggregation", "cores"][usize::from(t) - 1];
        let mut it = f.switches_in_tier(t).peekable();
        if it.peek().is_some() {
            dot::tier(w, usize::from(t), label, it.map(|s| f.node_name(s)))?;
        }
    }
    for (i, l) in f.links().iter().enumerate() {
        dot::edge(
            w,
            f.node_name(l.a),
            u32::from(l.a_port),
            f.node_name(l.b),
            u32::from(l.b_port),
            !link_up(LinkId(i as u32)),
        )?;
    }
    dot::finish(w)?;
    Ok(())
}

/// Slurm node name of a server: `host<s>`, the server part of the model's
/// NIC names `host<s>-nic<r>`.
pub fn server_name(server: u32) -> String {
    super::sched::server_name(server)
}

/// Writes a Slurm `topology.conf` (tree plugin): one tree over all planes, whose leaves
/// are the scheduler view's blocks (servers that share their leaf switches, see
/// [`super::sched`]), then pods, then one root, so Slurm sees hop distances
/// leaf < pod < fabric. Each line carries `LinkSpeed` (Gb/s per link).
pub fn write_slurm<W: Write>(w: &mut W, f: &Fabric) -> Result<(), ExportError> {
    let t = super::sched::SchedTree::new(f);
    slurm::write_topology_conf(w, &t, f.name())?;
    Ok(())
}
