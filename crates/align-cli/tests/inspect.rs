//! `align-cli inspect`: text and JSON output on a real trace, problems in a
//! hand-built one, and one test per class of unreadable file.

use crate::common;
use common::cli;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use predicates::prelude::*;
use xplane_proto::{
    XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, write_xspace, x_event,
    x_stat,
};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2_shardmap_psum_50steps/rank0.xplane.pb")
}

fn json_of(args: &[&Path]) -> serde_json::Value {
    let out = cli()
        .arg("inspect")
        .arg("--json")
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn text_report_of_a_real_trace() {
    cli()
        .arg("inspect")
        .arg(fixture())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "rank0.xplane.pb: 35884 bytes, 3 planes, 1203 events",
        ))
        .stdout(predicate::str::contains(
            "session start: 2026-11-21T23:22:21.237858896Z (1795303341237858896 ns)",
        ))
        .stdout(predicate::str::contains(
            "plane 1 \"/host:CPU\" (id 0): 3 lines, 1203 events, 0 problems",
        ))
        .stdout(predicate::str::contains(
            "span: 2026-11-21T23:22:21.237869041Z .. 2026-11-21T23:22:21.366463248Z \
             (+0.000010145 s .. +0.128604352 s from session start)",
        ))
        .stdout(predicate::str::contains("hlo_op (100)"))
        .stdout(predicate::str::contains("run_id (150)"))
        .stdout(predicate::str::contains("line 0").not());
}

#[test]
fn verbose_lists_lines_and_quiet_only_planes() {
    cli()
        .args(["inspect", "-v"])
        .arg(fixture())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "line 0 \"python\" (id 2452046185107971321, display id 0): 853 events",
        ));
    let out = cli()
        .args(["inspect", "-q"])
        .arg(fixture())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
}

#[test]
fn json_report_of_a_real_trace() {
    let json = json_of(&[&fixture()]);
    let file = &json["files"][0];
    assert_eq!(file["bytes"], 35884);
    assert_eq!(file["session_start_ns"], 1_795_303_341_237_858_896i64);
    let planes = file["planes"].as_array().unwrap();
    let names: Vec<_> = planes.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["/host:metadata", "/host:CPU", "Task Environment"]);
    let host = &planes[1];
    assert_eq!(host["line_count"], 3);
    assert_eq!(host["event_count"], 1203);
    assert_eq!(host["span"]["start_utc"], "2026-11-21T23:22:21.237869041Z");
    assert_eq!(host["span"]["start_rel_ps"], 10_145_000);
    assert_eq!(host["problems"].as_array().unwrap().len(), 0);
    let stats = host["stats"].as_array().unwrap();
    assert!(
        stats
            .iter()
            .any(|s| s["name"] == "hlo_op" && s["count"] == 100)
    );
    let lines = host["lines"].as_array().unwrap();
    let line_events: u64 = lines
        .iter()
        .map(|l| l["event_count"].as_u64().unwrap())
        .sum();
    assert_eq!(line_events, 1203);
    assert!(planes[0]["span"].is_null());
}

/// One plane with every problem `inspect` knows, and no Task Environment.
/// Stock JAX on a GPU writes XLA's scope range tree as plane stats whose
/// ids name no stat metadata (child id -> parent id): read as the tree, not
/// as 49 dangling stats.
#[test]
fn stock_jax_gpu_scope_range_tree_is_not_a_problem() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real-gpu-machine/jax-gpu-1p/rank0.xplane.pb");
    let report = json_of(&[&path]);
    let planes = report["files"][0]["planes"].as_array().unwrap();
    for plane in planes {
        assert_eq!(plane["problems"], serde_json::json!([]), "{plane}");
    }
    let tree = planes
        .iter()
        .find(|p| p["name"] == "/host:__ScopeRangeCallStack__")
        .unwrap();
    assert_eq!(tree["scope_range_edges"], 50);
    assert_eq!(
        tree["stats"],
        serde_json::json!([{"name": "process_id", "count": 1}])
    );
    // Every other plane says nothing of a tree.
    assert!(
        planes
            .iter()
            .filter(|p| p != &tree)
            .all(|p| p.get("scope_range_edges").is_none())
    );
    cli()
        .arg("inspect")
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("scope range tree: 50 edges"))
        .stdout(predicate::str::contains("dangling").not());
}

