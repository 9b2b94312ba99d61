//! The routed veth testbed as a telemetry source (`fabric serve --testbed`, root): the
//! daemon builds the testbed itself from `--fabric` (namespaces, veths, addresses and
//! routes programmed as next-hop objects and groups), owns it, and deletes it when the
//! source is dropped (SIGINT/SIGTERM end the daemon gracefully, which drops it; a
//! `SIGKILL` leaves namespaces that `fabric testbed clean` removes).
//!
//! - **Telemetry**: one RTM_GETLINK dump (stats64, carrier, operstate) per namespace per
//!   sample ([`veth::routed::RoutedTestbed::snapshot`]).
//! - **Link events**: a watcher thread subscribed to the multicast link group
//!   (`RTNLGRP_LINK`) of every switch namespace ([`veth::routed::LinkWatcher`]) repairs
//!   at once, without waiting for the next sample: a link that loses carrier is routed
//!   around incrementally (only the changed entries are re-programmed); one whose
//!   carrier returns is brought back, its next-hop objects re-added (the kernel deletes
//!   an admin-downed link's objects and never brings them back). The `link-down`/`link-up`
//!   and `reroute` events (time from the event to the last route re-programmed, host
//!   pairs left unreachable) are published with the next snapshot and feed
//!   `fabric_reroute_duration_seconds`.
//! - **Commands**: failing a link sets its `a` end down through netlink (as an outside
//!   failure would; the watcher detects and repairs it, and the reroute time then runs
//!   from the command); restoring sets it up again.
//! - **Cabling**: with every drift check, one LLDP frame is sent and heard on every
//!   port ([`veth::routed::check_neighbours`], pnet datalink channels) and the neighbours
//!   compared with the spec.
//! - **Errors**: a failed dump or repair is returned (the collector counts and logs it)
//!   and the source keeps going.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fabric_api::{Event, FabricInfo};
use topo::{Fabric, LinkId};
use veth::routed::{LinkChange, LinkWatcher, RoutedOptions, RoutedTestbed, ifname};

use super::log;
use super::source::{Actuator, NodePlace, PortPlace, Sample, Source, SourceMap};

/// How long the watcher waits for link events before looking at its stop flag.
const WATCH_POLL: Duration = Duration::from_millis(50);

/// What the watcher and the collector share.
#[derive(Debug)]
struct State {
    /// `None` once torn down.
    rt: Option<RoutedTestbed>,
    /// Events since the last sample (link changes and their repairs).
    pending: Vec<Event>,
    /// Links a command set down or up, with the time of the command: the reroute time
    /// of the change the watcher then sees runs from there.
    commanded: HashMap<LinkId, Instant>,
}

/// The routed veth testbed source.
#[derive(Debug)]
pub struct TestbedSource {
    state: Arc<Mutex<State>>,
    fabric: Arc<Fabric>,
    info: FabricInfo,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    /// Errors of the watcher thread (read or repair), counted and logged there.
    watch_errors: Arc<AtomicU64>,
    /// The daemon built the namespaces (and deletes them) rather than adopting them.
    owned: bool,
    /// The namespaces in node order, for the LLDP check (run without the lock: it
    /// listens for a while, and repairs must not wait for it).
    namespaces: Vec<veth::netns::Netns>,
    /// Check the cabling with LLDP (every node here).
    lldp: bool,
}

/// How long the LLDP check listens on each port for its neighbour's frame.
const LLDP_WAIT: Duration = Duration::from_millis(200);

/// How the daemon programs a testbed: next-hop objects and groups, dual stack.
fn options() -> RoutedOptions {
    RoutedOptions {
        nexthop_objects: true,
        ..RoutedOptions::default()
    }
}

