//! The Slurm export checked by a real Slurm (Debian's slurm-wlm 22.05, `topology/tree`):
//! a private munged and slurmctld run on our `topology.conf` with every node in the
//! power-saving CLOUD state (no slurmd; ../docs/placement.md), `scontrol show topology`
//! lists our switches, jobs with `--switches=1` land under one leaf, and a job sequence is
//! placed by Slurm (printed next to `flow_model::place::Policy::SlurmTree`'s emulation) and by
//! our policy, which spans fewer pods in total.
//!
//! Needs root and slurm-wlm + munge (scripts/install-deps.sh); fails when they are missing
//! unless `FABRIC_SKIP_TOOLS=1`. Every daemon and the temp directory go on every exit path
//! (a guard kills both daemons and removes the directory when the test ends or panics).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::free_port;

use flow_model::place::{Cluster, Policy};
use topo::export::slurm::expand_hostlist;

/// Slurm's and munge's programs, and root (munged and slurmctld run as root here).
fn runnable() -> bool {
    let tools = [
        "slurmctld",
        "munged",
        "mungekey",
        "scontrol",
        "sbatch",
        "squeue",
    ];
    if !testkit::tools::require(&tools, &[]) {
        return false;
    }
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("FABRIC_SKIP_TOOLS").as_deref() == Ok("1") {
        eprintln!("skipped: not root (FABRIC_SKIP_TOOLS=1)");
        return false;
    }
    panic!("not root: run the Slurm test as root, or set FABRIC_SKIP_TOOLS=1 to skip");
}

/// Start-up attempts of slurmctld, each on fresh ports.
const STARTS: usize = 5;

/// What slurmctld logs before it exits when its port is taken
/// (`fatal: slurm_init_msg_engine_addrname_port error Address already in use`).
const BIND_FAILED: &str = "Address already in use";

