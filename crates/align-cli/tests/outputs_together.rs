//! Outputs that belong together appear together or not at all: a merge
//! exported to Perfetto and its summary, every node of `align --run-dir`.
//! On a failure neither is left, nor any temporary.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use xplane_proto::{XStat, XStatMetadata, read_xspace, write_xspace, x_stat};

/// The two-process JAX recording copied into `dir/run`.
fn copy_run(dir: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2_shardmap_psum_50steps");
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    for name in ["rank0.xplane.pb", "rank1.xplane.pb"] {
        std::fs::copy(from.join(name), run.join(name)).unwrap();
    }
    run
}

/// Edit the first event of the first line with events of `trace`'s
/// `/host:CPU` plane.
fn edit_first_event(trace: &Path, edit: impl FnOnce(&mut xplane_proto::XEvent, i64)) {
    let mut space = read_xspace(trace).unwrap();
    let plane = space
        .planes
        .iter_mut()
        .find(|p| p.name == "/host:CPU")
        .unwrap();
    let id = plane.stat_metadata.keys().max().copied().unwrap_or(0) + 1;
    plane.stat_metadata.insert(
        id,
        XStatMetadata {
            id,
            name: "note".into(),
            ..Default::default()
        },
    );
    let line = plane
        .lines
        .iter_mut()
        .find(|l| !l.events.is_empty())
        .unwrap();
    edit(&mut line.events[0], id);
    write_xspace(trace, &space).unwrap();
}

/// The names in `dir`, sorted (temporaries included).
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The summary of `merge -o x.pftrace` was written before the export:
/// an export that failed left `x.pftrace.metadata.json` without its trace.
#[test]
fn regression_a_failed_export_of_a_merge_leaves_no_summary() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    // A compressed string that is not gzip: copied byte for byte by the
    // merge, refused by the export when it reads it as an argument.
    edit_first_event(&run.join("rank1.xplane.pb"), |event, id| {
        event.stats.push(XStat {
            metadata_id: id,
            value: Some(x_stat::Value::CompressedStrValue(b"not gzip".to_vec())),
        })
    });
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for name in ["m.pftrace", "m.json.gz"] {
        cli()
            .args(["merge", "-q", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(out.join(name))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("not gzip-compressed"));
        assert_eq!(names(&out), Vec::<String>::new(), "{name}");
    }
    assert_eq!(names(dir.path()), ["out", "run"]);
}

/// A merge exported to Perfetto writes both files, the summary naming
/// the export.
#[test]
fn a_merge_exported_to_perfetto_writes_its_summary_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let out = dir.path().join("m.pftrace");
    cli()
        .args(["merge", "-q", "--run-dir"])
        .arg(&run)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        names(dir.path()),
        ["m.pftrace", "m.pftrace.metadata.json", "run"]
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("m.pftrace.metadata.json")).unwrap())
            .unwrap();
    assert_eq!(summary["output"], out.display().to_string());
}

/// `align --run-dir` wrote each node as it was aligned: a failure at the
/// last node left the first nodes' traces in the output folder. Now every
/// node is staged and put in place at the end; on a failure nothing new
/// is in the folder (not even the folder itself), and no temporary.
#[test]
fn regression_align_run_dir_failing_at_the_last_node_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    // Found by the alignment's own walk, at the last node.
    edit_first_event(&run.join("rank1.xplane.pb"), |event, _| {
        event.duration_ps = -1000
    });
    // An existing folder may take a run's outputs only while it is empty
    // or holds only this tool's outputs (`nothing_lost.rs`).
    let existing = dir.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    for out in [dir.path().join("new/aligned"), existing.clone()] {
        for layout in ["same-names", "xprof"] {
            cli()
                .args(["align", "-q", "--run-dir"])
                .arg(&run)
                .arg("--out-dir")
                .arg(&out)
                .args(["--layout", layout])
                .assert()
                .code(2)
                .stderr(predicates::str::contains("rank1.xplane.pb"))
                .stderr(predicates::str::contains("negative duration -1000 ps"));
        }
    }
    assert_eq!(names(dir.path()), ["existing", "run"]);
    assert!(names(&existing).is_empty());
    // The intact run writes both nodes.
    let run = copy_run(&dir.path().join("existing"));
    let out = dir.path().join("aligned");
    cli()
        .args(["align", "-q", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        names(&out),
        [safe_temp::RECORD_FILE, "rank0.xplane.pb", "rank1.xplane.pb"]
    );
}

/// A folder that could not be created was reported as "reading" it.
#[test]
fn regression_an_output_folder_that_cannot_be_created_says_creating() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let out = cli()
        .args(["align", "-q", "--run-dir"])
        .arg(&run)
        .arg("--out-dir")
        .arg(file.join("sub"))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with(&format!("error: creating {}\n", file.join("sub").display())),
        "{text}"
    );
    assert!(!text.contains("reading"), "{text}");
}

/// A failed write printed its path on every line of the cause chain
/// ("writing d" / "caused by: d" / "caused by: Not a directory", and
/// `report` twice more): now once, with the I/O error under it.
#[test]
fn regression_a_write_error_names_its_path_once() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let traces = [run.join("rank0.xplane.pb"), run.join("rank1.xplane.pb")];
    let cases: Vec<(Vec<std::ffi::OsString>, PathBuf)> = vec![
        (
            vec![
                "merge".into(),
                "--run-dir".into(),
                run.clone().into(),
                "-o".into(),
            ],
            file.join("m.xplane.pb"),
        ),
        (
            vec![
                "report".into(),
                "--run-dir".into(),
                run.clone().into(),
                "-o".into(),
            ],
            file.join("r.html"),
        ),
        (
            vec![
                "validate".into(),
                traces[0].clone().into(),
                traces[1].clone().into(),
                "--json".into(),
            ],
            file.join("v.json"),
        ),
    ];
    for (args, target) in cases {
        let out = cli()
            .arg("-q")
            .args(&args)
            .arg(&target)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            format!("error: writing {}", target.display()),
            "{text}"
        );
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[1].starts_with("caused by: Not a directory"), "{text}");
    }
}
