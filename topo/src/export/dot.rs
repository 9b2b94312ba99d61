//! Graphviz DOT of the topology: an undirected `graph`, one `rank=same`
//! group per tier (hosts at the bottom with `rankdir=BT`), one edge per link
//! labelled with the port numbers at each end. Render with
//! `dot -Tsvg fabric.dot -o fabric.svg` (use `sfdp` above a few thousand nodes).

use std::io::{self, Write};

use super::json::write_str as quote;

/// Fill colours per tier (tier 0 = hosts), cycling if there are more tiers.
const COLOURS: [&str; 5] = ["#dddddd", "#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6"];

/// Writes the opening of the graph.
pub fn start<W: Write>(w: &mut W, name: &str) -> io::Result<()> {
    w.write_all(b"graph ")?;
    quote(w, name)?;
    w.write_all(
        b" {\n  graph [rankdir=BT, splines=line, outputorder=edgesfirst, nodesep=0.1];\n  \
          node [shape=box, style=filled, fontsize=10, height=0.3];\n  edge [fontsize=7];\n",
    )
}

/// Writes one tier's nodes as a `rank=same` group. `tier` 0 is the hosts.
pub fn tier<'a, W: Write>(
    w: &mut W,
    tier: usize,
    label: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> io::Result<()> {
    writeln!(
        w,
        "  subgraph tier{tier} {{\n    rank=same;\n    // {label}"
    )?;
    let colour = COLOURS[tier % COLOURS.len()];
    for n in names {
        w.write_all(b"    ")?;
        quote(w, n)?;
        writeln!(w, " [fillcolor=\"{colour}\"];")?;
    }
    w.write_all(b"  }\n")
}

/// Writes one link, `a` port `pa` to `b` port `pb`; a failed link is dashed and red.
pub fn edge<W: Write>(
    w: &mut W,
    a: &str,
    pa: u32,
    b: &str,
    pb: u32,
    failed: bool,
) -> io::Result<()> {
    w.write_all(b"  ")?;
    quote(w, a)?;
    w.write_all(b" -- ")?;
    quote(w, b)?;
    if failed {
        writeln!(
            w,
            " [taillabel={pa}, headlabel={pb}, style=dashed, color=\"#e31a1c\", comment=failed];"
        )
    } else {
        writeln!(w, " [taillabel={pa}, headlabel={pb}];")
    }
}

/// Closes the graph.
pub fn finish<W: Write>(w: &mut W) -> io::Result<()> {
    w.write_all(b"}\n")
}
