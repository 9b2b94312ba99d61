//! [`FabricView`]: what the TUI knows about a fabric's shape — node names, links and the
//! heat-map grids of each plane — built once from a `topo::Fabric` or a source's port map.
//!
//! Grids: a 2-tier plane is a leaf × spine matrix; a 3-tier plane is pod × core at the top
//! (a cell folds every aggregation switch of the pod to that core) and, per pod, a
//! leaf × aggregation matrix one drill-down below. Host links are in the links table.

/// One node (host NIC or switch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLabel {
    /// Name as the fabric spec gives it.
    pub name: String,
    /// Tier: 0 host, 1 leaf, 2 spine / aggregation, 3 core.
    pub tier: u8,
    /// Plane of a switch.
    pub plane: Option<u16>,
    /// Pod of a leaf or aggregation switch.
    pub pod: Option<u32>,
}

/// One link's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLabel {
    /// Lower end node.
    pub a: u32,
    /// Port on `a`.
    pub a_port: u16,
    /// Upper end node.
    pub b: u32,
    /// Port on `b`.
    pub b_port: u16,
    /// Line rate, bits per second.
    pub rate_bps: u64,
    /// Link tier = tier of the lower end: 0 host–leaf, 1 leaf–spine, 2 spine–core.
    pub tier: u8,
    /// Plane (of the upper end).
    pub plane: Option<u16>,
}

/// One cell entry of a [`Grid`]: a link at (row, col). Several links may share a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridLink {
    /// Row index.
    pub row: u32,
    /// Column index.
    pub col: u32,
    /// Link id.
    pub link: u32,
}

/// What a grid's rows stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// Each row is one switch.
    Switch,
    /// Each row is a pod (drill-down opens the pod's own grid).
    Pod,
}

/// A matrix of links: rows are lower switches (or pods), columns upper switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Title ("plane 0 leaf × spine").
    pub title: String,
    /// Row labels.
    pub rows: Vec<String>,
    /// Column labels.
    pub cols: Vec<String>,
    /// What a row is.
    pub row_kind: RowKind,
    /// Pod number of each row when `row_kind` is `Pod`.
    pub row_pods: Vec<u32>,
    /// Links, sorted by (row, col).
    pub links: Vec<GridLink>,
}

impl Grid {
    /// The links in the cell (row, col).
    pub fn cell(&self, row: u32, col: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.links.partition_point(|g| (g.row, g.col) < (row, col));
        self.links[start..]
            .iter()
            .take_while(move |g| g.row == row && g.col == col)
            .map(|g| g.link)
    }
}

/// The grids of one plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneView {
    /// Plane number.
    pub plane: u16,
    /// The top grid (leaf × spine, or pod × core).
    pub top: Grid,
    /// Per pod (3-tier planes only): (pod number, leaf × aggregation grid).
    pub pods: Vec<(u32, Grid)>,
}

/// The fabric as the TUI shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricView {
    /// Fabric name.
    pub name: String,
    /// Nodes by id.
    pub nodes: Vec<NodeLabel>,
    /// Links by id.
    pub links: Vec<LinkLabel>,
    /// Planes in order.
    pub planes: Vec<PlaneView>,
}

impl FabricView {
    /// From a `topo` fabric.
    pub fn from_topo(f: &topo::Fabric) -> FabricView {
        let nodes = (0..f.num_nodes() as u32)
            .map(|i| {
                let n = topo::NodeId(i);
                NodeLabel {
                    name: f.node_name(n).to_string(),
                    tier: f.tier(n),
                    plane: f.plane(n),
                    pod: f.pod(n),
                }
            })
            .collect::<Vec<_>>();
        let links = f
            .links()
            .iter()
            .map(|l| LinkLabel {
                a: l.a.0,
                a_port: l.a_port,
                b: l.b.0,
                b_port: l.b_port,
                rate_bps: l.rate_bps,
                tier: f.tier(l.a).min(2),
                plane: f.plane(l.b),
            })
            .collect();
        FabricView::new(f.name().to_string(), nodes, links)
    }

    /// From nodes and links (any source's port map); builds the grids.
    pub fn new(name: String, nodes: Vec<NodeLabel>, links: Vec<LinkLabel>) -> FabricView {
        let mut planes: Vec<u16> = nodes.iter().filter_map(|n| n.plane).collect();
        planes.sort_unstable();
        planes.dedup();
        let mut v = FabricView {
            name,
            nodes,
            links,
            planes: Vec::new(),
        };
        v.planes = planes.iter().map(|&p| v.plane_view(p)).collect();
        v
    }

    /// Name of a node ("?" for an id out of range).
    pub fn node_name(&self, n: u32) -> &str {
        self.nodes.get(n as usize).map_or("?", |x| x.name.as_str())
    }

