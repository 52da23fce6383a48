//! One verdict per bad input: a negative duration (XSpace or PyTorch), a
//! PyTorch name that is not UTF-8, a node trace without events, one file
//! given as two nodes, and an offsets header whose tracer start is not the
//! trace's are refused alike by `align`, `merge`, `validate`, `report` and
//! `export` (those that read it): exit status 2, the file named, nothing
//! written. Each once passed at least one of them. Every command of the
//! table runs within 2 GB of address space: a bad input is an exit 2, never
//! an abort for memory (134) or a panic (101).

use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use common::cli;

/// A real recording copied into `dir/run`: the XSpace two-process JAX run
/// (`rank<N>.xplane.pb`) or the gloo PyTorch run.
fn copy_run(dir: &Path, kineto: bool) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(match kineto {
        true => "../../fixtures/kineto-gloo/n2_gloo_100steps",
        false => "../../fixtures/jax-cpu/n2_shardmap_psum_50steps",
    });
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(".xplane.pb") || name.contains(".pt.trace.json") {
            std::fs::copy(&path, run.join(name)).unwrap();
        }
    }
    run
}

/// The two traces of a copied run, rank 0 first.
fn traces(run: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Rewrite a gzip-compressed PyTorch trace's text with `change`.
fn edit_kineto(path: &Path, change: impl FnOnce(Vec<u8>) -> Vec<u8>) {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    let text = change(text);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    std::fs::write(path, gz.finish().unwrap()).unwrap();
}

/// The byte offset of the first `needle` after the middle of `text`.
fn after_middle(text: &[u8], needle: &[u8]) -> usize {
    let half = text.len() / 2;
    half + text[half..]
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap()
}

/// Every command that reads the run, each writing into `out`: the run
/// folder's commands and the per-trace ones.
fn commands(run: &Path, out: &Path) -> Vec<Vec<std::ffi::OsString>> {
    let traces = traces(run);
    let arg = |p: &Path| p.as_os_str().to_owned();
    let mut all = vec![
        vec![
            "align".into(),
            "--run-dir".into(),
            arg(run),
            "--out-dir".into(),
            arg(&out.join("aligned")),
        ],
        vec![
            "merge".into(),
            "--run-dir".into(),
            arg(run),
            "-o".into(),
            arg(&out.join("m.json.gz")),
        ],
        vec![
            "merge".into(),
            "--run-dir".into(),
            arg(run),
            "-o".into(),
            arg(&out.join("m.xplane.pb")),
        ],
        vec![
            "report".into(),
            "--run-dir".into(),
            arg(run),
            "-o".into(),
            arg(&out.join("r.html")),
        ],
        vec![
            "merge".into(),
            "--run-dir".into(),
            arg(run),
            "-o".into(),
            arg(&out.join("m.pftrace")),
        ],
        vec!["collectives".into(), "--run-dir".into(), arg(run)],
        vec!["export".into(), "-o".into(), arg(&out.join("x.pftrace"))],
        vec!["validate".into(), "--json".into(), arg(&out.join("v.json"))],
    ];
    for cmd in &mut all[6..] {
        cmd.extend(traces.iter().map(|t| arg(t)));
    }
    all
}

/// The command line within 2 GB of address space (`ulimit -v 2000000`).
fn cli_within_2gb() -> assert_cmd::Command {
    let mut bash = assert_cmd::Command::new("bash");
    bash.arg("-c")
        .arg("ulimit -v 2000000; exec \"$0\" \"$@\"")
        .arg(assert_cmd::cargo::cargo_bin!("align-cli"));
    bash
}

/// Run every command within 2 GB of address space; each must exit 2
/// naming `named` (and `what`) and leave `out` empty.
fn refused_by_all(run: &Path, named: &str, what: &str) {
    let out = run.with_file_name("out");
    std::fs::create_dir_all(&out).unwrap();
    for args in commands(run, &out) {
        let assert = cli_within_2gb().args(&args).assert().code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(
            stderr.contains(named) && stderr.contains(what),
            "{args:?}: {stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

#[test]
fn regression_a_negative_xspace_duration_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), false);
    let rank1 = run.join("rank1.xplane.pb");
    let mut space = xplane_proto::FileBytes::open(&rank1)
        .unwrap()
        .decode()
        .unwrap();
    let plane = space
        .planes
        .iter_mut()
        .find(|p| p.name == "/host:CPU")
        .unwrap();
    let line = plane.lines.iter_mut().find(|l| l.events.len() > 2).unwrap();
    line.events[2].duration_ps = -1_000;
    xplane_proto::write_xspace(&rank1, &space).unwrap();
    refused_by_all(&run, "rank1.xplane.pb", "negative duration -1000 ps");
    // The single-node `align` too, before it reads the offsets.
    let out = dir.path().join("out/a.xplane.pb");
    cli()
        .arg("align")
        .arg(&rank1)
        .args(["--offsets", "missing.jsonl", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("negative duration"));
    assert!(!out.exists());
}

#[test]
fn regression_a_negative_kineto_dur_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), true);
    edit_kineto(&run.join("rank1.pt.trace.json.gz"), |mut text| {
        let at = after_middle(&text, b"\"dur\": ") + b"\"dur\": ".len();
        text.insert(at, b'-');
        text
    });
    refused_by_all(&run, "rank1.pt.trace.json.gz", "\"dur\" is negative");
}

