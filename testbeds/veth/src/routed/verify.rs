//! `fabric testbed verify`: build, probe, spread, fail, recover and restore, per family.

use super::*;

/// Options of [`verify`].
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// How the testbed is built (dual stack by default).
    pub testbed: RoutedOptions,
    /// Flows (distinct source ports) of the ECMP spread test, per family.
    pub spread_flows: usize,
    /// Link to fail (default: the leaf uplink that carried most IPv4 spread flows).
    pub fail: Option<LinkId>,
    /// Time limit of one all-pairs round.
    pub round_timeout: Duration,
    /// Time limit for recovery after the failure.
    pub recover_limit: Duration,
    /// Before re-programming, probe all pairs once with only the kernel's own reaction
    /// to the link-down (legacy multipath + sysctls); adds that round to the recovery time.
    pub kernel_first: bool,
    /// After the failure: restore the link, re-program, probe all pairs again and check
    /// the spread uses the restored uplink again.
    pub restore: bool,
    /// With [`RoutedOptions::link_mbps`]: send one UDP flow per family for this long
    /// from the spread's source to its destination and check the received rate is
    /// within ±10 % of the link rate.
    pub blast: Duration,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            testbed: RoutedOptions::default(),
            spread_flows: 256,
            fail: None,
            round_timeout: Duration::from_secs(3),
            recover_limit: Duration::from_secs(10),
            kernel_first: false,
            restore: true,
            blast: Duration::from_secs(1),
        }
    }
}

/// What [`verify`] measured for one address family.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FamilyReport {
    pub family: Family,
    /// All pairs before the failure.
    pub before: ProbeRound,
    pub spread: Spread,
    /// With [`VerifyOptions::kernel_first`]: all pairs reachable before the failure,
    /// probed after the link-down and before re-programming (may miss some: informative).
    pub kernel_only: Option<ProbeRound>,
    /// The last probe round after the failure (the first fully successful one, if any).
    pub after: ProbeRound,
    /// Probe rounds sent after the failure until one fully succeeded.
    pub rounds_to_recover: usize,
    /// From link down to the end of this family's first fully successful round
    /// (`None`: never).
    pub recovery_s: Option<f64>,
    pub spread_after: Spread,
    /// With [`VerifyOptions::restore`]: the last probe round after the restore.
    pub restored: Option<ProbeRound>,
    /// Rounds after the restore until one fully succeeded.
    pub rounds_to_restore: usize,
    /// From link up to the end of this family's first fully successful round after it.
    pub restore_s: Option<f64>,
    /// The spread after the restore.
    pub spread_restored: Option<Spread>,
    /// Interface of the failed link on the spread's leaf, if it is one of its uplinks.
    pub failed_uplink: Option<String>,
    /// With shaping: the rate one UDP flow got across the fabric, before the failure.
    pub blast: Option<Blast>,
    /// With shaping: the link rate the blast must reach (±10 %), in Mb/s.
    pub link_mbps: Option<u64>,
}

impl FamilyReport {
    /// Whether the restore step passed (`true` when there was none): all pairs again,
    /// every spread flow delivered, and the restored uplink (if it is one of the spread
    /// leaf's) carries traffic again.
    pub fn restore_ok(&self) -> bool {
        let Some(r) = &self.restored else {
            return true;
        };
        let Some(sp) = &self.spread_restored else {
            return false;
        };
        r.ok()
            && self.restore_s.is_some()
            && (sp.delivered == sp.flows || !sp.reachable)
            && self
                .failed_uplink
                .as_ref()
                .is_none_or(|i| sp.uplinks.iter().any(|u| &u.0 == i && u.2 > 0 && u.3))
    }

    /// Every reachable pair reached before and after the failure, recovery happened,
    /// the spread used at least two uplinks and delivered every flow.
    pub fn ok(&self) -> bool {
        self.before.ok()
            && self.after.ok()
            && self.recovery_s.is_some()
            && self.spread.used() >= 2.min(self.spread.uplinks.len())
            && self.spread.delivered == self.spread.flows
            && (self.spread_after.delivered == self.spread_after.flows
                || !self.spread_after.reachable)
            && self.restore_ok()
            && self.rate_ok()
    }

