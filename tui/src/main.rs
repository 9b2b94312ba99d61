//! `fabric-tui`: the terminal UI. Not built yet: no open issue covers it; it
//! exists so the workspace has its final shape. It says so and exits non-zero.

fn main() {
    eprintln!("fabric-tui: the terminal UI is not implemented yet (no issue covers it so far)");
    std::process::exit(2);
}