/// A gzip bomb in a run (300 MiB of JSON in about 300 KB, once inflated
/// without a limit: 2.96 GB for a 3 MB file, an abort within 4 GB) is
/// refused by every command that reads the run, within 2 GB.
#[test]
fn regression_a_gzip_bomb_as_a_rank_is_refused_by_every_command_within_2gb() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), true);
    let bomb = run.join("rank1.pt.trace.json.gz");
    common::write_gzip_bomb(&bomb);
    refused_by_all(&run, "rank1.pt.trace.json.gz", "decompresses to more than");
}

/// PyTorch events every command once read differently (accepted by
/// `align`, `validate`, `report`, `collectives` and `merge` to PyTorch
/// JSON, refused by `export` and `merge` to XSpace or Perfetto): each case
/// an edit of one event after the middle of rank 1's trace, and the words
/// every command's message must hold.
#[test]
fn regression_pytorch_events_every_command_once_read_differently_are_refused_alike() {
    type Edit = fn(Vec<u8>) -> Vec<u8>;
    /// Remove `"key": <number>` and the comma before it from the event
    /// after the middle that holds `marker` (never the event's first key).
    fn drop_number(mut text: Vec<u8>, marker: &[u8], key: &[u8]) -> Vec<u8> {
        let at = after_middle(&text, marker);
        let open = text[..at].iter().rposition(|&b| b == b'{').unwrap();
        let mut needle = b"\"".to_vec();
        needle.extend_from_slice(key);
        needle.extend_from_slice(b"\": ");
        let found = open
            + (text[open..].windows(needle.len()))
                .position(|w| w == needle)
                .unwrap();
        let from = text[..found].iter().rposition(|&b| b == b',').unwrap();
        let number = found + needle.len();
        let to = number
            + (text[number..].iter())
                .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'-' | b'e'))
                .unwrap();
        text.drain(from..to);
        text
    }
    let cases: [(&str, Edit, &str); 5] = [
        (
            "a complete event without ts",
            |t| drop_number(t, b"\"ph\": \"X\"", b"ts"),
            "has no \"ts\"",
        ),
        (
            "a complete event without dur",
            |t| drop_number(t, b"\"ph\": \"X\"", b"dur"),
            "has no \"dur\"",
        ),
        (
            "a collective without dur",
            |t| drop_number(t, b"\"name\": \"gloo:all_reduce\"", b"dur"),
            "has no \"dur\"",
        ),
        (
            "args that are not an object",
            |mut t| {
                let at = after_middle(&t, b"\"args\": {") + b"\"args\": ".len();
                t.splice(at..at, *b"\"x\", \"was\": ");
                t
            },
            "expected an \"args\" object",
        ),
        (
            "a ts out of range once the base is added",
            |mut t| {
                let at = after_middle(&t, b"\"ts\": ") + b"\"ts\": ".len();
                let len = t[at..]
                    .iter()
                    .position(|b| !matches!(b, b'0'..=b'9' | b'.'))
                    .unwrap();
                t.splice(at..at + len, *b"9200000000000000");
                t
            },
            "\"ts\" is out of range",
        ),
    ];
    for (case, edit, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        let run = copy_run(dir.path(), true);
        edit_kineto(&run.join("rank1.pt.trace.json.gz"), edit);
        eprintln!("case: {case}");
        refused_by_all(&run, "rank1.pt.trace.json.gz", what);
    }
}

#[test]
fn regression_a_kineto_name_that_is_not_utf8_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), true);
    edit_kineto(&run.join("rank0.pt.trace.json.gz"), |mut text| {
        let at = after_middle(&text, b"\"name\": \"") + b"\"name\": \"".len();
        text[at] = 0xff;
        text
    });
    refused_by_all(&run, "rank0.pt.trace.json.gz", "not UTF-8");
}

