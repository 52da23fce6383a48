//! The exact bytes of the outputs, pinned: a change meant to make the
//! export faster must leave every byte as it was. Each output is pinned by
//! its length and FNV-1a hash; when a change of the format is meant, the
//! new values are printed by the failing assertion.

use crate::common;

use std::path::{Path, PathBuf};

use perfetto_export::{Options, Packets, export_file_with};
use trace_synth::{SynthConfig, synthesize};

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Per-node traces: (node id, bytes).
fn node_files(paths: &[PathBuf]) -> Vec<(u32, Vec<u8>)> {
    paths
        .iter()
        .enumerate()
        .map(|(n, p)| (n as u32, std::fs::read(p).unwrap()))
        .collect()
}

/// `(length, hash)` of each output: plain packets, deflated bundles, Chrome JSON.
fn outputs(files: &[(u32, Vec<u8>)]) -> [(usize, u64); 3] {
    let inputs = common::inputs_of(files);
    let dir = tempfile::tempdir().unwrap();
    let mut plain = Options::default();
    plain.packets = Packets::Plain;
    let runs = [
        ("p.pftrace", plain),
        ("d.pftrace", Options::default()),
        ("c.json", Options::default()),
    ];
    runs.map(|(name, options)| {
        let path = dir.path().join(name);
        export_file_with(&inputs, &path, &options).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        (bytes.len(), fnv1a(&bytes))
    })
}

#[test]
fn synthetic_gpu_run_exports_the_pinned_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let config = SynthConfig {
        nodes: 3,
        gpus_per_node: 2,
        steps: 40,
        kernels_per_stream: 20,
        ..SynthConfig::default()
    };
    let run = synthesize(&config, dir.path()).unwrap();
    let got = outputs(&node_files(&run.xplane_paths()));
    // Event packets carry no `sequence_flags` (2 bytes less per event
    // packet, see `sequence.rs`). The Chrome JSON's times count from its
    // `baseTimeNanoseconds` (shorter than absolute epoch µs).
    let want = [
        (1_561_243, 9_679_663_295_102_379_026),
        (651_566, 6_326_057_738_397_694_386),
        (6_724_980, 8_826_814_404_633_701_578),
    ];
    assert_eq!(got, want);
}

#[test]
fn jax_run_exports_the_pinned_bytes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu/n2x2dev_jit_allreduce_50steps");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
        .collect();
    paths.sort();
    let got = outputs(&node_files(&paths));
    let want = [
        (202_200, 2_014_806_115_654_952_204),
        (68_125, 167_098_497_094_236_694),
        (929_907, 12_669_368_048_922_316_376),
    ];
    assert_eq!(got, want);
}
