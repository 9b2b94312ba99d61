//! The FRR testbed: a routed veth testbed whose switches run the real control plane and
//! agents of a production fabric, so that `fabric serve --observe` can be tested on a
//! fabric it did not build (root; Debian's `frr`, `lldpd`, `prometheus-node-exporter`
//! and `prometheus`, see scripts/install-deps.sh).
//!
//! - **Fabric**: [`RoutedTestbed`] builds the namespaces, veths and addresses (dual
//!   stack, hosts with their default routes); its switch routes are then deleted, so
//!   every ToR-prefix route in a switch FIB comes from BGP.
//! - **Control plane**: one FRR instance per switch namespace (`-N <namespace>`:
//!   zebra, staticd, bfdd, bgpd in the foreground; `/etc/frr/<namespace>/frr.conf` from
//!   the project's `frr-bgp` export, loaded with `vtysh -N <namespace> -b`): eBGP per
//!   RFC 7938, ECMP, BFD 300 ms × 3 ([`FrrOptions::bfd`] off strips it).
//! - **Management network** ([`mgmt`]): a bridge in the root namespace, `mgmt0` in
//!   every switch on its own /24, never routed through the fabric.
//! - **Agents** on every switch, on its management address: node_exporter (netdev and
//!   netclass collectors, port 9100) and lldpd (control socket in the run directory,
//!   port ids = interface names, 1 s transmit interval).
//! - **Prometheus** in the root namespace on 127.0.0.1 (a free port), scraping every
//!   node_exporter each second, each target labelled `switch="<name>"`.
//!
//! Everything is removed on every exit path: the daemons ([`procs::Daemons`]: SIGTERM
//! then SIGKILL, on drop and panic), the FRR directories and the run directory, the
//! bridge, then the namespaces ([`crate::Testbed`]).

pub mod config;
pub mod converge;
pub mod fib;
pub mod mgmt;
pub mod probe_loss;
pub mod procs;
pub mod vtysh_fib;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use topo::addressing::AddressPlan;
use topo::{Fabric, NodeId, Routes};

use crate::netns::Netns;
use crate::routed::{Drift, ROUTE_PROTOCOL, RoutedOptions, RoutedTestbed};
use crate::{Error, Result};
use procs::{Daemons, log_path, run};

/// Where Debian's FRR keeps its daemons.
pub const FRR_BIN: &str = "/usr/lib/frr";
/// node_exporter's port on every management address.
pub const NODE_EXPORTER_PORT: u16 = 9100;
/// The port of a testbed interface name (`p<port>`).
pub fn testbed_port(name: &str) -> Option<topo::Port> {
    name.strip_prefix('p')?.parse().ok()
}

/// The FRR daemons of every switch, in start order.
const FRR_DAEMONS: [&str; 4] = ["zebra", "staticd", "bfdd", "bgpd"];

/// What the FRR testbed runs.
#[derive(Debug, Clone)]
pub struct FrrOptions {
    /// BFD on fabric sessions (the export's; off: its lines are removed).
    pub bfd: bool,
    /// lldpd on every switch.
    pub lldpd: bool,
    /// node_exporter on every switch and a Prometheus scraping them.
    pub exporters: bool,
    /// How long to wait for each daemon's socket.
    pub start_timeout: Duration,
}

impl Default for FrrOptions {
    fn default() -> Self {
        FrrOptions {
            bfd: true,
            lldpd: true,
            exporters: true,
            start_timeout: Duration::from_secs(30),
        }
    }
}

/// One switch's agents.
#[derive(Debug, Clone)]
pub struct SwitchAgents {
    /// Switch name.
    pub name: String,
    /// FRR instance name (= the namespace's name; `vtysh -N NAME`).
    pub frr_instance: String,
    /// Management address.
    pub mgmt: Ipv4Addr,
    /// lldpd's control socket (`lldpcli -u SOCK`), if lldpd runs.
    pub lldp_socket: Option<PathBuf>,
}

/// A running FRR testbed (see the module header). Field order matters: the daemons stop
/// before the directories, the bridge and the namespaces go.
#[derive(Debug)]
pub struct FrrTestbed {
    daemons: Daemons,
    frr_dirs: Vec<PathBuf>,
    dir: PathBuf,
    agents: Vec<SwitchAgents>,
    prometheus: Option<SocketAddr>,
    mgmt: mgmt::MgmtNet,
    plan: AddressPlan,
    ports: Vec<(NodeId, HashMap<u32, topo::Port>)>,
    rt: RoutedTestbed,
}

