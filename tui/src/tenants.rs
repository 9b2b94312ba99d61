//! Tenants (`--tenants FILE`, docs/tenants.md): which links are each tenant's, for the
//! tenant filter (`t` cycles through them) that restricts the links table, the heat map's
//! mask, the header and its sparklines to one tenant.
//!
//! A tenant's links are its hosts' links (host to leaf), found by the hosts' names, so
//! the view is rebuilt for any fabric map a source sends. Links above the leaves carry
//! several tenants' traffic and belong to none (the daemon's `/api/v1/tenants` counts
//! the same links).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fabric::FabricView;
use crate::metrics::{History, Sample, Totals};

/// The tenant file's entries, by host name (independent of any fabric map).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TenantSpec {
    /// Entry names (services first, as the file resolves them).
    pub names: Vec<String>,
    /// Host (NIC) names of each entry.
    pub hosts: Vec<Vec<String>>,
}

impl TenantSpec {
    /// Reads and checks a tenant file against the design `f`
    /// (`scenario::tenancy::read_tenants`: errors name the file, the entry and the limit;
    /// a file past 64 MiB is refused, read no further).
    pub fn load(path: &Path, f: &topo::Fabric) -> Result<TenantSpec> {
        let t =
            scenario::tenancy::read_tenants(path, f).map_err(|e| Error::Tenants(e.to_string()))?;
        Ok(TenantSpec {
            names: t.entries().iter().map(|e| e.name.clone()).collect(),
            hosts: t
                .entries()
                .iter()
                .map(|e| {
                    e.hosts
                        .iter()
                        .map(|&h| f.node_name(h).to_string())
                        .collect()
                })
                .collect(),
        })
    }

    /// Each entry's links in `fabric`.
    pub fn view(&self, fabric: &FabricView) -> TenantView {
        let by_name: HashMap<&str, usize> = self
            .hosts
            .iter()
            .enumerate()
            .flat_map(|(i, hs)| hs.iter().map(move |h| (h.as_str(), i)))
            .collect();
        let owner = |n: u32| by_name.get(fabric.node_name(n)).copied();
        let mut links = vec![Vec::new(); self.names.len()];
        for (id, l) in fabric.links.iter().enumerate() {
            if let Some(e) = owner(l.a).or_else(|| owner(l.b)) {
                links[e].push(id as u32);
            }
        }
        let masks = links
            .iter()
            .map(|ids| {
                let mut m = vec![false; fabric.links.len()];
                for &id in ids {
                    m[id as usize] = true;
                }
                Arc::from(m)
            })
            .collect();
        TenantView {
            names: self.names.clone(),
            hosts: self.hosts.iter().map(Vec::len).collect(),
            links,
            masks,
        }
    }
}

/// Each entry's links in one fabric map.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TenantView {
    /// Entry names.
    pub names: Vec<String>,
    /// Hosts of each entry.
    pub hosts: Vec<usize>,
    /// Link ids of each entry, ascending.
    pub links: Vec<Vec<u32>>,
    /// Per entry, per link: is it the entry's.
    pub masks: Vec<Arc<[bool]>>,
}

/// The links-table query's tenant restriction: entry `index`'s mask (compared by index:
/// the mask of an index changes only with the fabric, which starts the rows afresh).
#[derive(Debug, Clone)]
pub struct TenantMask {
    /// The entry.
    pub index: usize,
    /// Its links.
    pub mask: Arc<[bool]>,
}

impl PartialEq for TenantMask {
    fn eq(&self, o: &TenantMask) -> bool {
        self.index == o.index
    }
}

/// What the header shows for one tenant, kept as samples are shown.
#[derive(Debug, Clone, Default)]
pub struct TenantTotals {
    /// Totals over its links for the sample on screen.
    pub totals: Totals,
    /// Its totals' history (sparklines).
    pub history: History,
    /// Drops counted on its links since the first sample shown (rates × intervals).
    pub drops: f64,
}

/// Every entry's totals for sample `s`, carrying `prev`'s drop counts and histories.
pub fn update(
    view: &TenantView,
    fabric: &FabricView,
    s: &Sample,
    prev: &mut Vec<TenantTotals>,
    cap: usize,
) {
    prev.resize_with(view.links.len(), || TenantTotals {
        history: History::new(cap),
        ..TenantTotals::default()
    });
    for (t, ids) in prev.iter_mut().zip(&view.links) {
        let mut totals = s.totals_over(fabric, ids);
        t.drops += totals.drops_per_s * s.interval_ns as f64 * 1e-9;
        totals.drops_total = t.drops.round() as u64;
        t.totals = totals;
        t.history.push_totals(s.at_ns, &t.totals);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenants_links_are_its_hosts_links() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/tenants/fat-tree-k4.toml"
        );
        let spec = TenantSpec::load(Path::new(path), &f).unwrap();
        assert_eq!(spec.names, ["mgmt", "storage", "a", "b"]);
        let fabric = FabricView::from_topo(&f);
        let v = spec.view(&fabric);
        let counts: Vec<usize> = v.links.iter().map(Vec::len).collect();
        assert_eq!(counts, [1, 2, 6, 7]);
        for (ids, mask) in v.links.iter().zip(&v.masks) {
            assert_eq!(mask.iter().filter(|&&k| k).count(), ids.len());
            for &id in ids {
                assert_eq!(fabric.links[id as usize].tier, 0, "host links only");
            }
        }
        let a_link = v.links[2][0];
        let l = &fabric.links[a_link as usize];
        assert!(spec.hosts[2].contains(&fabric.node_name(l.a).to_string()));
    }

    /// A tenant file past the cap (sparse, or a link to /dev/zero) is refused naming the
    /// file and the limit, read no further (it was read whole, an endless one for ever).
    #[test]
    fn a_huge_tenant_file_is_refused_at_the_cap() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let cap = scenario::tenancy::MAX_TENANT_FILE_BYTES;
        let huge = testkit::huge::HugeFiles::new("tui-tenants", "toml", cap);
        for p in huge.all() {
            let e = TenantSpec::load(p, &f).unwrap_err().to_string();
            assert!(
                e.ends_with(&format!(
                    "{}: larger than the 64 MiB a tenant file may have",
                    p.display()
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn a_bad_file_names_the_entry() {
        let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
        let p = std::env::temp_dir().join(format!("tui-tenants-{}.toml", std::process::id()));
        std::fs::write(&p, "[[tenants]]\nname = \"a\"\nservers = [\"0-99\"]\n").unwrap();
        let e = TenantSpec::load(&p, &f).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(
            e.contains("tenants[0].servers[0]: server 99 does not exist"),
            "{e}"
        );
    }
}