fn lock(s: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock leaves the testbed as it was: keep serving it.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl TestbedSource {
    /// Builds the routed testbed of `fabric` (next-hop objects, dual stack) and starts
    /// watching its links; the namespaces are deleted when the source is dropped.
    pub fn open(fabric: Fabric) -> anyhow::Result<Self> {
        let name = fabric.name().to_string();
        let t = Instant::now();
        let rt = RoutedTestbed::build_with(fabric, &options()).map_err(|e| {
            anyhow::anyhow!("--testbed: building the routed testbed of {name}: {e}")
        })?;
        let st = rt.setup();
        log::info(&format!(
            "testbed {}: {} namespaces, {} veths, {} routes in {:.2} s",
            rt.testbed().run_id(),
            st.namespaces,
            st.veths,
            st.routes,
            t.elapsed().as_secs_f64()
        ));
        Self::start(rt, true)
    }

    /// Adopts the existing namespaces `PREFIX` + `h<i>`/`s<i>` of a routed testbed of
    /// `fabric` (e.g. left by `fabric testbed up`), programs its switches' routes with
    /// next-hop objects and watches its links; the namespaces are left in place when the
    /// source is dropped.
    pub fn adopt(fabric: Fabric, prefix: &str) -> anyhow::Result<Self> {
        let rt = RoutedTestbed::adopt(fabric, prefix, &options())?;
        log::info(&format!(
            "adopted {} namespaces {prefix}*: {} routes programmed in {:.2} s",
            rt.setup().namespaces,
            rt.setup().routes,
            rt.setup().total_s
        ));
        Self::start(rt, false)
    }

    /// Adopts the namespace the daemon runs in as switch `switch` of `fabric` (a Linux
    /// router): programs its routes with next-hop objects and watches its links; no
    /// LLDP check (the neighbours are other routers), nothing deleted on drop.
    pub fn adopt_here(fabric: Fabric, switch: &str) -> anyhow::Result<Self> {
        let ns = veth::netns::Netns::current();
        let rt = RoutedTestbed::adopt_switch(fabric, switch, ns, &options())?;
        log::info(&format!(
            "this namespace as {switch}: {} routes programmed in {:.2} s",
            rt.setup().routes,
            rt.setup().total_s
        ));
        let mut s = Self::start(rt, false)?;
        s.lldp = false;
        Ok(s)
    }

    /// Starts watching `rt`; `owned`: delete its namespaces on drop.
    fn start(rt: RoutedTestbed, owned: bool) -> anyhow::Result<Self> {
        let watcher = rt
            .watch()
            .map_err(|e| anyhow::anyhow!("--testbed: subscribing to link events: {e}"))?;
        let fabric = Arc::new(rt.fabric().clone());
        let info = rt.fabric_info();
        let namespaces = rt.namespaces().to_vec();
        let state = Arc::new(Mutex::new(State {
            rt: Some(rt),
            pending: Vec::new(),
            commanded: HashMap::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let watch_errors = Arc::new(AtomicU64::new(0));
        let thread = {
            let (state, stop, errors, f) = (
                state.clone(),
                stop.clone(),
                watch_errors.clone(),
                fabric.clone(),
            );
            std::thread::Builder::new()
                .name("link-watcher".into())
                .spawn(move || watch(watcher, &f, &state, &stop, &errors))?
        };
        Ok(TestbedSource {
            state,
            fabric,
            info,
            stop,
            watcher: Some(thread),
            watch_errors,
            owned,
            namespaces,
            lldp: true,
        })
    }

    /// Sets the `a` end of link `l` up or down through netlink and remembers when.
    fn set_link(&mut self, l: LinkId, up: bool) -> Result<String, String> {
        if l.idx() >= self.fabric.num_links() {
            return Err(format!("no link {}", l.0));
        }
        let mut st = lock(&self.state);
        let State { rt, commanded, .. } = &mut *st;
        let rt = rt.as_ref().ok_or("the testbed is torn down")?;
        let failed = rt.routes().failed_links().any(|x| x == l);
        if failed != up {
            return Err(format!(
                "link {} is {}",
                l.0,
                if up { "not down" } else { "already down" }
            ));
        }
        let link = *self.fabric.link(l);
        if let Some(n) = [link.a, link.b].into_iter().find(|&n| rt.vanished(n)) {
            return Err(format!(
                "link {}: {} is gone (its namespace was deleted)",
                l.0,
                self.fabric.node_name(n)
            ));
        }
        // The `a` end, or the `b` end when only that one is here (--host-netns).
        let (end, port) = if rt.is_gone(link.a) {
            (link.b, link.b_port)
        } else {
            (link.a, link.a_port)
        };
        if rt.is_gone(end) {
            return Err(format!(
                "link {}: neither end is in this daemon's namespaces",
                l.0
            ));
        }
        let nl = rt.nl(end);
        let name = ifname(port);
        commanded.insert(l, Instant::now());
        let r = if up {
            nl.set_up(&name)
        } else {
            nl.set_down(&name)
        };
        r.map_err(|e| {
            commanded.remove(&l);
            e.to_string()
        })?;
        Ok(format!(
            "{}:{name} set {}; the link watcher re-routes when the kernel reports it",
            self.fabric.node_name(end),
            if up { "up" } else { "down" }
        ))
    }
}

/// The watcher thread: waits for link events, repairs each at once under the lock.
fn watch(
    mut w: LinkWatcher,
    f: &Fabric,
    state: &Mutex<State>,
    stop: &AtomicBool,
    errors: &AtomicU64,
) {
    let mut malformed = 0;
    // A read failing at every poll (every 50 ms) is said once, and its end.
    let mut repeated = log::Repeated::default();
    while !stop.load(Ordering::Relaxed) {
        let changes = match w.poll(f, WATCH_POLL) {
            Ok(c) => {
                repeated.info_ok("link watcher");
                c
            }
            Err(e) => {
                errors.fetch_add(1, Ordering::Relaxed);
                repeated.warn("link watcher", &e.to_string());
                std::thread::sleep(WATCH_POLL);
                continue;
            }
        };
        if w.malformed != malformed {
            log::warn(&format!(
                "link watcher: {} malformed netlink messages dropped",
                w.malformed - malformed
            ));
            malformed = w.malformed;
        }
        for c in changes {
            let mut st = lock(state);
            if let Err(e) = repair(&mut st, &c) {
                errors.fetch_add(1, Ordering::Relaxed);
                log::warn(&format!("repairing link {}: {e}", c.link.0));
            }
        }
        for s in w.vanished(f) {
            let mut st = lock(state);
            if let Err(e) = node_gone(&mut st, s) {
                errors.fetch_add(1, Ordering::Relaxed);
                log::warn(&format!("{} gone: {e}", f.node_name(s)));
            }
        }
    }
}

/// A node whose namespace was deleted: release it, route around it, queue its events.
fn node_gone(st: &mut State, s: topo::NodeId) -> Result<(), String> {
    let Some(rt) = st.rt.as_mut() else {
        return Ok(());
    };
    let g = rt.node_gone(s, Instant::now()).map_err(|e| e.to_string())?;
    let unreachable = rt.unreachable_pairs().len();
    log::warn(&format!(
        "{} {}: its namespace was deleted; namespace released, {} links failed, {} routes re-programmed in {:.2} ms; {unreachable} host pairs unreachable",
        if g.switch { "switch" } else { "host" },
        rt.fabric().node_name(s),
        g.links.len(),
        g.repair.routes_reprogrammed,
        g.repair.reprogram_s * 1e3,
    ));
    st.pending.extend(rt.gone_events(&g, 0));
    Ok(())
}

/// Routes around (or back over) the link of `c`; queues its events.
fn repair(st: &mut State, c: &LinkChange) -> Result<(), String> {
    let State {
        rt,
        pending,
        commanded,
    } = st;
    let Some(rt) = rt.as_mut() else {
        return Ok(());
    };
    let t0 = commanded
        .remove(&c.link)
        .unwrap_or(c.detected)
        .min(c.detected);
    let rep = match if c.up {
        rt.repair_up(c.link, t0)
    } else {
        rt.repair_down(c.link, t0)
    } {
        Ok(r) => r,
        Err(e) => {
            // The tables follow the link although not every kernel route could be
            // written: publish the change (no reroute event: the repair did not finish;
            // the drift check shows what is left).
            pending.push(c.event(
                0,
                fabric_api::Timestamp::wall_ns(super::collector::now_ns()),
            ));
            return Err(e.to_string());
        }
    };
    let unreachable = rt.unreachable_pairs();
    log::info(&format!(
        "link {} ({}) {}: {} entries, {} routes re-programmed in {:.2} ms; {} host pairs unreachable",
        c.link.0,
        rep.link,
        if c.up { "up" } else { "down" },
        rep.entries_changed,
        rep.routes_reprogrammed,
        rep.reprogram_s * 1e3,
        unreachable.len()
    ));
    pending.extend(rt.repair_events(c, &rep, 0));
    Ok(())
}

impl Drop for TestbedSource {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.watcher.take() {
            let _ = t.join();
        }
        let Some(rt) = lock(&self.state).rt.take() else {
            return;
        };
        if !self.owned {
            drop(rt);
            log::info("adopted namespaces left in place");
            return;
        }
        let id = rt.testbed().run_id().to_string();
        match rt.teardown() {
            Ok(()) => log::info(&format!("testbed {id}: namespaces deleted")),
            Err(veth::Error::Leaked(left)) => {
                for l in left {
                    log::warn(&format!("testbed {id}: namespace left behind: {l}"));
                }
            }
            Err(e) => log::warn(&format!("testbed {id}: teardown: {e}")),
        }
    }
}

impl Source for TestbedSource {
    fn map(&self) -> SourceMap {
        SourceMap::new(self.info.clone(), Some(self.fabric.clone()))
    }

    fn sample(&mut self, _elapsed: Duration, seq: u64) -> Result<Sample, String> {
        let t = Instant::now();
        let mut st = lock(&self.state);
        let rt = st.rt.as_ref().ok_or("the testbed is torn down")?;
        let snapshot = rt.snapshot(seq).map_err(|e| e.to_string())?;
        let mut events = std::mem::take(&mut st.pending);
        for e in &mut events {
            e.seq = seq;
        }
        drop(st);
        Ok(Sample {
            snapshot: Some(snapshot),
            events,
            read_ns: Some(t.elapsed().as_nanos() as u64),
        })
    }

    fn take_errors(&mut self) -> u64 {
        self.watch_errors.swap(0, Ordering::Relaxed)
    }

    fn places(&self) -> Option<Vec<NodePlace>> {
        let st = lock(&self.state);
        let rt = st.rt.as_ref()?;
        let f = &self.fabric;
        let places = (0..f.num_nodes() as u32)
            .map(topo::NodeId)
            .filter(|&n| !rt.is_gone(n))
            .map(|n| NodePlace {
                node: f.node_name(n).to_string(),
                netns: rt.netns(n).name().to_string(),
                ports: (0..f.degree(n) as topo::Port)
                    .map(|p| PortPlace {
                        port: p,
                        api: format!("{}:{p}", f.node_name(n)),
                        ifname: ifname(p),
                    })
                    .collect(),
            })
            .collect();
        Some(places)
    }

    fn drift(&mut self) -> Option<Result<veth::routed::Drift, String>> {
        let st = lock(&self.state);
        let rt = st.rt.as_ref()?;
        Some(rt.drift().map_err(|e| e.to_string()))
    }

    fn check_topology(&mut self) -> Option<Result<veth::routed::NeighbourReport, String>> {
        if !self.lldp {
            return None;
        }
        Some(
            veth::routed::check_neighbours(&self.fabric, &self.namespaces, LLDP_WAIT)
                .map_err(|e| e.to_string()),
        )
    }

    fn actuator(&mut self) -> Option<&mut dyn Actuator> {
        Some(self)
    }
}

impl Actuator for TestbedSource {
    fn repair_drift(
        &mut self,
    ) -> Option<Result<(veth::routed::DriftRepair, veth::routed::Drift), String>> {
        let st = lock(&self.state);
        let rt = st.rt.as_ref()?;
        let run = || -> veth::Result<_> {
            let r = rt.repair_drift(&rt.drift()?)?;
            Ok((r, rt.drift()?))
        };
        Some(run().map_err(|e| e.to_string()))
    }

    fn fail_link(&mut self, link: LinkId) -> Result<String, String> {
        self.set_link(link, false)
    }

    fn restore_link(&mut self, link: LinkId) -> Result<String, String> {
        self.set_link(link, true)
    }
}
