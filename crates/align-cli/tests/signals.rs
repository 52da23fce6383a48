//! SIGINT/SIGTERM in the middle of a run leave no temporary file or folder
//! (exit 130/143), and a temporary left by a killed run is removed by the
//! next run writing into that folder, only when its process is gone.
#![cfg(unix)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cli;
use safe_temp::{TempName, this_host};

fn bin() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin!("align-cli"))
}

/// A 2-node run large enough that a merge takes a good fraction of a second.
fn big_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    cli()
        .args([
            "synth",
            "-q",
            "--nodes",
            "2",
            "--steps",
            "150",
            "--kernels",
            "120",
        ])
        .arg(&run)
        .assert()
        .success();
    run
}

fn temps_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| TempName::parse(n).is_some() || n.to_string_lossy().starts_with('.'))
        .map(|n| n.to_string_lossy().into_owned())
        .collect()
}

/// Wait until `child` has a temporary in `dir`, then send `signal`;
/// return the exit code.
fn interrupt(mut child: Child, dir: &Path, signal: i32) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    while temps_in(dir).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before a temporary appeared"
        );
        assert!(Instant::now() < deadline, "no temporary appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let status = child.wait().unwrap();
    status.code().expect("exits, not killed by the signal")
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn interrupted_merges_and_aligns_leave_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let run = big_run(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();

    let merge = |name: &str| {
        let mut cmd = bin();
        cmd.arg("merge")
            .arg("--run-dir")
            .arg(&run)
            .arg("-o")
            .arg(out.join(name));
        spawn(&mut cmd)
    };
    assert_eq!(interrupt(merge("m.xplane.pb"), &out, libc::SIGINT), 130);
    assert_eq!(temps_in(&out), Vec::<String>::new());
    // Perfetto: an intermediate XSpace, then the export.
    assert_eq!(interrupt(merge("m.pftrace"), &out, libc::SIGTERM), 143);
    assert_eq!(temps_in(&out), Vec::<String>::new());

    let align = |out: &Path| {
        let mut align = bin();
        align
            .arg("align")
            .arg("--run-dir")
            .arg(&run)
            .arg("--out-dir")
            .arg(out);
        spawn(&mut align)
    };
    assert_eq!(interrupt(align(&out), &out, libc::SIGTERM), 143);
    assert_eq!(temps_in(&out), Vec::<String>::new());

    // A new output folder, interrupted: it was left behind, empty.
    let fresh = out.join("fresh");
    let child = align(&fresh);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !fresh.exists() {
        assert!(Instant::now() < deadline, "the folder never appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(interrupt(child, &fresh, libc::SIGINT), 130);
    assert!(!fresh.exists(), "the new, empty output folder is removed");
}

#[test]
fn a_stale_temporary_of_a_dead_process_is_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = big_run(dir.path());
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = this_host();
    let stale = dir
        .path()
        .join(format!(".m.xplane.pb~ta~{host}~{dead}~Ab12cD.tmp"));
    let live = dir.path().join(format!(
        ".m.xplane.pb~ta~{host}~{}~Ab12cD.tmp",
        std::process::id()
    ));
    let other = dir.path().join(".m.xplane.pb.partial");
    for path in [&stale, &live, &other] {
        std::fs::write(path, b"left by a killed run").unwrap();
    }
    cli()
        .args(["merge", "-q", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(dir.path().join("m.xplane.pb"))
        .assert()
        .success();
    assert!(!stale.exists(), "the dead process's temporary is removed");
    assert!(live.exists(), "a live process's temporary is kept");
    assert!(other.exists(), "names not ours are kept");
}
