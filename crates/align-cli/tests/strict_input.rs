//! One strictness: bytes that `inspect` refuses are refused by every
//! command, with the same message (file, plane/line/event, byte offset),
//! even where a command would only copy them (event stats).

use crate::common;

use std::path::{Path, PathBuf};

use common::cli;
use xplane_proto::prost::Message as _;
use xplane_proto::{XSpace, XStat, x_stat};

const RUN: &str = "n2_shardmap_psum_50steps";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu")
        .join(RUN)
        .join(name)
}

/// A copy of the run whose rank 1 has a string stat on the first event of
/// its first host line, with the stat's key byte made an invalid wire type:
/// a stat no command reads, only copies.
fn run_with_bad_stat(dir: &Path) -> (PathBuf, usize) {
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(fixture("rank0.xplane.pb"), run.join("rank0.xplane.pb")).unwrap();
    let bytes = std::fs::read(fixture("rank1.xplane.pb")).unwrap();
    let mut space = XSpace::decode(bytes.as_slice()).unwrap();
    let host = space
        .planes
        .iter_mut()
        .find(|p| p.name == "/host:CPU")
        .unwrap();
    let stat_id = *host.stat_metadata.keys().next().unwrap();
    host.lines[0].events[0].stats.push(XStat {
        metadata_id: stat_id,
        value: Some(x_stat::Value::StrValue("MARKER-MARKER".into())),
    });
    let mut bytes = space.encode_to_vec();
    let at = bytes
        .windows(13)
        .position(|w| w == b"MARKER-MARKER")
        .unwrap()
        - 2;
    assert_eq!(bytes[at], 0x2a);
    bytes[at] = 0x2f;
    std::fs::write(run.join("rank1.xplane.pb"), &bytes).unwrap();
    (run, at)
}

/// The lines of stderr after `error: `/`caused by: `.
fn causes(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| {
            l.strip_prefix("error: ")
                .or_else(|| l.strip_prefix("caused by: "))
                .unwrap_or(l)
                .to_owned()
        })
        .collect()
}

#[test]
fn a_corrupt_copied_stat_is_refused_by_every_command_with_inspects_message() {
    let dir = tempfile::tempdir().unwrap();
    let (run, at) = run_with_bad_stat(dir.path());
    let trace = run.join("rank1.xplane.pb");
    let inspect = cli().arg("inspect").arg(&trace).assert().code(2);
    let expected = causes(&inspect.get_output().stderr)[1..].to_vec();
    assert_eq!(
        expected,
        [
            format!(
                "{}: not a valid XSpace protobuf: plane 1 \"/host:CPU\" line 0 event 0",
                trace.display()
            ),
            format!("invalid wire type 7 in Stat at byte {at}"),
        ]
    );
    let out = dir.path().join("out");
    // `merge` refuses a missing output folder before reading: the folder
    // exists, so the input's own error is what each command meets.
    std::fs::create_dir(&out).unwrap();
    let runs: [Vec<std::ffi::OsString>; 4] = [
        vec![
            "validate".into(),
            run.join("rank0.xplane.pb").into(),
            trace.clone().into(),
        ],
        vec![
            "align".into(),
            "--run-dir".into(),
            run.clone().into(),
            "--out-dir".into(),
            out.join("aligned").into(),
        ],
        vec![
            "merge".into(),
            "--run-dir".into(),
            run.clone().into(),
            "-o".into(),
            out.join("combined.xplane.pb").into(),
        ],
        vec![
            "export".into(),
            trace.clone().into(),
            "-o".into(),
            dir.path().join("rank1.pftrace").into(),
        ],
    ];
    for args in runs {
        let refused = cli().args(&args).assert().code(2);
        let got = causes(&refused.get_output().stderr);
        assert!(
            got.ends_with(&expected),
            "{:?}: {got:?} does not end with {expected:?}",
            args[0]
        );
    }
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    assert!(!dir.path().join("rank1.pftrace").exists());
}

/// A top-level field that is not XSpace's (a plane's key turned into field
/// 5): a view would skip it as unknown, losing the plane; every command
/// refuses it as `inspect` does.
#[test]
fn an_unknown_top_level_field_is_refused_by_validate_align_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(fixture("rank0.xplane.pb"), run.join("rank0.xplane.pb")).unwrap();
    let mut bytes = std::fs::read(fixture("rank1.xplane.pb")).unwrap();
    // Skip the first top-level field; the second one's key becomes field 5.
    assert_eq!(bytes[0], 0x0a);
    let (mut len, mut i, mut shift) = (0usize, 1, 0);
    loop {
        len |= ((bytes[i] & 0x7f) as usize) << shift;
        shift += 7;
        i += 1;
        if bytes[i - 1] < 0x80 {
            break;
        }
    }
    let second = i + len;
    assert_eq!(bytes[second], 0x0a);
    bytes[second] = 0x2a;
    std::fs::write(run.join("rank1.xplane.pb"), &bytes).unwrap();
    let trace = run.join("rank1.xplane.pb");
    let inspect = cli().arg("inspect").arg(&trace).assert().code(2);
    let expected = causes(&inspect.get_output().stderr)[1..].to_vec();
    assert!(
        expected[1].contains(&format!("at byte {second}")),
        "{expected:?}"
    );
    let validate = cli()
        .arg("validate")
        .arg(run.join("rank0.xplane.pb"))
        .arg(&trace)
        .assert()
        .code(2);
    assert!(causes(&validate.get_output().stderr).ends_with(&expected));
    let out = dir.path().join("out");
    // `merge` refuses a missing output folder before reading: the folder
    // exists, so the input's own error is what each command meets.
    std::fs::create_dir(&out).unwrap();
    for args in [
        vec!["align", "--run-dir", run.to_str().unwrap(), "--out-dir"],
        vec!["merge", "--run-dir", run.to_str().unwrap(), "-o"],
    ] {
        let target = out.join(format!("{}.xplane.pb", args[0]));
        let refused = cli().args(&args).arg(&target).assert().code(2);
        let got = causes(&refused.get_output().stderr);
        assert!(got.ends_with(&expected), "{got:?} vs {expected:?}");
    }
}