fn broken_space() -> XSpace {
    let stat = |metadata_id, value| XStat {
        metadata_id,
        value: Some(value),
    };
    let event = |metadata_id, offset, duration_ps, stats| XEvent {
        metadata_id,
        data: Some(x_event::Data::OffsetPs(offset)),
        duration_ps,
        stats,
    };
    XSpace {
        planes: vec![XPlane {
            id: 7,
            name: "/device:GPU:0".into(),
            lines: vec![XLine {
                id: -3,
                name: "Stream #1".into(),
                timestamp_ns: 1_000,
                events: vec![
                    event(1, 5_000, 100, vec![stat(1, x_stat::Value::RefValue(2))]),
                    event(9, 2_000, 100, vec![stat(5, x_stat::Value::Int64Value(1))]),
                    event(1, 9_000, -40, vec![stat(1, x_stat::Value::RefValue(77))]),
                ],
                ..Default::default()
            }],
            event_metadata: [(
                1,
                XEventMetadata {
                    id: 1,
                    name: "kernel".into(),
                    child_id: vec![1, 12],
                    ..Default::default()
                },
            )]
            .into(),
            stat_metadata: [(1, "hlo_op"), (2, "all-reduce.3")]
                .map(|(id, name)| {
                    let m = XStatMetadata {
                        id,
                        name: name.into(),
                        description: String::new(),
                    };
                    (id, m)
                })
                .into(),
            stats: vec![],
        }],
        ..Default::default()
    }
}

/// `inspect` listed a negative duration as a problem and exited 0, while
/// every other command refuses the file: it still lists every problem,
/// then exits 2 with the other commands' message (file, plane, line,
/// event). The problems no other command refuses stay not fatal.
#[test]
fn regression_problems_are_listed_and_a_negative_duration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.xplane.pb");
    write_xspace(&path, &broken_space()).unwrap();
    let refused = format!(
        "error: {}: plane \"/device:GPU:0\", line 0 (\"Stream #1\"), event 2: negative duration -40 ps",
        path.display()
    );
    let out = cli()
        .args(["inspect", "--json"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(refused.clone()))
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let plane = &json["files"][0]["planes"][0];
    assert!(json["files"][0]["session_start_ns"].is_null());
    let problems: Vec<(String, u64)> = plane["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("dangling_child_id", 1),
        ("dangling_event_metadata", 1),
        ("dangling_ref_value", 1),
        ("dangling_stat_metadata", 1),
        ("negative_duration", 1),
        ("unsorted_line", 1),
    ]
    .map(|(k, n)| (k.to_string(), n));
    assert_eq!(problems, expected);
    // Times without a session start are absolute: 1000 ns + 2000 ps, and
    // the latest end is that of the event with a negative duration.
    assert_eq!(plane["span"]["start_ps"], 1_002_000);
    assert_eq!(plane["span"]["end_ps"], 1_008_960);
    cli()
        .arg("inspect")
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(refused))
        .stdout(predicate::str::contains("3 events, 6 problems"))
        .stdout(predicate::str::contains(
            "problem: dangling_event_metadata x1, first at line 0 (id -3) event 1: metadata_id 9",
        ))
        .stdout(predicate::str::contains(
            "problem: unsorted_line x1, first at line 0 (id -3) event 1: starts before event 0",
        ))
        .stdout(predicate::str::contains(
            "problem: dangling_ref_value x1, first at line 0 (id -3) event 2: ref_value 77",
        ))
        .stdout(predicate::str::contains("session start: none"));
    // Without the negative duration: five problems, listed, exit 0.
    let mut space = broken_space();
    space.planes[0].lines[0].events[2].duration_ps = 40;
    write_xspace(&path, &space).unwrap();
    cli()
        .arg("inspect")
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("3 events, 5 problems"));
}

