//! Helpers shared by the root-only congestion tests.

use veth::root_tests_enabled;

/// The engine's two threads per test must not compete with another test's on a small
/// machine: the tests of one file run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether root-only tests run here (a clear failure when they cannot and were not
/// asked to be skipped).
pub fn enabled() -> bool {
    match root_tests_enabled() {
        Ok(b) => b,
        Err(why) => panic!("{why}"),
    }
}
