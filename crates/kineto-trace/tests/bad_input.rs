//! Broken inputs give one clear error naming the file and the byte, and
//! nothing is written.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use kineto_trace::*;

fn fixture_text() -> Vec<u8> {
    gunzip(&fixture("n2_gloo_100steps")[0])
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Open and parse, then read every event and retime into `dir/out`; the error.
fn fail(path: &Path) -> Error {
    let out = path.with_file_name("out.pt.trace.json");
    let result = TraceFile::open(path).and_then(|f| retime_file(&f, &out, &identity, &()));
    let err = result.expect_err("bad input must fail");
    assert!(!out.exists(), "nothing written on error");
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(left, [path.to_path_buf()], "no temporary file left");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    err
}

#[test]
fn truncated_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let gz = std::fs::read(&fixture("n2_gloo_100steps")[0]).unwrap();
    let p = write(dir.path(), "rank0.pt.trace.json.gz", &gz[..gz.len() / 2]);
    match fail(&p) {
        Error::Source(xplane_proto::Error::Gzip { offset, .. }) => assert!(offset > 0),
        e => panic!("{e}"),
    }
}

#[test]
fn gz_name_without_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "rank0.pt.trace.json.gz",
        b"{\"traceEvents\": []}",
    );
    assert!(matches!(
        fail(&p),
        Error::Source(xplane_proto::Error::NotGzip { .. })
    ));
}

#[test]
fn invalid_json_names_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = fixture_text();
    // Cut a colon out of an event in the middle of the file: the error is at
    // the number found where the colon should be (`"dur"  2983.550`).
    let at = find_all(&text, b"\"dur\": ")[1000] + 5;
    text[at] = b' ';
    let p = write(dir.path(), "rank0.pt.trace.json", &text);
    match fail(&p) {
        Error::Json {
            offset, expected, ..
        } => {
            assert_eq!(offset, at + 2);
            assert_eq!(expected, "':' after a key");
        }
        e => panic!("{e}"),
    }
    assert!(
        fail(&p)
            .to_string()
            .contains(&format!("invalid JSON at byte {}", at + 2))
    );
}

#[test]
fn truncated_json() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text();
    let p = write(dir.path(), "rank0.pt.trace.json", &text[..text.len() / 3]);
    match fail(&p) {
        Error::Json { offset, .. } => assert_eq!(offset, text.len() / 3),
        e => panic!("{e}"),
    }
}

#[test]
fn ts_that_is_not_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text();
    let at = find_all(&text, b"\"ts\": ")[2000] + 6;
    let end = at + text[at..].iter().position(|c| *c == b',').unwrap();
    let mut bad = text[..at].to_vec();
    bad.extend_from_slice(b"\"soon\"");
    bad.extend_from_slice(&text[end..]);
    let p = write(dir.path(), "rank0.pt.trace.json", &bad);
    match fail(&p) {
        Error::TimeNotNumber { offset, field, .. } => assert_eq!((offset, field), (at, "ts")),
        e => panic!("{e}"),
    }
}

/// Regression: an event of a real trace given a second `"ts"` (260 s
/// later) moved its rank by 260 s with no word; now the reader stops at the
/// second key.
#[test]
fn a_duplicate_ts_names_file_and_byte() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text();
    let at = find_all(&text, b"\"ts\": ")[2000];
    let mut bad = text[..at].to_vec();
    bad.extend_from_slice(b"\"ts\": 260000000.000, ");
    bad.extend_from_slice(&text[at..]);
    let p = write(dir.path(), "rank0.pt.trace.json", &bad);
    let second = at + b"\"ts\": 260000000.000, ".len();
    match fail(&p) {
        Error::DuplicateKey { offset, key, .. } => {
            assert_eq!((offset, key.as_str()), (second, "ts"))
        }
        e => panic!("{e}"),
    }
}

#[test]
fn missing_trace_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = fixture_text();
    let at = find_all(&text, b"\"traceEvents\"")[0];
    text[at + 11] = b'z';
    let p = write(dir.path(), "rank0.pt.trace.json", &text);
    assert!(matches!(fail(&p), Error::MissingTraceEvents { .. }));
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "rank0.pt.trace.json", b"");
    assert!(matches!(fail(&p), Error::Json { offset: 0, .. }));
}

/// Found by fuzzing: a file that ends after `"traceEvents":` (and white
/// space) is an error naming the file, not an index out of bounds.
#[test]
fn file_ending_after_the_events_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "cut.pt.trace.json",
        b"{\r\r \"traceEvents\":\r\r\n",
    );
    let err = fail(&path);
    assert!(matches!(err, Error::Json { .. }), "{err:?}");
}

/// A time map that cannot place a time (it would leave 64-bit ns) fails the
/// retiming at that event, and nothing is written.
#[test]
fn map_out_of_range_names_the_event() {
    struct RefuseLate(EpochNs);
    impl TimeMap for RefuseLate {
        fn map(&self, t: EpochNs) -> Option<EpochNs> {
            (t < self.0).then_some(t)
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "rank0.pt.trace.json", &fixture_text());
    let file = TraceFile::open(&p).unwrap();
    let trace = file.parse().unwrap();
    let events: Vec<_> = trace.events().map(|e| e.unwrap()).collect();
    let timed: Vec<_> = events.iter().filter(|e| e.ts.is_some()).collect();
    let middle = timed[timed.len() / 2];
    let cut = trace
        .base()
        .to_epoch(TsNs(middle.ts.as_ref().unwrap().value.ns))
        .unwrap();
    let out = dir.path().join("out.pt.trace.json");
    let err = retime_file(&file, &out, &RefuseLate(cut), &()).unwrap_err();
    match &err {
        Error::MappedOutOfRange { path, offset } => {
            assert_eq!(path, &p);
            assert!(*offset > 0 && *offset <= middle.offset, "{err}");
        }
        e => panic!("{e}"),
    }
    assert!(!out.exists(), "nothing written on error");
}
