//! Regression tests of the one output guard (`trace_align::check_output`)
//! every command runs before writing: an output that is an input (any
//! flag's file), a file of the run folder, a new trace in the run folder,
//! a device, FIFO or directory, or a name in a format the command does not
//! write is refused with exit status 2, a message naming it, and nothing
//! written.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::{cli, demo_dir};

/// Every entry of `dir` with its bytes (none for a folder or FIFO).
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let bytes = if p.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            (p, bytes)
        })
        .collect()
}

/// Run `args` in the demo folder `dir`; assert exit status 2, a stderr
/// naming `output` and saying `why`, and the run folder and `dir`
/// unchanged (no file added, replaced or removed).
fn refused(dir: &Path, args: &[&dyn AsRef<OsStr>], output: &Path, why: &str) {
    let run_before = contents(&dir.join("run"));
    let dir_before: Vec<PathBuf> = contents(dir).into_keys().collect();
    let out = cli().current_dir(dir).args(args).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&output.display().to_string()) && stderr.contains(why),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        contents(&dir.join("run")),
        run_before,
        "the run folder changed"
    );
    let dir_after: Vec<PathBuf> = contents(dir).into_keys().collect();
    assert_eq!(dir_after, dir_before, "a file was left beside the run");
}

const OFFSETS: &str = "run/round_offsets.jsonl";

#[test]
fn align_reference_trace_is_an_input() {
    let dir = demo_dir();
    let out = Path::new("run/node0.xplane.pb");
    let args: [&dyn AsRef<OsStr>; 8] = [
        &"align",
        &"run/node1.xplane.pb",
        &"--offsets",
        &OFFSETS,
        &"--reference-trace",
        &"run/node0.xplane.pb",
        &"-o",
        &out,
    ];
    refused(dir.path(), &args, out, "may not replace an input");
}

#[test]
fn align_snapshots_and_offsets_are_inputs() {
    let dir = demo_dir();
    for out in ["run/node1.snapshots.pb", OFFSETS] {
        let args: [&dyn AsRef<OsStr>; 8] = [
            &"align",
            &"run/node1.xplane.pb",
            &"--offsets",
            &OFFSETS,
            &"--snapshots",
            &"run/node1.snapshots.pb",
            &"-o",
            &out,
        ];
        refused(
            dir.path(),
            &args,
            Path::new(out),
            "may not replace an input",
        );
    }
}

#[test]
fn align_over_another_nodes_trace_in_the_run_folder() {
    let dir = demo_dir();
    let out = Path::new("run/node2.xplane.pb");
    let args: [&dyn AsRef<OsStr>; 6] = [
        &"align",
        &"run/node1.xplane.pb",
        &"--offsets",
        &OFFSETS,
        &"-o",
        &out,
    ];
    refused(dir.path(), &args, out, "file of the run folder");
}

#[test]
fn align_new_trace_into_the_run_folder() {
    let dir = demo_dir();
    let out = Path::new("run/node7.xplane.pb");
    let args: [&dyn AsRef<OsStr>; 6] = [
        &"align",
        &"run/node1.xplane.pb",
        &"--offsets",
        &OFFSETS,
        &"-o",
        &out,
    ];
    refused(dir.path(), &args, out, "nor add a trace");
}

#[test]
fn align_run_dir_into_the_run_folder() {
    let dir = demo_dir();
    let args: [&dyn AsRef<OsStr>; 5] = [&"align", &"--run-dir", &"run", &"--out-dir", &"run"];
    refused(
        dir.path(),
        &args,
        Path::new("run/node0.xplane.pb"),
        "may not replace an input",
    );
}

#[test]
fn run_folder_files_no_command_reads() {
    let dir = demo_dir();
    let truth = Path::new("run/truth.bin");
    let merge: [&dyn AsRef<OsStr>; 5] = [&"merge", &"--run-dir", &"run", &"-o", &truth];
    refused(dir.path(), &merge, truth, "file of the run folder");
    let config = Path::new("run/synth_config.json");
    let report: [&dyn AsRef<OsStr>; 5] = [&"report", &"--run-dir", &"run", &"-o", &config];
    refused(dir.path(), &report, config, "file of the run folder");
    let validate: [&dyn AsRef<OsStr>; 6] = [
        &"validate",
        &"--json",
        &"run/truth.json",
        &"run/node0.xplane.pb",
        &"run/node1.xplane.pb",
        &"--max-violations=1000000",
    ];
    // A new report file beside the traces is fine; over a run file it is not.
    cli()
        .current_dir(dir.path())
        .args(validate.iter().map(|a| a.as_ref()))
        .assert()
        .success();
    std::fs::remove_file(dir.path().join("run/truth.json")).unwrap();
    let validate: [&dyn AsRef<OsStr>; 5] = [
        &"validate",
        &"--json",
        &"run/synth_config.json",
        &"run/node0.xplane.pb",
        &"run/node1.xplane.pb",
    ];
    refused(
        dir.path(),
        &validate,
        Path::new("run/synth_config.json"),
        "file of the run folder",
    );
}

