//! The recorded gloo runs of `fixtures/kineto-gloo`.

use std::path::PathBuf;

/// The rank traces of recorded run `name`, in rank order.
pub fn run(name: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .collect();
    files.sort();
    files
}
