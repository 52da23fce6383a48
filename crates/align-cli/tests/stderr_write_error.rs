//! Regression test: a note on a stderr that cannot be written
//! (`2> /dev/full`) once panicked with exit status 101 (`eprintln!`); the
//! note is dropped and the command ends as it would otherwise.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn a_note_on_a_full_stderr_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2_shardmap_psum_50steps");
    // A file of the run folder that is not a trace: `validate` notes on
    // stderr that it is left out, and why.
    let (a, b) = (
        dir.path().join("a.xplane.pb"),
        dir.path().join("b.xplane.pb"),
    );
    std::fs::copy(run.join("rank0.xplane.pb"), &a).unwrap();
    std::fs::copy(run.join("rank1.xplane.pb"), &b).unwrap();
    std::fs::write(dir.path().join("settings.json"), b"{}").unwrap();
    let validate = |stderr: Stdio| {
        Command::new(env!("CARGO_BIN_EXE_align-cli"))
            .arg("validate")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(stderr)
            .status()
            .unwrap()
            .code()
    };
    let full = File::options().write(true).open("/dev/full").unwrap();
    let on_full = validate(Stdio::from(full));
    assert_ne!(on_full, Some(101));
    assert_eq!(on_full, validate(Stdio::null()));
}
