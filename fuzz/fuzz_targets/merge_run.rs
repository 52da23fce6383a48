//! Small valid runs through the merge: an arbitrary simulated cluster
//! (nodes, GPUs, steps, kernels, clock offsets and drifts, probe noise,
//! reference node) is written, planned and merged. The merge must succeed,
//! keep every event of every node, and write nothing but its output and
//! summary; the run folder is left as it was.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use alignment_core::AlignOptions;
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use trace_align::{MergeSettings, RunFiles};
use trace_synth::{SynthConfig, synthesize};
use xplane_proto::FileBytes;

#[derive(Debug, Arbitrary)]
struct Run {
    seed: u64,
    nodes: u8,
    gpus: u8,
    steps: u8,
    kernels: u8,
    all_gather: bool,
    reference: u8,
    max_host_offset_us: u16,
    max_host_drift_ppm: u8,
    offset_noise_ns: u16,
    validate: bool,
}

impl Run {
    fn config(&self) -> SynthConfig {
        SynthConfig {
            seed: self.seed,
            nodes: 1 + u32::from(self.nodes % 4),
            gpus_per_node: 1 + u32::from(self.gpus % 2),
            steps: 1 + u32::from(self.steps % 4),
            kernels_per_stream: 1 + u32::from(self.kernels % 4),
            all_gather: self.all_gather,
            max_host_offset_ns: f64::from(self.max_host_offset_us) * 1e3,
            max_host_drift_ppm: f64::from(self.max_host_drift_ppm % 100),
            offset_noise_ns: f64::from(self.offset_noise_ns % 5_000),
            // Runs of a few steps: snapshot pairs and probe rounds often
            // enough that every node has some.
            snapshot_period_ms: 5.0,
            snapshot_first_delay_ms: 1.0,
            probe_window_ms: 50.0,
            probe_processing_ms: [1.0, 5.0],
            ..Default::default()
        }
    }
}

/// Every file of a folder with its bytes' length and content hash.
fn listing(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("listing")
        .map(|e| {
            let e = e.expect("entry");
            let bytes = std::fs::read(e.path()).expect("reading");
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

fn events(path: &Path) -> u64 {
    let file = FileBytes::open(path).expect("opening a trace");
    file.check().expect("a valid trace").events
}

fuzz_target!(|run: Run| {
    let config = run.config();
    let dir = tempfile::tempdir().expect("temp dir");
    let run_dir = dir.path().join("run");
    let synth = synthesize(&config, &run_dir).expect("a valid config synthesizes");
    let before = listing(&run_dir);
    let options = AlignOptions {
        reference_node: alignment_core::NodeId(u32::from(run.reference) % config.nodes),
        ..Default::default()
    };
    let plan = RunFiles::discover(&run_dir)
        .expect("discovering a synthesized run")
        .plan(&options)
        .expect("planning a synthesized run");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).expect("out dir");
    let output = out_dir.join("combined.xplane.pb");
    let settings = MergeSettings {
        validate: run.validate,
        ..Default::default()
    };
    let outcome = plan
        .merge(&output, &settings)
        .expect("merging a synthesized run");

    let input_events: u64 = synth.xplane_paths().iter().map(|p| events(p)).sum();
    assert_eq!(events(&output), input_events, "events lost or added");
    let merge = outcome.merge.as_ref().expect("an XSpace merge's report");
    assert_eq!(merge.events, input_events);
    let written: Vec<String> = listing(&out_dir).into_keys().collect();
    let summary = outcome
        .summary
        .as_ref()
        .expect("an XSpace merge's summary")
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut expected = vec!["combined.xplane.pb".to_owned(), summary];
    expected.sort();
    assert_eq!(
        written, expected,
        "only the output and its summary are written"
    );
    assert!(listing(&run_dir) == before, "the run folder changed");
});
