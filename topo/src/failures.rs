//! Failure sets: links or switches named by the user, or drawn at random with a seed
//! (SplitMix64, so the same seed gives the same set everywhere).
//!
//! Names: a node name (`pod0-agg1`) fails all its links; `A--B` fails the link between
//! nodes A and B (the first one when there are parallel links; `A--B#2` the third);
//! `link:N` fails link id N.

use std::collections::HashMap;

use crate::model::*;
use crate::{Error, Result};

/// A resolved failure set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureSet {
    /// Links to fail (a failed switch contributes all its links).
    pub links: Vec<LinkId>,
    /// Switches failed whole.
    pub nodes: Vec<NodeId>,
}

/// What a failure name may be, for the error of a name that is none of them.
const FAILURE_FORMS: &str =
    "expected a switch or host name (all its links), A--B, A--B#i or link:N";

/// Resolves user-given names (see the module docs).
pub fn resolve(f: &Fabric, names: &[String]) -> Result<FailureSet> {
    let index: HashMap<&str, NodeId> = f.name_index();
    let mut set = FailureSet::default();
    for item in names {
        let s = item.trim();
        if let Some(n) = s.strip_prefix("link:") {
            let id: u32 = n
                .parse()
                .map_err(|_| Error::BadFailure(s.into(), "expected link:<number>".into()))?;
            if id as usize >= f.num_links() {
                return Err(Error::BadFailure(
                    s.into(),
                    format!("the fabric has {} links", f.num_links()),
                ));
            }
            set.links.push(LinkId(id));
        } else if let Some((a, b)) = s.split_once("--") {
            let (b, nth) = match b.split_once('#') {
                Some((b, n)) => (
                    b,
                    n.parse::<usize>()
                        .map_err(|_| Error::BadFailure(s.into(), "expected A--B#<index>".into()))?,
                ),
                None => (b, 0),
            };
            let node = |n: &str| {
                index.get(n).copied().ok_or_else(|| {
                    Error::BadFailure(s.into(), format!("no node named `{n}` ({FAILURE_FORMS})"))
                })
            };
            let (na, nb) = (node(a)?, node(b)?);
            let l = f
                .ports(na)
                .filter(|&(p, _)| p == nb)
                .map(|(_, l)| l)
                .nth(nth)
                .ok_or_else(|| {
                    Error::BadFailure(s.into(), format!("no link {nth} between {a} and {b}"))
                })?;
            set.links.push(l);
        } else {
            let n = *index.get(s).ok_or_else(|| {
                Error::BadFailure(s.into(), format!("no node named `{s}` ({FAILURE_FORMS})"))
            })?;
            set.nodes.push(n);
            set.links.extend(f.ports(n).map(|(_, l)| l));
        }
    }
    Ok(set)
}

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

fn sample<T: Copy>(items: &mut [T], count: usize, seed: u64) -> Vec<T> {
    let mut rng = SplitMix64(seed);
    let count = count.min(items.len());
    for i in 0..count {
        let j = i + rng.below((items.len() - i) as u64) as usize;
        items.swap(i, j);
    }
    items[..count].to_vec()
}

/// `count` distinct switch–switch links, drawn with `seed`, capped at the number the fabric
/// has (for callers that size failures relative to the fabric; a user's count goes
/// through [`random_links_checked`]).
pub fn random_links(f: &Fabric, count: usize, seed: u64) -> Vec<LinkId> {
    let n = switch_links(f).len();
    random_links_checked(f, count.min(n), seed).unwrap_or_default()
}

/// `count` distinct switches, drawn with `seed`, capped at the number the fabric has
/// (a user's count goes through [`random_switches_checked`]).
pub fn random_switches(f: &Fabric, count: usize, seed: u64) -> Vec<NodeId> {
    random_switches_checked(f, count.min(f.num_switches()), seed).unwrap_or_default()
}

fn switch_links(f: &Fabric) -> Vec<LinkId> {
    (0..f.num_links() as u32)
        .map(LinkId)
        .filter(|&l| !f.is_host(f.link(l).a))
        .collect()
}

/// `count` distinct switch–switch links, drawn with `seed`. Asking for more than the
/// fabric has is an error, not a silent cap. Same draw as [`random_links`].
pub fn random_links_checked(f: &Fabric, count: usize, seed: u64) -> Result<Vec<LinkId>> {
    let mut all = switch_links(f);
    check_count(count, all.len(), "switch–switch links")?;
    Ok(sample(&mut all, count, seed))
}

