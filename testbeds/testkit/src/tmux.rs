//! A command in a detached tmux session (`tmux new-session -d`), driven the way a user
//! drives a terminal program: `send-keys`, read back with `capture-pane -p`.
//!
//! The session is named after the test process and a tag, so parallel tests and runs
//! never share one, and is killed when the [`Tmux`] is dropped (also when a test fails
//! half-way). After the command exits its pane stays open (`[exited STATUS]` below its
//! last output) for longer than any wait here, so a test that fails shows why.
//!
//! Each session has a tmux server of its own (`tmux -L NAME -f /dev/null`), not the
//! machine's default one: the command then runs with the test's environment and no
//! user's `~/.tmux.conf` (a server someone else started would give the session *its*
//! environment), and no test's session can be the last one of a server that exits while
//! another test's `new-session` is connecting to it.

use std::process::Command;
use std::time::{Duration, Instant};

/// How long a wait for the screen lasts before the test fails: generous, since tests run
/// beside others on a loaded machine, and only a failing test waits this long.
pub const WAIT: Duration = Duration::from_secs(60);

/// How often the screen is read while waiting.
const POLL: Duration = Duration::from_millis(100);

/// Whether tmux can be run: true if it can; false, saying so on stderr, if it cannot and
/// `FABRIC_SKIP_TOOLS=1` (the test then skips); a panic naming the fix otherwise
/// ([`crate::tools::require`]).
pub fn available() -> bool {
    crate::tools::require(&["tmux"], &[])
}

/// A tmux session running one shell command, killed on drop.
#[derive(Debug)]
pub struct Tmux {
    name: String,
}

impl Tmux {
    /// Starts `cmd` (a shell command line) in a new detached session
    /// `fabric-test-<pid>-<tag>` of `size` = (columns, rows).
    pub fn start(tag: &str, cmd: &str, size: (u16, u16)) -> Tmux {
        let name = format!("fabric-test-{}-{tag}", std::process::id());
        let status = tmux(&name)
            .args(["new-session", "-d", "-s", &name])
            .args(["-x", &size.0.to_string(), "-y", &size.1.to_string()])
            .arg(format!("{cmd}; echo \"[exited $?]\"; sleep 300"))
            .status()
            .unwrap_or_else(|e| panic!("tmux (scripts/install-deps.sh): {e}"));
        assert!(status.success(), "tmux new-session -s {name} failed");
        Tmux { name }
    }

    /// The session's name (a `-t` target for other tmux commands).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The visible screen, one line per row.
    pub fn screen(&self) -> String {
        self.tmux_out(&["capture-pane", "-p", "-t", &self.name])
    }

    /// Sends keys in tmux's `send-keys` names (`Tab`, `Escape`, `C-z`, `q`, or `-l` then
    /// literal text).
    pub fn keys(&self, keys: &[&str]) {
        let status = tmux(&self.name)
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success(), "tmux send-keys {keys:?} failed");
    }

    /// A tmux format expanded for the session (`#{alternate_on}`, `#{cursor_flag}`, …).
    pub fn format(&self, fmt: &str) -> String {
        self.tmux_out(&["display-message", "-p", "-t", &self.name, fmt])
            .trim()
            .to_string()
    }

    /// Waits up to [`WAIT`] until `ok(screen)`, and returns that screen; fails the test
    /// naming `what` and showing the last screen.
    pub fn wait_for(&self, what: &str, mut ok: impl FnMut(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                t.elapsed() < WAIT,
                "{what}: not on screen after {WAIT:?}; screen:\n{s}"
            );
            std::thread::sleep(POLL);
        }
    }

    /// Waits up to [`WAIT`] until the format `fmt` expands to `want` (say
    /// `#{pane_current_command}` to `bash`: the program in the shell has exited, so what
    /// is typed next goes to the shell, not to the program on its way out).
    pub fn wait_for_format(&self, fmt: &str, want: &str) {
        let t = Instant::now();
        loop {
            let got = self.format(fmt);
            if got == want {
                return;
            }
            assert!(
                t.elapsed() < WAIT,
                "{fmt} is `{got}`, not `{want}`, after {WAIT:?}; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(POLL);
        }
    }

    /// [`Self::wait_for`] a screen that shows `text`.
    pub fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("`{text}`"), |s| s.contains(text))
    }

    /// [`Self::wait_for`] a screen that no longer shows `text`.
    pub fn wait_gone(&self, text: &str) -> String {
        self.wait_for(&format!("`{text}` gone"), |s| !s.contains(text))
    }

    fn tmux_out(&self, args: &[&str]) -> String {
        let o = tmux(&self.name).args(args).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // the session was the server's only one: the server exits with it
        let _ = tmux(&self.name)
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

/// `tmux` talking to the server of session `name` (its own socket, no config file).
fn tmux(name: &str) -> Command {
    let mut c = Command::new("tmux");
    c.args(["-L", name, "-f", "/dev/null"]);
    c
}
