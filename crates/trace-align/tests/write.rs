//! `RunFiles::write`, the one entry point: every input format into every
//! merged output through one call, an export from memory equal to the
//! merge exported from disk, and nothing but the output and its summary
//! left behind.

use std::path::{Path, PathBuf};

use collective_check::NodeSource;
use trace_align::{
    CORRECTION_COUNTER, CORRECTION_SAMPLES, Output, OutputKind, OutputLayout, RunError, RunFiles,
    RunSettings,
};

fn fixture(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(run)
}

/// The files in `dir`, sorted by name.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // The record of this tool's outputs is not an output.
        .filter(|n| n != safe_temp::RECORD_FILE)
        .collect();
    names.sort();
    names
}

/// `run` merged into one XSpace, then exported from that file with the
/// merge's check and the correction counters: what `merge -o x.pftrace`
/// wrote before the export streamed from the merge.
fn merged_then_exported(run: &RunFiles, dir: &Path, name: &str) -> Vec<u8> {
    let merged = dir.join("merged.xplane.pb");
    let outcome = run
        .write(
            &Output::from_path(&merged).unwrap(),
            &RunSettings::default(),
        )
        .unwrap();
    let report = outcome.merge.as_ref().unwrap();
    let plan = run.plan(&Default::default()).unwrap();
    let start = i64::try_from(report.session_start_ns).unwrap();
    let stop = i64::try_from(report.session_stop_ns.unwrap()).unwrap();
    let mut options = perfetto_export::Options::default();
    options.counters = plan
        .correction_curves(start, stop, CORRECTION_SAMPLES)
        .unwrap()
        .into_iter()
        .map(|c| perfetto_export::NodeCounter::new(c.node, CORRECTION_COUNTER, c.points).unwrap())
        .collect();
    options.collectives = outcome.after.clone();
    let bytes = xplane_proto::FileBytes::open(&merged).unwrap();
    let input = perfetto_export::Input {
        bytes: &bytes,
        path: &merged,
        node: NodeSource::PlaneStat,
    };
    let out = dir.join(name);
    perfetto_export::export_file_with(&[input], &out, &options).unwrap();
    std::fs::read(out).unwrap()
}

#[test]
fn an_export_streamed_from_the_merge_equals_the_merge_exported_from_disk() {
    for (run, name) in [
        ("jax-cpu/n4_shardmap_psum_50steps", "run.pftrace"),
        ("jax-cpu/n2x2dev_jit_allreduce_50steps", "run.json.gz"),
    ] {
        let files = RunFiles::discover(fixture(run)).unwrap();
        let reference = tempfile::tempdir().unwrap();
        let expected = merged_then_exported(&files, reference.path(), name);

        let dir = tempfile::tempdir().unwrap();
        let output = Output::from_path(dir.path().join(name)).unwrap();
        let outcome = files.write(&output, &RunSettings::default()).unwrap();
        assert!(
            std::fs::read(output.path()).unwrap() == expected,
            "{run}: the streamed {name} differs from the merge exported from disk"
        );
        let export = outcome.export.as_ref().unwrap();
        assert!(export.slices > 0 && export.collective_flows > 0, "{run}");
        assert_eq!(
            export.counter_points,
            (files.nodes.len() * CORRECTION_SAMPLES) as u64
        );
        assert_eq!(outcome.after.unwrap().summary.violations, 0, "{run}");
        // No merged XSpace was left on disk: the output and its summary.
        assert_eq!(
            listing(dir.path()),
            [name.to_owned(), format!("{name}.metadata.json")],
            "{run}"
        );
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(outcome.summary.unwrap()).unwrap()).unwrap();
        assert_eq!(summary["output"], output.path().display().to_string());
    }
}