    /// With shaping: the blast's received rate is within ±10 % of the link rate.
    pub fn rate_ok(&self) -> bool {
        match (self.link_mbps, &self.blast) {
            (None, _) => true,
            (Some(r), Some(b)) => (b.rx_mbps - r as f64).abs() <= 0.1 * r as f64,
            (Some(_), None) => false,
        }
    }
}

/// Everything [`verify`] measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VerifyReport {
    pub fabric: String,
    pub hosts: usize,
    pub switches: usize,
    pub setup: SetupStats,
    /// One report per address family (IPv4 first).
    pub families: Vec<FamilyReport>,
    pub failure: Failure,
    /// Pairs topo says are unreachable after the failure (not probed): (src, dst, plane).
    pub unreachable: Vec<(String, String, u16)>,
    /// With [`VerifyOptions::restore`]: what restoring the link did.
    pub restore: Option<Failure>,
    /// Namespaces of this run still present after teardown (must be empty).
    pub leaked: Vec<String>,
}

impl VerifyReport {
    /// All checks of every family passed and nothing leaked.
    pub fn ok(&self) -> bool {
        !self.families.is_empty()
            && self.families.iter().all(FamilyReport::ok)
            && self.leaked.is_empty()
    }

    /// The report of family `fam`, if the testbed carried it.
    pub fn family(&self, fam: Family) -> Option<&FamilyReport> {
        self.families.iter().find(|r| r.family == fam)
    }
}

/// Probe `pairs` in rounds of ≤ 250 ms over `fams` until every family had one fully
/// successful round or `limit` passed since `t0`. Returns per family: the last round,
/// the number of rounds it took and the time from `t0` to the end of its first fully
/// successful round. Families are probed together; one that succeeded is not probed again.
pub(super) fn probe_until_ok(
    rt: &mut RoutedTestbed,
    fams: &[Family],
    pairs: &[Lane],
    t0: Instant,
    limit: Duration,
) -> Vec<(ProbeRound, usize, Option<f64>)> {
    let mut out: Vec<Option<(ProbeRound, usize, Option<f64>)>> = vec![None; fams.len()];
    let mut rounds = 0;
    loop {
        rounds += 1;
        let todo: Vec<usize> = (0..fams.len())
            .filter(|&k| out[k].as_ref().is_none_or(|o| o.2.is_none()))
            .collect();
        let want: Vec<Family> = todo.iter().map(|&k| fams[k]).collect();
        let res = rt.probe_rounds(
            &want,
            pairs,
            Duration::from_millis(50),
            Duration::from_millis(250),
        );
        for (&k, r) in todo.iter().zip(res) {
            // Recovery ends with the end of the first fully successful round.
            let t = r.ok().then(|| t0.elapsed().as_secs_f64());
            out[k] = Some((r, rounds, t));
        }
        if out
            .iter()
            .all(|o| o.as_ref().is_some_and(|o| o.2.is_some()))
            || t0.elapsed() >= limit
        {
            break;
        }
    }
    out.into_iter().map(|o| o.expect("probed")).collect()
}

/// The per-family results of a phase, in the order of `families()`.
type PerFamily<T> = Vec<T>;

/// What the restore phase found, per family.
struct Restored {
    report: Failure,
    probes: PerFamily<(ProbeRound, usize, Option<f64>)>,
    spreads: PerFamily<Spread>,
}

