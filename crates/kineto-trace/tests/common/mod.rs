//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;

/// The recorded runs under `fixtures/kineto-gloo`, each with its rank files
/// in rank order.
pub fn fixture_runs() -> Vec<(String, Vec<PathBuf>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kineto-gloo");
    let mut runs = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
            .collect();
        files.sort();
        runs.push((
            dir.file_name().unwrap().to_string_lossy().into_owned(),
            files,
        ));
    }
    runs.sort();
    assert!(runs.len() >= 2, "fixture runs under {}", root.display());
    runs
}

pub fn fixture(run: &str) -> Vec<PathBuf> {
    fixture_runs()
        .into_iter()
        .find(|(name, _)| name == run)
        .unwrap_or_else(|| panic!("no fixture run {run}"))
        .1
}

pub fn all_files() -> Vec<PathBuf> {
    fixture_runs().into_iter().flat_map(|(_, f)| f).collect()
}

/// The decompressed text of a gzip file.
pub fn gunzip(path: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Every position of `needle` in `hay`.
pub fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}
