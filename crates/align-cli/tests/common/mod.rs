//! Helpers shared by the command-line tests.

use assert_cmd::Command;

/// The `align-cli` binary under test.
pub fn cli() -> Command {
    assert_cmd::cargo_bin_cmd!("align-cli")
}

/// A folder with a small synthetic 3-node run under `run/` (`demo --out`).
#[allow(dead_code)] // not every test file needs a run
pub fn demo_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    cli()
        .args([
            "demo", "-q", "--nodes", "3", "--steps", "120", "--seed", "7", "--out",
        ])
        .arg(dir.path())
        .assert()
        .success()
        .stdout("");
    dir
}
