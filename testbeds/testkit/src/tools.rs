//! Programs and files a test needs: present, or the test skipped (`FABRIC_SKIP_TOOLS=1`),
//! or a failure that says how to install them — never a silent pass.

use std::path::Path;
use std::process::{Command, Stdio};

/// Whether `tool` is a command on `PATH` (`command -v`), or in `/usr/sbin` or `/sbin`
/// (where Debian puts `opensm` and `ibsim`, off a user's `PATH`).
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(tool).is_file())
}

/// True when every one of `tools` is on `PATH` and every one of `files` exists; false,
/// saying what is missing on stderr, when something is missing and `FABRIC_SKIP_TOOLS=1`
/// (the test then skips); otherwise a panic naming what is missing and the fix.
pub fn require(tools: &[&str], files: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| !have(t))
        .chain(files.iter().copied().filter(|f| !Path::new(f).exists()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("FABRIC_SKIP_TOOLS").as_deref() == Ok("1") {
        eprintln!(
            "skipped: {} not installed (FABRIC_SKIP_TOOLS=1)",
            missing.join(", ")
        );
        return false;
    }
    panic!(
        "{} not installed: run scripts/install-deps.sh (as root), or set FABRIC_SKIP_TOOLS=1 to skip",
        missing.join(", ")
    );
}
