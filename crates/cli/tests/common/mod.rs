//! Shared by the integration tests: running the `vsl` binary.

use std::process::Command;

/// Runs `vsl ARGS`: (exit code, stdout, stderr).
pub fn vsl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vsl"))
        .args(args)
        .output()
        .expect("run vsl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
