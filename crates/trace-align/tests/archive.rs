//! A Perfetto archive (`Output` `*.tar`) appears complete or not at all:
//! a run that fails to align leaves neither the archive nor the folder its
//! members were staged in.

use trace_align::{Output, OutputKind, RunFiles, RunSettings};

#[test]
fn failed_archive_leaves_no_archive_and_no_staging_folder() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    trace_synth::synthesize(
        &trace_synth::SynthConfig {
            nodes: 2,
            steps: 40,
            ..Default::default()
        },
        &run,
    )
    .unwrap();
    // The run as found, then node 1's trace cut short: found only when its
    // events are read.
    let files = RunFiles::discover(&run).unwrap();
    let trace = run.join("node1.xplane.pb");
    let bytes = std::fs::read(&trace).unwrap();
    std::fs::write(&trace, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let output = Output::from_path(out.join("run.tar")).unwrap();
    assert_eq!(output.kind(), &OutputKind::PerfettoArchive);
    assert!(files.write(&output, &RunSettings::default()).is_err());
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn archive_of_a_synthetic_run_lists_its_members() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    trace_synth::synthesize(
        &trace_synth::SynthConfig {
            nodes: 3,
            steps: 40,
            ..Default::default()
        },
        &run,
    )
    .unwrap();
    let output = Output::from_path(dir.path().join("run.tar")).unwrap();
    let outcome = RunFiles::discover(&run)
        .unwrap()
        .write(&output, &RunSettings::default())
        .unwrap();
    let names: Vec<&str> = outcome.archive.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["node0.pftrace", "node1.pftrace", "node2.pftrace"]);
    assert_eq!(outcome.after.unwrap().summary.violations, 0);
    let size = std::fs::metadata(output.path()).unwrap().len();
    let members: u64 = outcome
        .archive
        .iter()
        .map(|m| m.bytes.div_ceil(512) * 512 + 512)
        .sum();
    assert!(
        size > members,
        "{size} bytes for {members} of members and headers"
    );
    // Nothing else beside it: no staging folder, no per-node files.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["run", "run.tar"]);
}
