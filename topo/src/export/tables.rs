//! Which routing tables an export writes: the up*/down* ECMP tables
//! ([`Routes`]) or the single-path balanced tables derived from them ([`Lft`]).

use crate::lft::Lft;
use crate::model::{Fabric, NodeId, Port};
use crate::routing::Routes;

/// The tables to export.
#[derive(Debug, Clone, Copy)]
pub enum Tables<'a> {
    /// ECMP: every equal-cost next hop (IP formats write ECMP groups).
    Ecmp(&'a Routes),
    /// Single path per destination host (d-mod-k, like OpenSM `ftree`).
    SinglePath(&'a Routes, &'a Lft),
}

impl<'a> Tables<'a> {
    /// The ECMP tables (also behind a single-path table).
    pub fn routes(&self) -> &'a Routes {
        match *self {
            Tables::Ecmp(r) | Tables::SinglePath(r, _) => r,
        }
    }

    /// Engine name as the CLI spells it.
    pub fn engine(&self) -> &'static str {
        match self {
            Tables::Ecmp(_) => "ecmp",
            Tables::SinglePath(..) => "single-path",
        }
    }

    /// Next-hop ports of `switch` toward host `dst`, appended to `out`.
    pub fn next_hops(&self, f: &Fabric, switch: NodeId, dst: NodeId, out: &mut Vec<Port>) {
        match *self {
            Tables::Ecmp(r) => out.extend_from_slice(r.next_hops(switch, dst)),
            Tables::SinglePath(_, l) => out.extend(l.port(f, switch, dst)),
        }
    }
}
