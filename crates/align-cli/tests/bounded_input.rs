//! Every input is read within bounds: a gzip file that decompresses past
//! the limit for its size is refused naming the file and the limit (no
//! abort under a 2 GB address-space limit), and a FIFO given as an input
//! is refused at its open instead of waited on. Each once took gigabytes,
//! aborted (exit 134), or hung.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{cli, kineto_ranks, kineto_run};
use predicates::prelude::*;

fn rank0() -> PathBuf {
    kineto_ranks(&kineto_run("n2_gloo_100steps"))[0].clone()
}

/// A real PyTorch trace past a limit given with `--max-decompressed`: every
/// command that reads it refuses it, naming it and the limit.
#[test]
fn a_gzip_trace_past_the_decompressed_limit_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = rank0();
    let out = dir.path().join("x.json");
    for args in [
        vec!["validate".into(), trace.clone().into_os_string()],
        vec![
            "export".into(),
            trace.clone().into_os_string(),
            "-o".into(),
            out.clone().into_os_string(),
        ],
    ] {
        cli()
            .args(["--max-decompressed", "1000000"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains(trace.display().to_string())
                    .and(predicate::str::contains("more than 1000000 bytes"))
                    .and(predicate::str::contains("--max-decompressed")),
            );
    }
    assert!(!out.exists());
    // Under the default limit it is read.
    cli().arg("validate").arg(&trace).assert().success();
}

/// A 3 MB `.pt.trace.json.gz` that decompressed to 2.96 GB was accepted
/// (and one of 10 MB aborted with exit 134 under a 4 GB address-space
/// limit): a gzip bomb is refused by the default limit, and no command
/// aborts under a 2 GB address space.
#[cfg(target_os = "linux")]
#[test]
fn a_gzip_bomb_is_refused_within_a_2gb_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("rank0.pt.trace.json.gz");
    common::write_gzip_bomb(&bomb);
    let exe = assert_cmd::cargo::cargo_bin!("align-cli");
    for command in ["validate", "inspect"] {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v 2000000; exec '{}' {command} '{}'",
                exe.display(),
                bomb.display()
            ))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("decompresses to more than"),
            "{command}: {stderr}"
        );
        assert!(
            stderr.contains("rank0.pt.trace.json.gz"),
            "{command}: {stderr}"
        );
    }
}

/// A FIFO named like a trace hung every reader (its open waits for a
/// writer): as an input it is refused at once.
#[cfg(unix)]
#[test]
fn a_fifo_given_as_an_input_is_refused_at_its_open() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rank1.pt.trace.json.gz");
    mkfifo(&fifo);
    let real = rank0();
    let node = |n: &str, p: &Path| format!("{n}={}", p.display());
    let out = dir.path().join("m.json");
    for args in [
        vec!["validate".to_owned(), fifo.display().to_string()],
        vec!["inspect".to_owned(), fifo.display().to_string()],
        vec![
            "merge".to_owned(),
            "--trace".to_owned(),
            node("0", &real),
            "--trace".to_owned(),
            node("1", &fifo),
            "-o".to_owned(),
            out.display().to_string(),
        ],
    ] {
        cli()
            .args(&args)
            .timeout(Duration::from_secs(30))
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("a FIFO")
                    .and(predicate::str::contains("rank1.pt.trace.json.gz")),
            );
    }
    assert!(!out.exists());
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}
