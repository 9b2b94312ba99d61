//! `veth`: real Linux testbeds — network namespaces joined by veth pairs, created and
//! destroyed by our own code through rtnetlink — and the I/O shell that runs the sans-IO
//! core of crate `veth_core` (wire formats, switch, endpoints) on them.
//!
//! Layout:
//! - [`netns`]: named namespaces (create/enter/delete), `clean` of crashed runs, Ctrl-C cleanup.
//! - [`netlink`]: the rtnetlink client: veth pairs, addresses, routes (ECMP multipath,
//!   next-hop objects), tbf, and stats64.
//! - [`Testbed`]: the guard that owns a run's namespaces and removes them on drop/panic.
//! - [`afpacket`]: AF_PACKET sockets: TPACKET_V2 receive rings, `sendmmsg` batches.
//! - [`congestion`]: the congestion testbed: a userspace switch and RoCEv2 endpoints in a
//!   star of namespaces, run by two real-time I/O loops.
//! - [`frr`]: the FRR testbed: switches running FRR (BGP, BFD), lldpd and node_exporter on a
//!   management network, a Prometheus scraping them.
//! - [`host`]: read-only telemetry of namespaces (or a host) the project did not create.
//! - [`routed`]: the routed testbed (kernel forwarding, ECMP routes, probes, failover).
//!
//! Everything that needs root says so with [`Error::NotRoot`].
//!
//! ```no_run
//! use veth::Testbed;
//! let mut tb = Testbed::new().unwrap();          // removes everything on drop
//! let a = tb.add_netns("h0").unwrap();
//! let b = tb.add_netns("h1").unwrap();
//! tb.connect(&a, "eth0", &b, "eth0").unwrap();
//! ```

pub mod afpacket;
pub mod congestion;
pub mod frr;
pub mod host;
pub mod lldp;
pub mod netlink;
pub mod netns;
pub mod routed;
pub mod tenant_vrf;

use netns::Netns;

/// Errors of the veth testbeds.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operation needs root (namespaces, veths, AF_PACKET).
    #[error(
        "veth testbeds need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create namespaces and veths; run as root (or set FABRIC_SKIP_NETNS=1 to skip the tests that need it)"
    )]
    NotRoot,
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What we were doing.
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A netlink request failed.
    #[error("netlink: {what}: {source}")]
    Netlink {
        /// The request.
        what: String,
        #[source]
        source: rtnetlink::Error,
    },
    /// A bad argument or configuration.
    #[error("{0}")]
    Invalid(String),
    /// Namespaces that could not be deleted, each as `name: reason`.
    #[error("{} namespace(s) left behind: {}", .0.len(), .0.join("; "))]
    Leaked(Vec<String>),
}

/// Result of the veth testbeds.
pub type Result<T> = std::result::Result<T, Error>;

/// One veth pair between two namespaces.
#[derive(Debug, Clone)]
pub struct VethLink {
    pub a: String,
    pub a_if: String,
    pub b: String,
    pub b_if: String,
    pub a_mac: [u8; 6],
    pub b_mac: [u8; 6],
}

/// The guard of one testbed run: every namespace it creates is deleted when it is
/// dropped — normally, on panic (unwinding runs `Drop`) and, with
/// [`netns::install_signal_cleanup`], on Ctrl-C. Deleting a namespace deletes the veths
/// in it, so nothing the run made survives.
#[derive(Debug)]
pub struct Testbed {
    run_id: String,
    namespaces: Vec<Netns>,
    links: Vec<VethLink>,
}

impl Testbed {
    /// A new, empty run (fails with [`Error::NotRoot`] unless root).
    pub fn new() -> Result<Testbed> {
        if !netns::is_root() {
            return Err(Error::NotRoot);
        }
        Ok(Testbed {
            run_id: netns::new_run_id(),
            namespaces: Vec::new(),
            links: Vec::new(),
        })
    }

    /// The unique id of this run (part of every namespace name).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The full namespace name for `role` in this run.
    pub fn ns_name(&self, role: &str) -> String {
        format!("{}{}-{role}", netns::PREFIX, self.run_id)
    }

    /// Create namespace `role` (e.g. `s0`, `h3`).
    pub fn add_netns(&mut self, role: &str) -> Result<Netns> {
        let ns = Netns::create(&self.ns_name(role))?;
        self.namespaces.push(ns.clone());
        Ok(ns)
    }

    /// The namespaces of this run.
    pub fn namespaces(&self) -> &[Netns] {
        &self.namespaces
    }

    /// The veth pairs of this run.
    pub fn links(&self) -> &[VethLink] {
        &self.links
    }

    /// Join `a:a_if` and `b:b_if` with a veth pair and bring both ends up. MACs are
    /// derived from the link number (locally administered, unique in the run).
    pub fn connect(&mut self, a: &Netns, a_if: &str, b: &Netns, b_if: &str) -> Result<VethLink> {
        let n = self.links.len() as u32;
        let mac_a = mac_for(n, 0);
        let mac_b = mac_for(n, 1);
        let nl = netlink::Nl::open(a)?;
        nl.add_veth(a_if, mac_a, b, b_if, mac_b)?;
        nl.set_up(a_if)?;
        netlink::Nl::open(b)?.set_up(b_if)?;
        let l = VethLink {
            a: a.name().to_string(),
            a_if: a_if.to_string(),
            b: b.name().to_string(),
            b_if: b_if.to_string(),
            a_mac: mac_a,
            b_mac: mac_b,
        };
        self.links.push(l.clone());
        Ok(l)
    }

    /// Leave this run's namespaces in place (for `fabric testbed up`): the guard forgets
    /// them; `fabric testbed down RUN_ID` or `clean` removes them later.
    pub fn persist(mut self) {
        for ns in self.namespaces.drain(..) {
            netns::forget_live(ns.name());
        }
        self.links.clear();
    }

    /// Delete everything now (also done on drop). Tries every namespace; the error
    /// lists each one left behind with its reason.
    pub fn teardown(&mut self) -> Result<()> {
        let mut left = Vec::new();
        for ns in self.namespaces.drain(..).rev() {
            if let Err(e) = ns.delete() {
                left.push(format!("{}: {e}", ns.name()));
            }
        }
        self.links.clear();
        if left.is_empty() {
            Ok(())
        } else {
            Err(Error::Leaked(left))
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("veth testbed {}: cleanup failed: {e}", self.run_id);
        }
    }
}

/// A locally administered unicast MAC for end `side` of link `n`.
pub fn mac_for(n: u32, side: u8) -> [u8; 6] {
    let b = n.to_be_bytes();
    [0x02, 0xfa, b[1], b[2], b[3], side]
}

/// For tests: `Ok(true)` if root-only tests can run, `Ok(false)` if they must be
/// skipped because `FABRIC_SKIP_NETNS=1`, and an error explaining why otherwise.
pub fn root_tests_enabled() -> std::result::Result<bool, String> {
    if std::env::var("FABRIC_SKIP_NETNS").as_deref() == Ok("1") {
        return Ok(false);
    }
    if netns::is_root() {
        Ok(true)
    } else {
        Err("this test creates network namespaces and veths and needs root; run it as root, or set FABRIC_SKIP_NETNS=1 to skip it".into())
    }
}
