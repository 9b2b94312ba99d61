//! One failure-option set for every command that fails links or switches before it routes
//! (`fabric routes verify`, `fabric routes export`, `fabric build`; meant for `fabric sim`
//! and `fabric testbed` too), and the exit-code convention of those commands.
//!
//! ```text
//! --fail pod0-leaf0--pod0-agg1      a link (A--B, A--B#i for the i-th parallel link, link:N)
//! --fail pod1-agg0                  a switch: all its links
//! --fail host3-nic0--pod0-leaf1     a host link: that NIC port is cut off (reported as isolated)
//! --fail-links 20 --fail-switches 2 --seed 7   seeded random switch–switch links / switches
//! ```
//! Asking for more random failures than the fabric has is an error. Every failed link and
//! switch is named in the output ([`Failures::link_names`]).
//!
//! Exit codes: **0** all checks passed, **1** a check found a violation (unreachable pairs,
//! loops, up/down turns, black holes, a cyclic channel dependency graph), **2** the input is
//! wrong (unknown preset or node, bad spec, impossible failure set — clap also uses 2 for
//! usage errors). [`input`] turns an input error into exit code 2.

use topo::{Fabric, LinkId, NodeId};

/// Failures to apply before routing.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FailureArgs {
    /// Fail a link (`A--B`, `A--B#i`, `link:N`), a switch (its name: all its links) or a
    /// host link (`hostN-nicM--LEAF`: that NIC port is cut off). Repeatable.
    #[arg(long = "fail", value_name = "LINK|SWITCH")]
    pub fail: Vec<String>,
    /// Fail this many random switch–switch links (more than the fabric has is an error).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fail_links: usize,
    /// Fail this many random switches (more than the fabric has is an error).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fail_switches: usize,
    /// Seed of the random failures (the same seed fails the same links everywhere).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A resolved failure set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failures {
    /// Failed links, sorted, each once (a failed switch contributes all its links).
    pub links: Vec<LinkId>,
    /// Failed switches, named or drawn.
    pub switches: Vec<NodeId>,
}

impl FailureArgs {
    /// Resolves the names and draws the random failures.
    pub fn resolve(&self, f: &Fabric) -> anyhow::Result<Failures> {
        let mut set = topo::failures::resolve(f, &self.fail)?;
        let links = topo::failures::random_links_checked(f, self.fail_links, self.seed)
            .map_err(|e| anyhow::anyhow!("--fail-links {}: {e}", self.fail_links))?;
        set.links.extend(links);
        let sw = topo::failures::random_switches_checked(f, self.fail_switches, self.seed ^ 0x5eed)
            .map_err(|e| anyhow::anyhow!("--fail-switches {}: {e}", self.fail_switches))?;
        for s in sw {
            set.nodes.push(s);
            set.links.extend(f.ports(s).map(|(_, l)| l));
        }
        set.links.sort_unstable();
        set.links.dedup();
        set.nodes.sort_unstable();
        set.nodes.dedup();
        Ok(Failures {
            links: set.links,
            switches: set.nodes,
        })
    }
}

impl Failures {
    /// True when nothing fails.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Every failed link by name (`A--B`, as `--fail` accepts it).
    pub fn link_names(&self, f: &Fabric) -> Vec<String> {
        self.links
            .iter()
            .map(|&l| topo::failures::link_name(f, l))
            .collect()
    }

    /// Every failed switch by name.
    pub fn switch_names(&self, f: &Fabric) -> Vec<String> {
        self.switches
            .iter()
            .map(|&n| f.node_name(n).to_string())
            .collect()
    }

    /// Failed host links (their NIC port is cut off).
    pub fn host_links(&self, f: &Fabric) -> usize {
        self.links
            .iter()
            .filter(|&&l| f.is_host(f.link(l).a))
            .count()
    }

    /// One line naming everything that failed (empty when nothing did).
    pub fn summary(&self, f: &Fabric) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut s = format!("{} links down", self.links.len());
        let hosts = self.host_links(f);
        if hosts > 0 {
            s += &format!(" ({hosts} host links)");
        }
        if !self.switches.is_empty() {
            s += &format!(
                "; {} switches down: {}",
                self.switches.len(),
                self.switch_names(f).join(", ")
            );
        }
        s + &format!("; links: {}", self.link_names(f).join(", "))
    }
}

/// The value, or (input error) the message on stderr and exit code 2.
pub fn input<T>(r: anyhow::Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{}{}", crate::common::ERROR_PREFIX, message(&e));
            std::process::exit(2)
        }
    }
}

/// An error and its causes on one line, each cause once (a context that already quotes
/// its cause is not followed by it again).
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !out.contains(&c) {
            if !out.is_empty() {
                out += ": ";
            }
            out += &c;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k4() -> Fabric {
        topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap()
    }

    #[test]
    fn names_counts_and_errors() {
        let f = k4();
        let a = FailureArgs {
            fail: vec!["pod0-leaf0--pod0-agg0".into(), "core0-0".into()],
            fail_links: 2,
            ..Default::default()
        };
        let set = a.resolve(&f).unwrap();
        assert_eq!(set.switch_names(&f), vec!["core0-0"]);
        assert!((5..=7).contains(&set.links.len()), "{set:?}");
        let names = set.link_names(&f);
        assert!(
            names.contains(&"pod0-leaf0--pod0-agg0".to_string()),
            "{names:?}"
        );
        assert!(set.summary(&f).contains("switches down: core0-0"));
        // Every named link resolves back to itself.
        let again = FailureArgs {
            fail: names,
            ..Default::default()
        };
        assert_eq!(again.resolve(&f).unwrap().links, set.links);
        // k=4: 32 switch–switch links, 20 switches.
        let too_many = FailureArgs {
            fail_links: 33,
            ..Default::default()
        };
        assert_eq!(
            message(&too_many.resolve(&f).unwrap_err()),
            "--fail-links 33: asked to fail 33 switch–switch links, but the fabric has only 32"
        );
        let too_many = FailureArgs {
            fail_switches: 21,
            ..Default::default()
        };
        assert_eq!(
            message(&too_many.resolve(&f).unwrap_err()),
            "--fail-switches 21: asked to fail 21 switches, but the fabric has only 20"
        );
        let bad = FailureArgs {
            fail: vec!["pod0-leaf0--core0-0".into()],
            ..Default::default()
        };
        assert_eq!(
            message(&bad.resolve(&f).unwrap_err()),
            "invalid failure `pod0-leaf0--core0-0`: no link 0 between pod0-leaf0 and core0-0"
        );
    }

    #[test]
    fn host_link_failure_is_counted() {
        let f = k4();
        let a = FailureArgs {
            fail: vec!["host0-nic0--pod0-leaf0".into()],
            ..Default::default()
        };
        let set = a.resolve(&f).unwrap();
        assert_eq!(set.host_links(&f), 1);
        assert!(set.summary(&f).starts_with("1 links down (1 host links)"));
    }

    #[test]
    fn causes_are_not_repeated() {
        let inner = anyhow::anyhow!("no such file");
        let e = inner.context("cannot read spec x.toml: no such file");
        assert_eq!(message(&e), "cannot read spec x.toml: no such file");
        let e = anyhow::anyhow!("no such file").context("cannot read spec x.toml");
        assert_eq!(message(&e), "cannot read spec x.toml: no such file");
    }
}
