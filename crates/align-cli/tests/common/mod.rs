//! Helpers shared by the command-line tests.

use assert_cmd::Command;

/// The `align-cli` binary under test.
pub fn cli() -> Command {
    assert_cmd::cargo_bin_cmd!("align-cli")
}

/// The folder of a recorded PyTorch run under `fixtures/kineto-gloo`.
#[allow(dead_code)] // not every test file reads PyTorch runs
pub fn kineto_run(run: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo")
        .join(run)
}

/// The rank traces (`*.pt.trace.json.gz`) in `dir`, sorted by name.
#[allow(dead_code)] // not every test file reads PyTorch runs
pub fn kineto_ranks(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .collect();
    files.sort();
    files
}

/// A folder with a small synthetic 3-node run under `run/` (`demo --out`).
#[allow(dead_code)] // not every test file needs a run
pub fn demo_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    cli()
        .args([
            "demo", "-q", "--nodes", "3", "--steps", "120", "--seed", "7", "--out",
        ])
        .arg(dir.path())
        .assert()
        .success()
        .stdout("");
    dir
}

/// `align-cli score --json --truth TRUTH [extra] TRACES…`, which must
/// succeed, parsed.
#[allow(dead_code)] // not every test file scores
pub fn score_json(
    truth: &std::path::Path,
    extra: &[&str],
    traces: impl IntoIterator<Item = std::path::PathBuf>,
) -> serde_json::Value {
    let out = cli()
        .args(["score", "--json", "--truth"])
        .arg(truth)
        .args(extra)
        .args(traces)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Add `by_ns` to every probe offset of `node` in the run's offsets file.
#[allow(dead_code)] // not every test file corrupts probes
pub fn corrupt_probes(run: &std::path::Path, node: u64, by_ns: f64) {
    let path = run.join("round_offsets.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
        if row.get("meta").is_none() && row["node_id"] == node {
            row["offset_ns"] = (row["offset_ns"].as_f64().unwrap() + by_ns).into();
        }
        out += &format!("{row}\n");
    }
    std::fs::write(&path, out).unwrap();
}

/// Write a gzip bomb to `path`: a PyTorch trace's object holding 300 MiB of
/// spaces, about 300 KB compressed.
#[allow(dead_code)] // not every test file reads a bomb
pub fn write_gzip_bomb(path: &std::path::Path) {
    let made = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{{ printf '{{\"traceEvents\": [], \"x\": \"'; head -c 314572800 /dev/zero | tr '\\0' ' '; printf '\"}}'; }} | gzip -1 > '{}'",
            path.display()
        ))
        .status()
        .unwrap();
    assert!(made.success());
    assert!(std::fs::metadata(path).unwrap().len() < 4 << 20);
}