/// The programs the FRR testbed runs (Debian's frr, lldpd, prometheus-node-exporter and
/// prometheus; scripts/install-deps.sh installs them).
pub const TOOLS: [&str; 8] = [
    "/usr/lib/frr/zebra",
    "/usr/lib/frr/bgpd",
    "/usr/lib/frr/bfdd",
    "/usr/lib/frr/staticd",
    "/usr/bin/vtysh",
    "/usr/sbin/lldpd",
    "/usr/bin/prometheus-node-exporter",
    "/usr/bin/prometheus",
];

/// Whether a test of the FRR testbed can run: `Ok(true)` as root with every one of
/// [`TOOLS`] installed, `Ok(false)` when skipped (`FABRIC_SKIP_NETNS=1`, or
/// `FABRIC_SKIP_TOOLS=1` with a tool missing), otherwise why not (the test fails loudly).
pub fn tests_enabled() -> std::result::Result<bool, String> {
    if !crate::root_tests_enabled()? {
        return Ok(false);
    }
    let missing: Vec<&str> = TOOLS
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if missing.is_empty() {
        return Ok(true);
    }
    if std::env::var("FABRIC_SKIP_TOOLS").as_deref() == Ok("1") {
        return Ok(false);
    }
    Err(format!(
        "missing {missing:?}: run scripts/install-deps.sh as root, or set FABRIC_SKIP_TOOLS=1 to skip"
    ))
}

/// Polls `cond` every 50 ms until it holds or `timeout` passes.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if t.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; the caller binds it next).
fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| Error::Os {
        what: "finding a free port".into(),
        source,
    })?;
    Ok(l.local_addr()
        .map_err(|source| Error::Os {
            what: "finding a free port".into(),
            source,
        })?
        .port())
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Os {
        what: format!("writing {}", path.display()),
        source,
    })
}

fn mkdir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Os {
        what: format!("creating {}", path.display()),
        source,
    })
}