/// The private munged and slurmctld, stopped and their directory removed on drop.
struct Slurm {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<Child>,
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for c in self.daemons.iter_mut().rev() {
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let t = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Slurm {
    fn cmd(&self, tool: &str, args: &[&str]) -> String {
        let o = Command::new(tool)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            o.status.success(),
            "{tool} {args:?}: {}\nslurmctld.log:\n{}",
            String::from_utf8_lossy(&o.stderr),
            self.log()
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("slurmctld.log")).unwrap_or_default()
    }

    /// Starts munged, then slurmctld on ports from `port` (two per attempt: slurmctld's,
    /// then the unused slurmd one), retrying on fresh ports when slurmctld could not bind
    /// its port: a port picked free may be taken before slurmctld binds it.
    fn start(topology_conf: &str, nodes: &str, mut port: impl FnMut() -> u16) -> Slurm {
        let dir = std::env::temp_dir().join(format!("fabric-slurm-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        let mut s = Slurm {
            conf: dir.join("slurm.conf"),
            dir,
            daemons: Vec::new(),
        };
        let d = s.dir.clone();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(d.join("topology.conf"), topology_conf).unwrap();
        let key = d.join("munge.key");
        let st = Command::new("mungekey")
            .args(["-c", "-k"])
            .arg(&key)
            .status()
            .unwrap();
        assert!(st.success(), "mungekey");
        let sock = d.join("munge.sock");
        let munged = Command::new("munged")
            .args(["-F", "-f"])
            .arg(format!("--socket={}", sock.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", d.join("munged.pid").display()))
            .arg(format!("--seed-file={}", d.join("munged.seed").display()))
            .arg(format!("--log-file={}", d.join("munged.log").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("munged");
        s.daemons.push(munged);
        let t = Instant::now();
        while !sock.exists() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "munged did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        for attempt in 1..=STARTS {
            let (p1, p2) = (port(), port());
            match s.start_slurmctld(nodes, p1, p2) {
                Ok(()) => return s,
                Err(log) if attempt < STARTS && log.contains(BIND_FAILED) => {
                    eprintln!(
                        "slurmctld could not bind port {p1} (taken since it was picked), \
                         attempt {attempt} of {STARTS}: retrying on fresh ports"
                    );
                }
                Err(log) => panic!(
                    "slurmctld exited at start-up (attempt {attempt} of {STARTS}, port {p1}):\n{log}"
                ),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Writes slurm.conf with `SlurmctldPort=p1`, starts slurmctld and waits until it
    /// answers `scontrol ping`; its log when it exits first (then it is reaped and its log
    /// removed, ready for another attempt).
    fn start_slurmctld(&mut self, nodes: &str, p1: u16, p2: u16) -> Result<(), String> {
        let d = self.dir.clone();
        let sock = d.join("munge.sock");
        let conf = format!(
            "ClusterName=fabrictest\n\
             SlurmctldHost=localhost\n\
             SlurmctldPort={p1}\n\
             SlurmdPort={p2}\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={sock}\n\
             CredType=cred/munge\n\
             SlurmUser=root\n\
             StateSaveLocation={d}/state\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             TopologyPlugin=topology/tree\n\
             SchedulerParameters=max_switch_wait=36000\n\
             SuspendProgram=/bin/true\n\
             ResumeProgram=/bin/true\n\
             ResumeTimeout=36000\n\
             SuspendTime=36000\n\
             PrivateData=cloud\n\
             MpiDefault=none\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobCompType=jobcomp/none\n\
             NodeName={nodes} NodeAddr=127.0.0.1 CPUs=1 State=CLOUD\n\
             PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            sock = sock.display(),
            d = d.display(),
        );
        std::fs::write(&self.conf, conf).unwrap();
        let ctld = Command::new("slurmctld")
            .args(["-D", "-c", "-i"])
            .env("SLURM_CONF", &self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("slurmctld");
        self.daemons.push(ctld);
        let t = Instant::now();
        loop {
            let ctld = self.daemons.last_mut().unwrap();
            if ctld.try_wait().ok().flatten().is_some() {
                self.daemons.pop();
                let log = self.log();
                let _ = std::fs::remove_file(self.dir.join("slurmctld.log"));
                return Err(log);
            }
            let ok = Command::new("scontrol")
                .arg("ping")
                .env("SLURM_CONF", &self.conf)
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("is UP"));
            if ok {
                return Ok(());
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "slurmctld did not answer within 60 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Submits a job of `n` nodes that never runs (`--wrap=true` on CLOUD nodes).
    fn submit(&self, n: u32, one_leaf: bool) -> String {
        let nn = n.to_string();
        let mut args = vec![
            "--parsable",
            "-N",
            &nn,
            "--exclusive",
            "--wrap=true",
            "-o",
            "/dev/null",
        ];
        if one_leaf {
            args.push("--switches=1");
        }
        self.cmd("sbatch", &args).trim().to_string()
    }

    /// Node list of every job, once all `ids` have one.
    fn placements(&self, ids: &[String]) -> BTreeMap<String, Vec<String>> {
        let t = Instant::now();
        loop {
            let out = self.cmd("squeue", &["-h", "-o", "%i %N"]);
            let got: BTreeMap<String, Vec<String>> = out
                .lines()
                .filter_map(|l| l.split_once(' '))
                .filter(|(_, n)| !n.trim().is_empty())
                .map(|(i, n)| (i.to_string(), expand_hostlist(n.trim()).unwrap()))
                .collect();
            if ids.iter().all(|i| got.contains_key(i)) {
                return got;
            }
            assert!(
                t.elapsed() < Duration::from_secs(90),
                "jobs not placed within 90 s: {out}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn servers(names: &[String]) -> Vec<u32> {
    let mut v: Vec<u32> = names
        .iter()
        .map(|n| n.strip_prefix("host").unwrap().parse().unwrap())
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn slurmctld_reads_our_tree_and_our_policy_spans_fewer_pods() {
    if !runnable() {
        return;
    }
    let f = topo::presets::build("fat-tree-k8").unwrap();
    let work = std::env::temp_dir().join(format!("fabric-slurm-export-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let conf = work.join("topology.conf");
    let o = Command::new(env!("CARGO_BIN_EXE_fabric"))
        .args([
            "routes",
            "export",
            "--preset",
            "fat-tree-k8",
            "--format",
            "slurm",
            "--out",
        ])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = std::fs::read_to_string(&conf).unwrap();
    let _ = std::fs::remove_dir_all(&work);
    let mut leaves: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut switches = BTreeSet::new();
    for l in ours.lines().filter(|l| !l.starts_with('#')) {
        let name = l
            .split_whitespace()
            .next()
            .unwrap()
            .strip_prefix("SwitchName=")
            .unwrap();
        switches.insert(name.to_string());
        if let Some(n) = l.split_whitespace().find_map(|w| w.strip_prefix("Nodes=")) {
            leaves.insert(
                name.into(),
                expand_hostlist(n).unwrap().into_iter().collect(),
            );
        }
    }
    // The first attempt gets a port this test holds, as if another program had taken it
    // since it was picked: slurmctld cannot bind it, and the start is retried.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut first = Some(taken.local_addr().unwrap().port());
    let slurm = Slurm::start(&ours, "host[0-127]", || {
        first.take().unwrap_or_else(free_port)
    });
    drop(taken);

    // scontrol lists exactly our switches: 32 leaves at level 0, 8 pods, one root
    let shown = slurm.cmd("scontrol", &["show", "topology"]);
    let mut listed = BTreeSet::new();
    let mut level0 = 0;
    for l in shown.lines() {
        if let Some(n) = l
            .split_whitespace()
            .find_map(|w| w.strip_prefix("SwitchName="))
        {
            listed.insert(n.to_string());
            level0 += usize::from(l.contains("Level=0"));
        }
    }
    assert_eq!(listed, switches, "{shown}");
    assert_eq!(level0, 32, "{shown}");

    // jobs with --switches=1, then jobs without: the same sequence in the emulation
    let seq: [(u32, bool); 9] = [
        (2, true),
        (4, true),
        (3, true),
        (4, true),
        (4, false),
        (16, false),
        (8, false),
        (2, false),
        (16, false),
    ];
    let ids: Vec<String> = seq.iter().map(|&(n, one)| slurm.submit(n, one)).collect();
    let placed = slurm.placements(&ids);
    let mut emu = Cluster::new(&f);
    let mut topo = Cluster::new(&f);
    let pods = |c: &Cluster, s: &[u32]| {
        s.iter()
            .map(|&x| c.tree.blocks[c.tree.block_of[x as usize] as usize].pod)
            .collect::<BTreeSet<u32>>()
            .len()
    };
    println!(
        "| job | nodes | --switches=1 | Slurm 22.05 (real) | pods | emulation | ours (topo) | pods |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let (mut slurm_pods, mut topo_pods, mut agree) = (0, 0, 0);
    let hl = |v: &[u32]| {
        let names: Vec<String> = v.iter().map(|s| format!("host{s}")).collect();
        topo::export::slurm::hostlist(names.iter().map(String::as_str))
    };
    for (k, (&(n, one), id)) in seq.iter().zip(&ids).enumerate() {
        let real = servers(&placed[id]);
        assert_eq!(real.len(), n as usize, "job {id}");
        if one {
            let set: BTreeSet<String> = placed[id].iter().cloned().collect();
            assert!(
                leaves.values().any(|l| set.is_subset(l)),
                "--switches=1 job {id} spans leaves: {real:?}"
            );
        }
        // the emulation continues from the real state, so one miss does not cascade
        let e = emu.place(Policy::SlurmTree, n, one).unwrap();
        agree += usize::from(e == real);
        emu.allocate(k as u64, &real, Policy::SlurmTree);
        let t = topo.place(Policy::Topo, n, one).unwrap();
        topo.allocate(k as u64, &t, Policy::Topo);
        let (ps, pt) = (pods(&emu, &real), pods(&topo, &t));
        slurm_pods += ps;
        topo_pods += pt;
        let same = if e == real {
            "same".to_string()
        } else {
            hl(&e)
        };
        println!(
            "| {id} | {n} | {one} | {} | {ps} | {same} | {} | {pt} |",
            hl(&real),
            hl(&t)
        );
    }
    println!("emulation = real Slurm on {agree} of {} jobs", seq.len());
    assert!(
        topo_pods < slurm_pods,
        "ours spans fewer pods: {topo_pods} vs {slurm_pods}"
    );
}