/// `count` distinct switches, drawn with `seed`; more than the fabric has is an error.
pub fn random_switches_checked(f: &Fabric, count: usize, seed: u64) -> Result<Vec<NodeId>> {
    let mut all: Vec<NodeId> = f.switches().collect();
    check_count(count, all.len(), "switches")?;
    Ok(sample(&mut all, count, seed))
}

fn check_count(asked: usize, available: usize, what: &'static str) -> Result<()> {
    if asked > available {
        return Err(Error::TooManyFailures {
            asked,
            available,
            what,
        });
    }
    Ok(())
}

/// A link's name as `--fail` accepts it: `A--B` (lower id first), `A--B#i` for the
/// i-th parallel link between the same two nodes.
pub fn link_name(f: &Fabric, l: LinkId) -> String {
    let k = f.link(l);
    let nth = f
        .ports(k.a)
        .filter(|&(p, _)| p == k.b)
        .position(|(_, x)| x == l)
        .unwrap_or(0);
    let base = format!("{}--{}", f.node_name(k.a), f.node_name(k.b));
    if nth == 0 {
        base
    } else {
        format!("{base}#{nth}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::fat_tree;
    use crate::units::Rate;

    #[test]
    fn names_resolve() {
        let f = fat_tree(4, Rate::gbps(100)).unwrap();
        let s = resolve(
            &f,
            &[
                "pod0-leaf0--pod0-agg1".into(),
                "core0-0".into(),
                "link:3".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.nodes.len(), 1);
        assert_eq!(s.links.len(), 1 + 4 + 1);
        let l = f.link(s.links[0]);
        assert_eq!(
            (f.node_name(l.a), f.node_name(l.b)),
            ("pod0-leaf0", "pod0-agg1")
        );
        assert_eq!(
            resolve(&f, &["nope".into()]).unwrap_err().to_string(),
            "invalid failure `nope`: no node named `nope` (expected a switch or host name (all its links), A--B, A--B#i or link:N)"
        );
        assert_eq!(
            resolve(&f, &["pod0-leaf0--nope".into()])
                .unwrap_err()
                .to_string(),
            "invalid failure `pod0-leaf0--nope`: no node named `nope` (expected a switch or host name (all its links), A--B, A--B#i or link:N)"
        );
        assert_eq!(
            resolve(&f, &["pod0-leaf0--pod1-agg0".into()])
                .unwrap_err()
                .to_string(),
            "invalid failure `pod0-leaf0--pod1-agg0`: no link 0 between pod0-leaf0 and pod1-agg0"
        );
        assert!(resolve(&f, &["link:99999".into()]).is_err());
    }

    #[test]
    fn random_is_seeded_and_distinct() {
        let f = fat_tree(8, Rate::gbps(100)).unwrap();
        let a = random_links(&f, 10, 42);
        assert_eq!(a, random_links_checked(&f, 10, 42).unwrap());
        assert_ne!(a, random_links(&f, 10, 43));
        let mut d = a.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 10);
        assert!(a.iter().all(|&l| !f.is_host(f.link(l).a)));
        assert_eq!(random_switches(&f, 3, 1).len(), 3);
        // k=8: 256 switch–switch links, 80 switches; more is an error when checked.
        assert_eq!(random_links_checked(&f, 256, 1).unwrap().len(), 256);
        assert_eq!(random_links(&f, 257, 1).len(), 256);
        assert_eq!(
            random_links_checked(&f, 257, 1).unwrap_err().to_string(),
            "asked to fail 257 switch–switch links, but the fabric has only 256"
        );
        assert_eq!(
            random_switches_checked(&f, 81, 1).unwrap_err().to_string(),
            "asked to fail 81 switches, but the fabric has only 80"
        );
    }

    #[test]
    fn link_names_round_trip() {
        let f = crate::generators::leaf_spine_spec(2, 1, 1, 2, Rate::gbps(100))
            .build("x")
            .unwrap();
        for l in 0..f.num_links() as u32 {
            let name = link_name(&f, LinkId(l));
            assert_eq!(
                resolve(&f, std::slice::from_ref(&name)).unwrap().links,
                vec![LinkId(l)],
                "{name}"
            );
        }
        assert!(link_name(&f, LinkId(f.num_links() as u32 - 1)).ends_with("#1"));
    }
}