/// Build the testbed, probe every pair, measure the ECMP spread (and the shaped rate),
/// fail a link (the busiest uplink of the spread's source leaf unless one is given),
/// probe until the pairs recover, and optionally restore the link and probe again.
/// Removes every namespace before returning, and reports any that leaked.
pub fn verify(f: Fabric, opts: &VerifyOptions) -> Result<VerifyReport> {
    let mut rt = RoutedTestbed::build_with(f, &opts.testbed)?;
    let prefix = rt.testbed().ns_name("");
    let fams = rt.families();
    let pairs = rt.reachable_pairs();
    let before = rt.probe_rounds(
        &fams,
        &pairs,
        Duration::from_millis(200),
        opts.round_timeout,
    );
    let (src, src_leaf, dst) = spread_pair(&rt)?;
    let spread_all = |rt: &mut RoutedTestbed| -> Result<PerFamily<Spread>> {
        fams.iter()
            .map(|&fam| rt.spread(fam, src, dst, opts.spread_flows))
            .collect()
    };
    let spreads = spread_all(&mut rt)?;
    let blasts = match opts.testbed.link_mbps {
        Some(_) => fams
            .iter()
            .map(|&fam| rt.blast(fam, src, dst, opts.blast, 1400).map(Some))
            .collect::<Result<Vec<_>>>()?,
        None => vec![None; fams.len()],
    };

    let fail = failed_link(&rt, opts.fail, &spreads[0], src_leaf)?;
    let t_down = Instant::now();
    let (failure, kernel_only) = fail_link_step(&mut rt, fail, &fams, opts.kernel_first)?;
    let unreachable = named_pairs(&rt, rt.unreachable_pairs());
    let pairs = rt.reachable_pairs();
    let after = probe_until_ok(&mut rt, &fams, &pairs, t_down, opts.recover_limit);
    // The failed link must carry nothing now.
    let spreads_after = spread_all(&mut rt)?;
    let restored = if opts.restore {
        let t_up = Instant::now();
        let report = rt.restore_link(fail)?;
        let pairs = rt.reachable_pairs();
        let probes = probe_until_ok(&mut rt, &fams, &pairs, t_up, opts.recover_limit);
        let spreads = spread_all(&mut rt)?;
        Some(Restored {
            report,
            probes,
            spreads,
        })
    } else {
        None
    };
    let fl = *rt.fabric().link(fail);
    let failed_uplink = [(fl.a, fl.a_port), (fl.b, fl.b_port)]
        .into_iter()
        .find(|&(n, p)| n == src_leaf && !rt.fabric().is_host(rt.fabric().peer(n, p)))
        .map(|(_, p)| ifname(p));
    let (fabric, hosts, switches) = (
        rt.fabric().name().to_string(),
        rt.fabric().num_hosts(),
        rt.fabric().num_switches(),
    );
    let setup = rt.setup().clone();
    rt.teardown()?;
    let leaked = crate::netns::list_ours()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    let restore = restored.as_ref().map(|r| r.report.clone());
    let phases = Phases {
        before,
        spreads,
        kernel_only,
        after,
        spreads_after,
        blasts,
        restored,
    };
    Ok(VerifyReport {
        fabric,
        hosts,
        switches,
        setup,
        families: phases.into_family_reports(&fams, failed_uplink, opts.testbed.link_mbps),
        failure,
        unreachable,
        restore,
        leaked,
    })
}

/// The spread's source (host 0), its leaf, and the host farthest from it under
/// another leaf.
fn spread_pair(rt: &RoutedTestbed) -> Result<(NodeId, NodeId, NodeId)> {
    let f = rt.fabric();
    let src = NodeId(0);
    let src_leaf = f
        .attachment(src, 0)
        .ok_or_else(|| Error::Invalid("host 0 is not attached".into()))?
        .leaf;
    let dst = f
        .hosts()
        .filter(|&h| f.attachment(h, 0).is_some_and(|a| a.leaf != src_leaf))
        .max_by_key(|&h| {
            let l = f.attachment(h, 0).expect("filtered").leaf;
            (
                rt.routes().distance(src_leaf, l).unwrap_or(0),
                u32::MAX - h.0,
            )
        })
        .ok_or_else(|| Error::Invalid("the fabric needs hosts under two leaves".into()))?;
    Ok((src, src_leaf, dst))
}