/// The config without its BFD lines (`bfd` block and `neighbor … bfd …`).
fn strip_bfd(conf: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in conf.lines() {
        if line == "bfd" {
            in_block = true;
            continue;
        }
        if in_block {
            if line == "exit" {
                in_block = false;
            }
            continue;
        }
        if line.starts_with(" neighbor ") && line.contains(" bfd") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

impl FrrTestbed {
    /// Builds the fabric, the management network, FRR, the agents and Prometheus, and
    /// returns once every daemon is up (BGP may still be converging: see
    /// [`Self::wait_converged`]).
    pub fn build(f: Fabric, opts: &FrrOptions) -> Result<FrrTestbed> {
        let plan = AddressPlan::new(&f)
            .map_err(|e| Error::Invalid(format!("fabric {}: addressing: {e}", f.name())))?;
        let configs = config::frr_configs(&f, &plan)?;
        let rt = RoutedTestbed::build_with(f, &RoutedOptions::default())?;
        let f = rt.fabric().clone();
        let switches: Vec<NodeId> = f.switches().collect();
        // The switch routes are BGP's to write: delete the testbed's.
        for &s in &switches {
            let nl = rt.nl(s);
            if let Some(pl) = f.plane(s) {
                for leaf in f.plane_info(pl).leaves().map(NodeId) {
                    if let Some(p) = plan.tor_prefix_v4(leaf) {
                        nl.del_route(p.addr, p.len, ROUTE_PROTOCOL)?;
                    }
                    if let Some(p) = plan.tor_prefix_v6(leaf) {
                        nl.del_route(p.addr, p.len, ROUTE_PROTOCOL)?;
                    }
                }
            }
        }
        let mut ports = Vec::new();
        for &s in &switches {
            ports.push((s, fib::port_map(&f, s, rt.nl(s))?));
        }
        let run_id = rt.testbed().run_id().to_string();
        let dir = std::env::temp_dir().join(format!("fabric-frr-{run_id}"));
        mkdir(&dir)?;
        let ns: Vec<&Netns> = switches.iter().map(|&s| rt.netns(s)).collect();
        let mgmt = mgmt::MgmtNet::create(&run_id, &ns)?;
        let agents = switches
            .iter()
            .enumerate()
            .map(|(i, &s)| SwitchAgents {
                name: f.node_name(s).to_string(),
                frr_instance: rt.netns(s).name().to_string(),
                mgmt: mgmt.switch_addr(i),
                lldp_socket: opts
                    .lldpd
                    .then(|| dir.join(format!("lldpd-{}.sock", f.node_name(s)))),
            })
            .collect();
        let mut tb = FrrTestbed {
            daemons: Daemons::default(),
            frr_dirs: Vec::new(),
            dir,
            agents,
            prometheus: None,
            mgmt,
            plan,
            ports,
            rt,
        };
        tb.start_frr(&configs, opts)?;
        if opts.lldpd {
            tb.start_lldpd(opts)?;
        }
        if opts.exporters {
            tb.start_exporters(opts)?;
        }
        Ok(tb)
    }

    /// Waits until `path` exists, a daemon died, or the timeout passes.
    fn wait_path(&mut self, path: &Path, timeout: Duration) -> Result<()> {
        let dir = self.dir.clone();
        let mut dead = Vec::new();
        let ok = wait_for(timeout, || {
            dead = self.daemons.exited(&dir);
            path.exists() || !dead.is_empty()
        });
        if !dead.is_empty() {
            return Err(Error::Invalid(format!(
                "a daemon stopped while starting: {}",
                dead.join("; ")
            )));
        }
        if !ok {
            return Err(Error::Invalid(format!(
                "{} did not appear within {timeout:?}",
                path.display()
            )));
        }
        Ok(())
    }

    /// FRR: configs in `/etc/frr/<instance>/`, the four daemons per switch, `vtysh -b`.
    fn start_frr(&mut self, configs: &[(String, String)], opts: &FrrOptions) -> Result<()> {
        let f = self.rt.fabric().clone();
        let switches: Vec<NodeId> = f.switches().collect();
        for (i, (name, conf)) in configs.iter().enumerate() {
            let inst = &self.agents[i].frr_instance;
            debug_assert_eq!(&self.agents[i].name, name);
            let etc = Path::new("/etc/frr").join(inst);
            mkdir(&etc)?;
            self.frr_dirs.push(etc.clone());
            self.frr_dirs.push(Path::new("/var/run/frr").join(inst));
            let conf = if opts.bfd {
                conf.clone()
            } else {
                strip_bfd(conf)
            };
            write(&etc.join("frr.conf"), &conf)?;
            write(&etc.join("vtysh.conf"), "")?;
            run(None, "chown", &["-R", "frr:frr", &etc.to_string_lossy()])?;
        }
        for daemon in FRR_DAEMONS {
            for (i, &s) in switches.iter().enumerate() {
                let inst = self.agents[i].frr_instance.clone();
                let label = format!("{daemon}@{}", self.agents[i].name);
                let log = log_path(&self.dir, &label);
                let args = vec!["-N".to_string(), inst.clone(), "-P".into(), "0".into()];
                let ns = self.rt.netns(s).clone();
                self.daemons.spawn(
                    &label,
                    Some(&ns),
                    &format!("{FRR_BIN}/{daemon}"),
                    &args,
                    &log,
                )?;
            }
            for i in 0..switches.len() {
                let sock = Path::new("/var/run/frr")
                    .join(&self.agents[i].frr_instance)
                    .join(format!("{daemon}.vty"));
                self.wait_path(&sock, opts.start_timeout)?;
            }
        }
        for (i, &s) in switches.iter().enumerate() {
            let inst = self.agents[i].frr_instance.clone();
            let ns = self.rt.netns(s).clone();
            run(Some(&ns), "vtysh", &["-N", &inst, "-b"])?;
        }
        Ok(())
    }

    /// lldpd per switch, its settings in a file it reads at start (`-O`): the system
    /// name, port ids = interface names, a 1 s transmit interval — so no frame ever
    /// leaves with the machine's host name.
    fn start_lldpd(&mut self, opts: &FrrOptions) -> Result<()> {
        let f = self.rt.fabric().clone();
        let switches: Vec<NodeId> = f.switches().collect();
        for (i, &s) in switches.iter().enumerate() {
            let a = self.agents[i].clone();
            let sock = a.lldp_socket.clone().expect("lldpd on");
            let pid = self.dir.join(format!("lldpd-{}.pid", a.name));
            let conf = self.dir.join(format!("lldpd-{}.conf", a.name));
            write(
                &conf,
                &format!(
                    "configure lldp tx-interval 1\nconfigure lldp portidsubtype ifname\n\
                     configure system hostname {}\n",
                    a.name
                ),
            )?;
            let args: Vec<String> = vec![
                "-d".into(),
                "-u".into(),
                sock.to_string_lossy().into(),
                "-p".into(),
                pid.to_string_lossy().into(),
                "-O".into(),
                conf.to_string_lossy().into(),
                "-I".into(),
                "p*".into(),
                "-M".into(),
                "4".into(),
                "-m".into(),
                a.mgmt.to_string(),
            ];
            let ns = self.rt.netns(s).clone();
            let label = format!("lldpd@{}", a.name);
            let log = log_path(&self.dir, &label);
            self.daemons
                .spawn(&label, Some(&ns), "lldpd", &args, &log)?;
        }
        for i in 0..switches.len() {
            let sock = self.agents[i].lldp_socket.clone().expect("lldpd on");
            self.wait_path(&sock, opts.start_timeout)?;
        }
        Ok(())
    }

    /// node_exporter per switch on its management address, then Prometheus.
    fn start_exporters(&mut self, opts: &FrrOptions) -> Result<()> {
        let f = self.rt.fabric().clone();
        let switches: Vec<NodeId> = f.switches().collect();
        let mut targets = Vec::new();
        for (i, &s) in switches.iter().enumerate() {
            let a = self.agents[i].clone();
            let args = vec![
                format!("--web.listen-address={}:{NODE_EXPORTER_PORT}", a.mgmt),
                "--collector.disable-defaults".into(),
                "--collector.netdev".into(),
                "--collector.netclass".into(),
            ];
            let ns = self.rt.netns(s).clone();
            let label = format!("node_exporter@{}", a.name);
            let log = log_path(&self.dir, &label);
            self.daemons
                .spawn(&label, Some(&ns), "prometheus-node-exporter", &args, &log)?;
            targets.push((a.name.clone(), a.mgmt, NODE_EXPORTER_PORT));
        }
        for (_, addr, port) in &targets {
            let sa = SocketAddr::from((*addr, *port));
            let ok = wait_for(opts.start_timeout, || {
                std::net::TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok()
            });
            if !ok {
                return Err(Error::Invalid(format!(
                    "node_exporter on {sa} did not answer within {:?}: {}",
                    opts.start_timeout,
                    self.daemons.exited(&self.dir).join("; ")
                )));
            }
        }
        let conf = self.dir.join("prometheus.yml");
        write(&conf, &config::prometheus_config(&targets))?;
        let port = free_port()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let args = vec![
            format!("--config.file={}", conf.display()),
            format!("--storage.tsdb.path={}", self.dir.join("tsdb").display()),
            format!("--web.listen-address={addr}"),
        ];
        let log = log_path(&self.dir, "prometheus");
        self.daemons
            .spawn("prometheus", None, "prometheus", &args, &log)?;
        let ok = wait_for(opts.start_timeout, || {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        });
        if !ok {
            return Err(Error::Invalid(format!(
                "Prometheus on {addr} did not answer within {:?}: {}",
                opts.start_timeout,
                self.daemons.exited(&self.dir).join("; ")
            )));
        }
        self.prometheus = Some(addr);
        Ok(())
    }

    /// The routed testbed underneath (namespaces, hosts, probes, link stats).
    pub fn routed(&self) -> &RoutedTestbed {
        &self.rt
    }

    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        self.rt.fabric()
    }

    /// Every switch's agents, in `fabric().switches()` order.
    pub fn agents(&self) -> &[SwitchAgents] {
        &self.agents
    }

    /// Prometheus's address, when the exporters run.
    pub fn prometheus(&self) -> Option<SocketAddr> {
        self.prometheus
    }

    /// The management network.
    pub fn mgmt(&self) -> &mgmt::MgmtNet {
        &self.mgmt
    }

    /// The run directory (configs, logs, lldpd sockets, Prometheus's data).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Pids of every daemon this testbed started.
    pub fn daemon_pids(&self) -> Vec<u32> {
        self.daemons.pids()
    }

    /// The FRR directories made for this run (`/etc/frr/<instance>`, `/var/run/frr/<instance>`).
    pub fn frr_dirs(&self) -> &[PathBuf] {
        &self.frr_dirs
    }

    /// Every switch's FIB against `routes` (the tables of the live topology).
    pub fn fib_check(&self, routes: &Routes) -> Result<Drift> {
        let f = self.rt.fabric();
        let sw: Vec<_> = self
            .ports
            .iter()
            .map(|(s, m)| (*s, self.rt.nl(*s), m))
            .collect();
        fib::check(f, &self.plan, routes, &sw, true)
    }

    /// [`Self::fib_check`] on the set of ports only: shares are ignored, so BGP's
    /// link-bandwidth weights after a failure (1:2 written as 33:66 where topo's tables
    /// split equally) do not count as a difference — the convergence measurement's
    /// "every FIB repaired".
    pub fn fib_check_ports(&self, routes: &Routes) -> Result<Drift> {
        let f = self.rt.fabric();
        let flat = |v: Vec<fib::FibRoute>| -> Vec<fib::FibRoute> {
            v.into_iter()
                .map(|mut r| {
                    r.ports = fib::normalize(r.ports.iter().map(|&(p, _)| (p, 1)).collect());
                    r
                })
                .collect()
        };
        fib::check_with(f, &self.plan, routes, self.ports.len(), |i| {
            let (s, port_of) = &self.ports[i];
            let nl = self.rt.nl(*s);
            let v4 = flat(fib::FibRoute::from_dump(&nl.routes()?, port_of));
            let v6 = flat(fib::FibRoute::from_dump(&nl.routes6()?, port_of));
            Ok((*s, v4, v6))
        })
    }

    /// Every switch's FIB as FRR reports it (`vtysh … show ip[v6] route json`) against
    /// `routes`: the same check as [`Self::fib_check`], read from FRR instead of netlink.
    pub fn fib_check_vtysh(&self, routes: &Routes) -> Result<Drift> {
        let f = self.rt.fabric();
        fib::check_with(f, &self.plan, routes, self.ports.len(), |i| {
            let s = self.ports[i].0;
            let (v4, v6) = vtysh_fib::read(
                self.rt.netns(s),
                &self.agents[i].frr_instance,
                true,
                testbed_port,
            )?;
            Ok((s, v4, v6))
        })
    }

    /// Waits until every switch's FIB matches `routes`; the last check either way.
    pub fn wait_converged(&self, routes: &Routes, timeout: Duration) -> Result<Drift> {
        let t = Instant::now();
        loop {
            let d = self.fib_check(routes)?;
            if d.entries.is_empty() || t.elapsed() > timeout {
                return Ok(d);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// [`Self::build`], then [`Self::wait_converged`] on the healthy fabric's tables: the
    /// testbed once every FIB equals them, or an error naming how many entries still
    /// differ after `timeout` (and the first few).
    pub fn converged(f: Fabric, opts: &FrrOptions, timeout: Duration) -> Result<FrrTestbed> {
        let healthy = Routes::compute(&f);
        let tb = FrrTestbed::build(f, opts)?;
        let d = tb.wait_converged(&healthy, timeout)?;
        if !d.entries.is_empty() {
            return Err(Error::Invalid(format!(
                "BGP did not converge to the tables within {:.0} s: {} of {} entries differ, first {:?}",
                timeout.as_secs_f64(),
                d.entries.len(),
                d.checked,
                &d.entries[..d.entries.len().min(3)]
            )));
        }
        Ok(tb)
    }

    /// Runs `vtysh -c CMD` on switch `i` (in `agents()` order) and returns its output.
    pub fn vtysh(&self, i: usize, cmd: &str) -> Result<String> {
        let s = self.ports[i].0;
        run(
            Some(self.rt.netns(s)),
            "vtysh",
            &["-N", &self.agents[i].frr_instance, "-c", cmd],
        )
    }

    /// Stops every daemon and deletes the directories, the bridge and the namespaces now
    /// (also done on drop). Returns the first error.
    pub fn teardown(mut self) -> Result<()> {
        self.cleanup()
        // Dropping `self` then deletes the namespaces (the routed testbed's guard).
    }

    fn cleanup(&mut self) -> Result<()> {
        self.daemons.stop_all();
        for d in self.frr_dirs.drain(..) {
            let _ = std::fs::remove_dir_all(&d);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        self.mgmt.delete()
    }
}

impl Drop for FrrTestbed {
    fn drop(&mut self) {
        if let Err(e) = self.cleanup() {
            eprintln!("frr testbed: cleanup: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfd_lines_are_stripped() {
        let c = "bfd\n profile FABRIC\n  detect-multiplier 3\n exit\nexit\n!\nrouter bgp 1\n neighbor FABRIC timers 3 9\n neighbor FABRIC bfd\n neighbor FABRIC bfd profile FABRIC\nexit\n";
        assert_eq!(
            strip_bfd(c),
            "!\nrouter bgp 1\n neighbor FABRIC timers 3 9\nexit\n"
        );
    }
}
