//! Temporaries: removed on drop and failed persist, listed while live,
//! stale ones swept only when their process is gone.

use std::path::Path;
use std::process::Command;

use safe_temp::{TempDir, TempFile, TempName, sweep_stale, this_host};

/// The id of a process that has ended.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn plant(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, b"partial").unwrap();
    path
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn only_our_temporaries_of_dead_local_processes_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let host = this_host();
    let dead = dead_pid();
    let me = std::process::id();
    let stale = plant(
        dir.path(),
        &format!(".m.xplane.pb~ta~{host}~{dead}~Ab12cD.tmp"),
    );
    let stale_dir = dir
        .path()
        .join(format!(".demo~ta~{host}~{dead}~Zz99Yy.tmp"));
    std::fs::create_dir(&stale_dir).unwrap();
    plant(&stale_dir, "node0.xplane.pb");
    let live = plant(
        dir.path(),
        &format!(".m.xplane.pb~ta~{host}~{me}~Ab12cD.tmp"),
    );
    let other_host = plant(
        dir.path(),
        &format!(".m.xplane.pb~ta~{host}x~{dead}~Ab12cD.tmp"),
    );
    let not_ours = [
        plant(dir.path(), &format!(".m.xplane.pb.{dead}.tmp")),
        plant(
            dir.path(),
            &format!("m.xplane.pb~ta~{host}~{dead}~Ab12cD.tmp"),
        ),
        plant(dir.path(), "node1.xplane.pb"),
    ];

    let mut removed = sweep_stale(dir.path());
    removed.sort();
    let mut expected = vec![stale.clone(), stale_dir.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    assert!(!stale.exists() && !stale_dir.exists());
    assert!(live.exists() && other_host.exists());
    assert!(not_ours.iter().all(|p| p.exists()));
}

#[test]
fn the_first_temporary_in_a_folder_sweeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let stale = plant(
        dir.path(),
        &format!(".x~ta~{}~{}~Ab12cD.tmp", this_host(), dead_pid()),
    );
    let tmp = TempFile::in_dir(dir.path(), "x").unwrap();
    assert!(!stale.exists());
    assert_eq!(
        TempName::parse(tmp.path().file_name().unwrap())
            .unwrap()
            .pid,
        std::process::id()
    );
}

#[test]
fn a_dropped_or_failed_temporary_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.json");
    drop(TempFile::beside(&target).unwrap());
    assert!(names(dir.path()).is_empty());

    // Persisting over a non-empty folder fails; the temporary goes.
    std::fs::create_dir(&target).unwrap();
    plant(&target, "keep");
    let err = TempFile::beside(&target)
        .unwrap()
        .persist(&target)
        .unwrap_err();
    assert!(matches!(err, safe_temp::Error::Persist { .. }), "{err}");
    assert_eq!(names(dir.path()), ["out.json"]);

    let tmp = TempDir::in_dir(dir.path(), "work").unwrap();
    plant(tmp.path(), "inside");
    drop(tmp);
    assert_eq!(names(dir.path()), ["out.json"]);
}

#[test]
fn a_root_is_not_a_target() {
    assert!(matches!(
        TempFile::beside(Path::new("/")),
        Err(safe_temp::Error::NotAFileName { .. })
    ));
}

/// The child half of
/// `two_processes_writing_one_pair_of_outputs_leave_one_pair_whole`: with
/// `SAFE_TEMP_WRITER` set, put this process's id into both outputs of the
/// folder `SAFE_TEMP_DIR` together, once the start file appears.
#[test]
fn writer_child() {
    let (Ok(dir), Ok(go)) = (
        std::env::var("SAFE_TEMP_DIR"),
        std::env::var("SAFE_TEMP_GO"),
    ) else {
        return;
    };
    let dir = Path::new(&dir);
    let me = std::process::id().to_string();
    let targets = [dir.join("m.pftrace"), dir.join("m.pftrace.metadata.json")];
    let files: Vec<_> = targets
        .iter()
        .map(|t| {
            let mut tmp = TempFile::beside(t).unwrap();
            std::io::Write::write_all(&mut tmp, me.as_bytes()).unwrap();
            (tmp, t.clone())
        })
        .collect();
    while !Path::new(&go).exists() {
        std::hint::spin_loop();
    }
    safe_temp::persist_together(files).unwrap();
}

/// Two processes writing one output (a trace and its summary) once left
/// the trace of one and the summary of the other (15 of 80 tries).
#[test]
fn two_processes_writing_one_pair_of_outputs_leave_one_pair_whole() {
    let exe = std::env::current_exe().unwrap();
    let mut mixed = 0;
    for round in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        let go = dir.path().join(format!("go{round}"));
        let children: Vec<_> = (0..3)
            .map(|_| {
                Command::new(&exe)
                    .args([
                        "--exact",
                        "temps::writer_child",
                        "--test-threads",
                        "1",
                        "-q",
                    ])
                    .env("SAFE_TEMP_DIR", dir.path())
                    .env("SAFE_TEMP_GO", &go)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::fs::write(&go, b"").unwrap();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let trace = std::fs::read(dir.path().join("m.pftrace")).unwrap();
        let summary = std::fs::read(dir.path().join("m.pftrace.metadata.json")).unwrap();
        mixed += usize::from(trace != summary);
    }
    assert_eq!(mixed, 0, "{mixed} of 60 rounds mixed two writers' outputs");
}