/// The link to fail: the one asked for (checked), else the source leaf's busiest uplink.
fn failed_link(
    rt: &RoutedTestbed,
    asked: Option<LinkId>,
    spread: &Spread,
    src_leaf: NodeId,
) -> Result<LinkId> {
    let fail = match asked {
        Some(l) => l,
        None => {
            let busiest = spread
                .uplinks
                .iter()
                .max_by_key(|u| u.2)
                .ok_or_else(|| Error::Invalid("the source leaf has no uplink".into()))?;
            let p: topo::Port = busiest.0[1..].parse().expect("our interface names");
            rt.fabric().port_link(src_leaf, p)
        }
    };
    if fail.idx() >= rt.fabric().num_links() {
        return Err(Error::Invalid(format!(
            "link {} does not exist (the fabric has {} links)",
            fail.0,
            rt.fabric().num_links()
        )));
    }
    Ok(fail)
}

/// Fail `fail`; with `kernel_first`, probe what the kernel alone does before the
/// routes are re-programmed.
fn fail_link_step(
    rt: &mut RoutedTestbed,
    fail: LinkId,
    fams: &[Family],
    kernel_first: bool,
) -> Result<(Failure, Option<PerFamily<ProbeRound>>)> {
    if !kernel_first {
        return Ok((rt.fail_link(fail)?, None));
    }
    let mut kernel_only = None;
    let before_pairs = rt.reachable_pairs();
    let failure = rt.fail_link_with(
        fail,
        Some(|rt: &mut RoutedTestbed| {
            kernel_only = Some(rt.probe_rounds(
                fams,
                &before_pairs,
                Duration::from_millis(50),
                Duration::from_millis(250),
            ));
        }),
    )?;
    Ok((failure, kernel_only))
}

/// Pairs with node names.
fn named_pairs(rt: &RoutedTestbed, lanes: Vec<Lane>) -> Vec<(String, String, u16)> {
    let f = rt.fabric();
    lanes
        .into_iter()
        .map(|(s, d, p)| (f.node_name(s).to_string(), f.node_name(d).to_string(), p))
        .collect()
}

/// Every phase's per-family results, to be regrouped into one report per family.
struct Phases {
    before: PerFamily<ProbeRound>,
    spreads: PerFamily<Spread>,
    kernel_only: Option<PerFamily<ProbeRound>>,
    after: PerFamily<(ProbeRound, usize, Option<f64>)>,
    spreads_after: PerFamily<Spread>,
    blasts: PerFamily<Option<Blast>>,
    restored: Option<Restored>,
}

impl Phases {
    fn into_family_reports(
        self,
        fams: &[Family],
        failed_uplink: Option<String>,
        link_mbps: Option<u64>,
    ) -> Vec<FamilyReport> {
        let mut kernel_only = self.kernel_only.map(|v| v.into_iter());
        let (mut restored, mut spreads_restored) = match self.restored {
            Some(r) => (Some(r.probes.into_iter()), Some(r.spreads.into_iter())),
            None => (None, None),
        };
        let mut before = self.before.into_iter();
        let mut spreads = self.spreads.into_iter();
        let mut after = self.after.into_iter();
        let mut spreads_after = self.spreads_after.into_iter();
        let mut blasts = self.blasts.into_iter();
        let mut out = Vec::with_capacity(fams.len());
        for &family in fams {
            let (after, rounds, recovery_s) = after.next().expect("one per family");
            let (restored, rounds_to_restore, restore_s) = restored
                .as_mut()
                .and_then(|r| r.next())
                .map_or((None, 0, None), |(r, n, t)| (Some(r), n, t));
            out.push(FamilyReport {
                family,
                before: before.next().expect("one per family"),
                spread: spreads.next().expect("one per family"),
                kernel_only: kernel_only.as_mut().and_then(|k| k.next()),
                after,
                rounds_to_recover: rounds,
                recovery_s,
                spread_after: spreads_after.next().expect("one per family"),
                restored,
                rounds_to_restore,
                restore_s,
                spread_restored: spreads_restored.as_mut().and_then(|s| s.next()),
                failed_uplink: failed_uplink.clone(),
                blast: blasts.next().expect("one per family"),
                link_mbps,
            });
        }
        out
    }
}
