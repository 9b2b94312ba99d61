//! Helpers for the end-to-end tests of the project's binaries, shared by the tests of
//! several crates (`fabric-manager`, `tui`, `topo`, `scenario`). A dev-dependency only: it depends on
//! no crate of the workspace (std alone), so the crate graph keeps pointing one way.
//!
//! # Layout
//! * [`tmux`] — a command in a detached tmux session: send it keys, read its screen,
//!   wait (generously, the machine may be loaded) for what it should show.
//! * [`tools`] — programs and files a test needs, or the test skipped with
//!   `FABRIC_SKIP_TOOLS=1`.
//! * [`prometheus`] — a real Prometheus scraping loopback targets every second.
//! * [`process`] — a child killed when dropped.
//! * [`huge`] — files past a reader's size cap (sparse, and a link to `/dev/zero`).
//!
//! # Example
//! ```no_run
//! use testkit::tmux::{self, Tmux};
//! if tmux::available() {
//!     let s = Tmux::start("example", "top", (120, 36));
//!     s.wait_for_text("load average");
//!     s.keys(&["q"]);
//! } // the session is killed when `s` is dropped
//! ```

pub mod huge;
pub mod process;
pub mod prometheus;
pub mod tmux;
pub mod tools;

/// A TCP port free on loopback right now, for a server a test starts that cannot be told
/// to bind `127.0.0.1:0` and say which port it got (another test may take the port before
/// the server binds it: prefer port 0 wherever the server reports its address).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding 127.0.0.1:0")
}