#[test]
fn validate_json_over_the_offsets_file() {
    let dir = demo_dir();
    let args: [&dyn AsRef<OsStr>; 5] = [
        &"validate",
        &"--json",
        &OFFSETS,
        &"run/node0.xplane.pb",
        &"run/node1.xplane.pb",
    ];
    refused(
        dir.path(),
        &args,
        Path::new(OFFSETS),
        "file of the run folder",
    );
}

/// `/dev/full` and `/dev/null` stay devices, and no summary appears beside them.
fn assert_still_devices() {
    use std::os::unix::fs::FileTypeExt;
    for dev in ["/dev/full", "/dev/null"] {
        let kind = std::fs::symlink_metadata(dev).unwrap().file_type();
        assert!(kind.is_char_device(), "{dev} is no longer a device");
    }
    assert!(!Path::new("/dev/full.metadata.json").exists());
    assert!(!Path::new("/dev/null.metadata.json").exists());
}

#[test]
fn outputs_onto_devices() {
    let dir = demo_dir();
    for dev in ["/dev/full", "/dev/null"] {
        let dev = Path::new(dev);
        let merge: [&dyn AsRef<OsStr>; 5] = [&"merge", &"--run-dir", &"run", &"-o", &dev];
        refused(dir.path(), &merge, dev, "this is a device");
        let report: [&dyn AsRef<OsStr>; 5] = [&"report", &"--run-dir", &"run", &"-o", &dev];
        refused(dir.path(), &report, dev, "this is a device");
        let align: [&dyn AsRef<OsStr>; 6] = [
            &"align",
            &"run/node1.xplane.pb",
            &"--offsets",
            &OFFSETS,
            &"-o",
            &dev,
        ];
        refused(dir.path(), &align, dev, "this is a device");
        let validate: [&dyn AsRef<OsStr>; 5] = [
            &"validate",
            &"--json",
            &dev,
            &"run/node0.xplane.pb",
            &"run/node1.xplane.pb",
        ];
        refused(dir.path(), &validate, dev, "this is a device");
        let export: [&dyn AsRef<OsStr>; 4] = [&"export", &"run/node0.xplane.pb", &"-o", &dev];
        refused(dir.path(), &export, dev, "this is a device");
        assert_still_devices();
    }
}

#[test]
fn outputs_onto_a_fifo_and_a_directory() {
    let dir = demo_dir();
    let fifo = dir.path().join("pipe.xplane.pb");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let merge: [&dyn AsRef<OsStr>; 5] = [&"merge", &"--run-dir", &"run", &"-o", &fifo];
    refused(dir.path(), &merge, &fifo, "this is a FIFO");
    let folder = dir.path().join("folder.json");
    std::fs::create_dir(&folder).unwrap();
    let merge: [&dyn AsRef<OsStr>; 5] = [&"merge", &"--run-dir", &"run", &"-o", &folder];
    refused(dir.path(), &merge, &folder, "this is a directory");
}

#[test]
fn output_name_in_a_format_the_command_does_not_write() {
    let dir = demo_dir();
    let txt = Path::new("foo.txt");
    let merge: [&dyn AsRef<OsStr>; 5] = [&"merge", &"--run-dir", &"run", &"-o", &txt];
    refused(dir.path(), &merge, txt, "must end in a format");
    let report: [&dyn AsRef<OsStr>; 5] = [&"report", &"--run-dir", &"run", &"-o", &txt];
    refused(dir.path(), &report, txt, "must end in a format");
    let align: [&dyn AsRef<OsStr>; 6] = [
        &"align",
        &"run/node1.xplane.pb",
        &"--offsets",
        &OFFSETS,
        &"-o",
        &txt,
    ];
    refused(dir.path(), &align, txt, "must end in a format");
    let csv = Path::new("report.json");
    let validate: [&dyn AsRef<OsStr>; 5] = [
        &"validate",
        &"--csv",
        &csv,
        &"run/node0.xplane.pb",
        &"run/node1.xplane.pb",
    ];
    refused(dir.path(), &validate, csv, "must end in a format");
}

/// A Perfetto or Chrome JSON merge is first merged as XSpace into a
/// temporary folder beside the output; in a run folder that temporary is
/// not taken for one of the run's files, and nothing of it stays.
#[test]
fn merge_export_into_the_run_folder() {
    let dir = demo_dir();
    let before: Vec<PathBuf> = contents(&dir.path().join("run")).into_keys().collect();
    cli()
        .current_dir(dir.path())
        .args([
            "merge",
            "-q",
            "--run-dir",
            "run",
            "-o",
            "run/merged.pftrace",
        ])
        .assert()
        .success();
    let after: Vec<PathBuf> = contents(&dir.path().join("run")).into_keys().collect();
    let added: Vec<&PathBuf> = after.iter().filter(|p| !before.contains(p)).collect();
    let names: Vec<String> = added
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["merged.pftrace", "merged.pftrace.metadata.json"]);
}