    /// "leaf-3:12 ↔ spine-1:3" for a link.
    pub fn link_name(&self, l: u32) -> String {
        let x = &self.links[l as usize];
        format!(
            "{}:{} ↔ {}:{}",
            self.node_name(x.a),
            x.a_port,
            self.node_name(x.b),
            x.b_port
        )
    }

    fn plane_view(&self, p: u16) -> PlaneView {
        let in_plane = |n: &NodeLabel, t: u8| n.plane == Some(p) && n.tier == t;
        let has_core = self.nodes.iter().any(|n| in_plane(n, 3));
        if !has_core {
            let top = self.switch_grid(
                "leaf × spine".to_string(),
                |n| in_plane(n, 1),
                |n| in_plane(n, 2),
            );
            return PlaneView {
                plane: p,
                top,
                pods: Vec::new(),
            };
        }
        let mut pods: Vec<u32> = self
            .nodes
            .iter()
            .filter(|n| in_plane(n, 2))
            .filter_map(|n| n.pod)
            .collect();
        pods.sort_unstable();
        pods.dedup();
        let top = self.pod_core_grid(p, &pods);
        let pods = pods
            .iter()
            .map(|&pod| {
                let title = format!("pod {pod} leaf × aggregation");
                let g = self.switch_grid(
                    title,
                    |n| in_plane(n, 1) && n.pod == Some(pod),
                    |n| in_plane(n, 2) && n.pod == Some(pod),
                );
                (pod, g)
            })
            .collect();
        PlaneView {
            plane: p,
            top,
            pods,
        }
    }

    fn switch_grid(
        &self,
        title: String,
        is_row: impl Fn(&NodeLabel) -> bool,
        is_col: impl Fn(&NodeLabel) -> bool,
    ) -> Grid {
        let mut row_of = vec![u32::MAX; self.nodes.len()];
        let mut col_of = vec![u32::MAX; self.nodes.len()];
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        for (i, n) in self.nodes.iter().enumerate() {
            if is_row(n) {
                row_of[i] = rows.len() as u32;
                rows.push(n.name.clone());
            } else if is_col(n) {
                col_of[i] = cols.len() as u32;
                cols.push(n.name.clone());
            }
        }
        let mut links = Vec::new();
        for (id, l) in self.links.iter().enumerate() {
            let (r, c) = (row_of[l.a as usize], col_of[l.b as usize]);
            if r != u32::MAX && c != u32::MAX {
                links.push(GridLink {
                    row: r,
                    col: c,
                    link: id as u32,
                });
            }
        }
        links.sort_unstable_by_key(|g| (g.row, g.col, g.link));
        Grid {
            title,
            rows,
            cols,
            row_kind: RowKind::Switch,
            row_pods: Vec::new(),
            links,
        }
    }

    fn pod_core_grid(&self, p: u16, pods: &[u32]) -> Grid {
        let mut col_of = vec![u32::MAX; self.nodes.len()];
        let mut cols = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.plane == Some(p) && n.tier == 3 {
                col_of[i] = cols.len() as u32;
                cols.push(n.name.clone());
            }
        }
        let mut links = Vec::new();
        for (id, l) in self.links.iter().enumerate() {
            let (a, c) = (&self.nodes[l.a as usize], col_of[l.b as usize]);
            if c == u32::MAX || a.tier != 2 {
                continue;
            }
            if let Some(r) = a.pod.and_then(|pod| pods.binary_search(&pod).ok()) {
                links.push(GridLink {
                    row: r as u32,
                    col: c,
                    link: id as u32,
                });
            }
        }
        links.sort_unstable_by_key(|g| (g.row, g.col, g.link));
        Grid {
            title: "pod × core".into(),
            rows: pods.iter().map(|x| format!("pod {x}")).collect(),
            cols,
            row_kind: RowKind::Pod,
            row_pods: pods.to_vec(),
            links,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fat_tree_grids() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let v = FabricView::from_topo(&f);
        assert_eq!(v.planes.len(), 1);
        let p = &v.planes[0];
        // k=4: 4 pods × 4 cores, each agg has 2 core links; a pod has 2 aggs → 2 links/cell? No:
        // every core connects to exactly one agg per pod, so one link per (pod, core) cell.
        assert_eq!((p.top.rows.len(), p.top.cols.len()), (4, 4));
        assert_eq!(p.top.links.len(), 16);
        assert_eq!(p.pods.len(), 4);
        assert_eq!((p.pods[0].1.rows.len(), p.pods[0].1.cols.len()), (2, 2));
        assert_eq!(p.pods[0].1.links.len(), 4);
        assert_eq!(p.top.cell(0, 0).count(), 1);
    }

    #[test]
    fn leaf_spine_grid() {
        let f = topo::generators::leaf_spine(6, 3, 4, topo::Rate::gbps(400)).unwrap();
        let v = FabricView::from_topo(&f);
        let g = &v.planes[0].top;
        assert_eq!((g.rows.len(), g.cols.len(), g.links.len()), (6, 3, 18));
        assert!(v.planes[0].pods.is_empty());
    }
}