#[test]
fn regression_a_node_trace_without_events_is_refused_by_report_and_export_too() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), false);
    // A valid XSpace holding one plane `/host:CPU` and no event.
    std::fs::write(run.join("rank1.xplane.pb"), b"\x0a\x0b\x12\x09/host:CPU").unwrap();
    refused_by_all(&run, "rank1.xplane.pb", "holds no events");
}

#[test]
fn regression_one_file_as_two_nodes_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), false);
    let rank1 = run.join("rank1.xplane.pb");
    std::fs::remove_file(&rank1).unwrap();
    std::fs::hard_link(run.join("rank0.xplane.pb"), &rank1).unwrap();
    refused_by_all(&run, "rank1.xplane.pb", "given twice");
    // The same name given again, as `validate` once took it.
    let out = dir.path().join("out/v.json");
    let rank0 = run.join("rank0.xplane.pb");
    cli()
        .arg("validate")
        .arg(&rank0)
        .arg(&rank0)
        .arg(&rank0)
        .args(["--node-ids", "0,1,2", "--json"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("given twice"));
    assert!(!out.exists());
}

#[test]
fn regression_an_offsets_header_start_of_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args(["synth", "-q", "--nodes", "3", "--steps", "100"])
        .arg(&run)
        .assert()
        .success();
    let offsets = run.join("round_offsets.jsonl");
    let text = std::fs::read_to_string(&offsets).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    header["nodes"][1]["start_walltime_ns"] = 0.into();
    std::fs::write(&offsets, format!("{header}\n{rows}")).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let arg = |p: PathBuf| p.into_os_string();
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "merge".into(),
            "--run-dir".into(),
            arg(run.clone()),
            "-o".into(),
            arg(out.join("m.xplane.pb")),
        ],
        vec![
            "align".into(),
            "--run-dir".into(),
            arg(run.clone()),
            "--out-dir".into(),
            arg(out.join("a")),
        ],
        vec![
            "report".into(),
            "--run-dir".into(),
            arg(run.clone()),
            "-o".into(),
            arg(out.join("r.html")),
        ],
        vec![
            "align".into(),
            arg(run.join("node1.xplane.pb")),
            "--offsets".into(),
            arg(offsets.clone()),
            "-o".into(),
            arg(out.join("n1.xplane.pb")),
        ],
    ];
    for args in runs {
        let assert = cli().args(&args).assert().code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        for part in [
            "round_offsets.jsonl",
            "node 1's start_walltime_ns 0",
            "node1.xplane.pb",
        ] {
            assert!(stderr.contains(part), "{args:?}: {stderr}");
        }
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

/// A PyTorch trace whose `distributedInfo.rank` (1) contradicts its file
/// name (`rank3`) was read as rank 1 by `validate` and `export` and as
/// rank 3 by `merge`, `align` and `report` ("node 3: the estimate from the
/// collectives holds no correction for it"): every command now refuses it
/// with one message.
#[test]
fn regression_a_kineto_rank_that_contradicts_its_file_name_is_refused_alike() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path(), true);
    std::fs::rename(
        run.join("rank1.pt.trace.json.gz"),
        run.join("rank3.pt.trace.json.gz"),
    )
    .unwrap();
    let what = "distributedInfo.rank is 1, the file name says rank 3";
    refused_by_all(&run, "rank3.pt.trace.json.gz", what);
    let out = dir.path().join("out");
    let lines: Vec<String> = commands(&run, &out)
        .into_iter()
        .map(|args| {
            let assert = cli().args(&args).assert().code(2);
            let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
            stderr
                .lines()
                .find(|l| l.contains(what))
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(lines.iter().all(|l| *l == lines[0]), "{lines:#?}");
}

/// Where every node fails alike (GPU planes that do not fit a GPU id
/// stride of 2), the message named whichever node's task ended first, a
/// different node from run to run: it is the first node's every time.
#[test]
fn regression_the_error_of_several_failing_nodes_is_the_first_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    cli()
        .args([
            "synth", "-q", "--nodes", "4", "--steps", "20", "--seed", "5",
        ])
        .arg(&run)
        .assert()
        .success();
    for k in 0..6 {
        let out = dir.path().join(format!("m{k}.xplane.pb"));
        let assert = cli()
            .args(["-q", "merge", "--gpu-id-stride", "2", "--run-dir"])
            .arg(&run)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(
            stderr.starts_with("error: placing the planes of node 0"),
            "{stderr}"
        );
        assert!(!out.exists());
    }
}
