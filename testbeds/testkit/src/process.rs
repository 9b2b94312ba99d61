//! Children a test starts, never left behind.

use std::process::Child;

/// A child process killed (SIGKILL) and reaped when dropped, also when the test fails
/// half-way.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