#[test]
fn a_pytorch_run_and_an_xspace_run_go_through_the_same_call() {
    for run in [
        "kineto-gloo/n2_gloo_100steps",
        "jax-cpu/n2_shardmap_psum_50steps",
    ] {
        let files = RunFiles::discover(fixture(run)).unwrap();
        for name in ["run.pftrace", "run.json", "run.xplane.pb"] {
            let dir = tempfile::tempdir().unwrap();
            let output = Output::from_path(dir.path().join(name)).unwrap();
            let outcome = files.write(&output, &RunSettings::default()).unwrap();
            assert_eq!(outcome.output, output.path(), "{run} -> {name}");
            let (before, after) = (outcome.before.unwrap(), outcome.after.unwrap());
            assert!(before.summary.counts.checked > 0, "{run} -> {name}");
            assert_eq!(after.summary.violations, 0, "{run} -> {name}");
            assert!(std::fs::metadata(output.path()).unwrap().len() > 0);
            let pytorch = run.starts_with("kineto");
            assert_eq!(outcome.kineto.is_some(), pytorch, "{run} -> {name}");
            assert_eq!(outcome.merge.is_some(), !pytorch, "{run} -> {name}");
            // A Perfetto trace is exported from XSpace, whatever the input;
            // a PyTorch run merges into JSON as JSON.
            let exported = match output.kind() {
                OutputKind::Export(perfetto_export::Format::ChromeJson { .. }) => !pytorch,
                OutputKind::Export(_) => true,
                _ => false,
            };
            assert_eq!(outcome.export.is_some(), exported, "{run} -> {name}");
        }
    }
}

#[test]
fn a_failed_export_leaves_nothing_behind() {
    let files = RunFiles::discover(fixture("jax-cpu/n2_shardmap_psum_50steps")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A folder where the export's summary goes: the export is written and
    // dropped, and nothing appears.
    std::fs::create_dir(dir.path().join("run.pftrace.metadata.json")).unwrap();
    let output = Output::from_path(dir.path().join("run.pftrace")).unwrap();
    assert!(files.write(&output, &RunSettings::default()).is_err());
    assert_eq!(listing(dir.path()), ["run.pftrace.metadata.json"]);
}

#[test]
fn an_output_of_no_known_format_is_refused_by_name() {
    let err = Output::from_path("run.txt").unwrap_err();
    assert!(matches!(err, RunError::OutputFormat { .. }), "{err:?}");
    assert!(err.to_string().contains(".pftrace"), "{err}");
}

#[test]
fn a_repair_of_a_pytorch_run_is_refused() {
    let files = RunFiles::discover(fixture("kineto-gloo/n2_gloo_100steps")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = RunSettings::default();
    settings.clocks.repair = Some(Default::default());
    let output = Output::from_path(dir.path().join("run.pftrace")).unwrap();
    let err = files.write(&output, &settings).unwrap_err();
    assert!(matches!(err, RunError::KinetoRepair), "{err:?}");
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn every_node_written_on_its_own_goes_through_the_same_call() {
    for run in [
        "kineto-gloo/n2_gloo_100steps",
        "jax-cpu/n2_shardmap_psum_50steps",
    ] {
        let files = RunFiles::discover(fixture(run)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("aligned");
        let output = Output::each_node(&out, OutputLayout::SameNames);
        let outcome = files.write(&output, &RunSettings::default()).unwrap();
        assert_eq!(outcome.output, out, "{run}");
        assert_eq!(outcome.after.unwrap().summary.violations, 0, "{run}");
        // One file per node, under its input's name, and nothing else.
        let written: Vec<String> = outcome
            .outputs
            .values()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let inputs: Vec<String> = files
            .nodes
            .values()
            .map(|n| n.trace.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(written, inputs, "{run}");
        assert_eq!(listing(&out), inputs, "{run}");
        let pytorch = run.starts_with("kineto");
        assert_eq!(
            outcome.kineto.map_or(0, |k| k.ranks.len()),
            if pytorch { 2 } else { 0 },
            "{run}"
        );
        assert_eq!(outcome.nodes.len(), if pytorch { 0 } else { 2 }, "{run}");
    }
}

#[test]
fn an_xprof_folder_of_a_pytorch_run_is_refused_before_anything_is_written() {
    let files = RunFiles::discover(fixture("kineto-gloo/n2_gloo_100steps")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let layout = OutputLayout::xprof("run").unwrap();
    let output = Output::each_node(dir.path().join("logs"), layout);
    let err = files.write(&output, &RunSettings::default()).unwrap_err();
    assert!(matches!(err, RunError::XprofForKineto { .. }), "{err:?}");
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn a_merge_into_a_folder_is_refused() {
    let files = RunFiles::discover(fixture("jax-cpu/n2_shardmap_psum_50steps")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = Output::each_node(dir.path().join("aligned"), OutputLayout::SameNames);
    let err = files
        .merge_checked(
            &Default::default(),
            &Default::default(),
            &output,
            &Default::default(),
            |_| {},
        )
        .unwrap_err();
    assert!(matches!(err, RunError::OutputFormat { .. }), "{err:?}");
    assert!(listing(dir.path()).is_empty());
}
