//! How the infiniband-diags tools (and OpenSM) reach a subnet: through ibsim's
//! `libumad2sim.so` preload on a named socket, or through a real HCA's umad port
//! (`-C CA -P PORT`, `/dev/infiniband/umad*`: root or the `rdma` group).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Error, Result, UMAD2SIM, io};

/// The umad port the tools use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UmadPort {
    /// ibsim's socket (`IBSIM_SOCKNAME`), reached with `LD_PRELOAD=libumad2sim.so`.
    Sim {
        /// The socket name ibsim was started with.
        sock: String,
    },
    /// A real channel adapter's port (`ibstat` lists them).
    Ca {
        /// CA name (`mlx5_0`).
        name: String,
        /// Its port (1-based).
        port: u8,
    },
}

/// Runs the tools against one subnet; scratch files (umad2sim's `sys-PID` trees) go
/// into `dir`.
#[derive(Debug, Clone)]
pub struct Tools {
    port: UmadPort,
    dir: PathBuf,
}

impl Tools {
    /// Tools on `port`, working in `dir`.
    pub fn new(port: UmadPort, dir: &Path) -> Tools {
        Tools {
            port,
            dir: dir.to_path_buf(),
        }
    }

    /// The umad port.
    pub fn port(&self) -> &UmadPort {
        &self.port
    }

    /// A command for `program` on this subnet (for a real CA, the diagnostic tools get
    /// `-C CA -P PORT`; OpenSM takes `-g` instead and is never started on one).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        match &self.port {
            UmadPort::Sim { sock } => {
                c.env("LD_PRELOAD", UMAD2SIM).env("IBSIM_SOCKNAME", sock);
            }
            UmadPort::Ca { name, port } => {
                c.args(["-C", name, "-P", &port.to_string()]);
            }
        }
        c.current_dir(&self.dir).stdin(Stdio::null());
        c
    }

    /// Runs a tool; its standard output, or an error with its standard error.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<String> {
        let out = self.command(program).args(args).output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Missing(program.to_string())
            } else {
                io(program)(e)
            }
        })?;
        // umad2sim leaves a sys-<pid> tree in the working directory per process.
        if matches!(self.port, UmadPort::Sim { .. }) {
            let _ = fs::remove_dir_all(self.dir.join(format!("sys-{}", out_pid(&out))));
        }
        if !out.status.success() {
            return Err(Error::Tool {
                cmd: format!("{program} {}", args.join(" ")),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// The pid umad2sim announces on stderr (`ibwarn: [PID] sim_connect: …`), 0 if none.
fn out_pid(out: &std::process::Output) -> u32 {
    let e = String::from_utf8_lossy(&out.stderr);
    e.split("ibwarn: [")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_ca_gets_its_port_on_the_command_line_and_no_preload() {
        let t = Tools::new(
            UmadPort::Ca {
                name: "mlx5_0".into(),
                port: 1,
            },
            Path::new("/tmp"),
        );
        let c = t.command("ibnetdiscover");
        let args: Vec<_> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["-C", "mlx5_0", "-P", "1"]);
        assert!(c.get_envs().all(|(k, _)| k != "LD_PRELOAD"));
        let s = Tools::new(UmadPort::Sim { sock: "x".into() }, Path::new("/tmp"));
        let c = s.command("ibroute");
        assert!(
            c.get_envs()
                .any(|(k, v)| k == "IBSIM_SOCKNAME" && v == Some("x".as_ref()))
        );
    }
}