fn fails_with(path: &Path, messages: &[&str]) {
    let mut assert = cli().arg("inspect").arg(path).assert().code(2);
    let name = path.file_name().unwrap().to_str().unwrap();
    assert = assert.stderr(predicate::str::starts_with(format!(
        "error: cannot inspect {}",
        path.display()
    )));
    assert = assert.stderr(predicate::str::contains(format!(
        "caused by: {}",
        path.display()
    )));
    assert = assert.stderr(predicate::str::contains(name));
    for m in messages {
        assert = assert.stderr(predicate::str::contains(*m));
    }
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(&dir.path().join("absent.xplane.pb"), &["No such file"]);
}

#[test]
fn truncated_file() {
    let bytes = std::fs::read(fixture()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.xplane.pb");
    std::fs::write(&path, &bytes[..20_000]).unwrap();
    fails_with(&path, &["data ends early (truncated file?)", "at byte "]);
}

#[test]
fn not_an_xspace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("readme.xplane.pb");
    std::fs::write(&path, "This is a text file.\n").unwrap();
    fails_with(&path, &["not an XSpace", "at byte 0"]);
}

#[test]
fn bad_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.xplane.pb.gz");
    std::fs::copy(fixture(), &plain).unwrap();
    fails_with(&plain, &["named .gz but not gzip"]);

    let mut gz = gzip_of(&std::fs::read(fixture()).unwrap());
    gz.truncate(gz.len() / 2);
    let cut = dir.path().join("cut.xplane.pb.gz");
    std::fs::write(&cut, &gz).unwrap();
    fails_with(&cut, &["corrupt gzip data"]);
}

/// Gzip through the library's own writer (`write_xspace` on a `.gz` name).
fn gzip_of(bytes: &[u8]) -> Vec<u8> {
    use xplane_proto::prost::Message as _;
    let space = XSpace::decode(bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.xplane.pb.gz");
    write_xspace(&path, &space).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn gzip_file_is_read() {
    let gz = gzip_of(&std::fs::read(fixture()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.xplane.pb.gz");
    std::fs::write(&path, gz).unwrap();
    let json = json_of(&[&path]);
    assert_eq!(json["files"][0]["planes"][1]["event_count"], 1203);
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    cli().arg("inspect").assert().code(2);
    cli().arg("no-such-command").assert().code(2);
    cli().args(["inspect", "--help"]).assert().success();
}

#[test]
fn closed_stdout_pipe_counts_as_success() {
    // Enough output to fill the pipe after the reader has gone.
    let files = vec![fixture(); 400];
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("align-cli"))
        .args(["inspect", "-v"])
        .args(&files)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let _ = std::io::stderr().flush();
}

/// `inspect` printed stat-metadata names (and plane and line names) raw,
/// so escape sequences in a trace reached the terminal (a window title
/// set, the screen cleared) and a U+202E reversed what followed.
#[test]
fn control_characters_in_a_trace_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("escapes.xplane.pb");
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}gpj.exe";
    let mut space = broken_space();
    let plane = &mut space.planes[0];
    plane.lines[0].events.retain(|e| e.duration_ps >= 0);
    plane.name = format!("/device:GPU:0{hostile}");
    plane.lines[0].name = format!("Stream{hostile}");
    plane.stat_metadata.get_mut(&1).unwrap().name = format!("hlo_op{hostile}");
    write_xspace(&path, &space).unwrap();
    let out = cli()
        .args(["inspect", "-v"])
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "raw control characters on stdout: {text:?}"
    );
    assert!(text.contains("hlo_op\\u{1B}]0;owned\\u{7}"), "{text}");
    assert!(text.contains("\\u{202E}gpj.exe"), "{text}");
}
