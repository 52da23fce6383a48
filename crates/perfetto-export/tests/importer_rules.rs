//! The Perfetto output of the real recordings, read back under trace
//! processor's import rules (`importer`): interning and incremental state,
//! the incremental clock, track and thread descriptors, nesting per track,
//! flows and unknown fields, in both packet forms (plain packets and
//! `compressed_packets` bundles). The slices' times must be the inputs'
//! exact ns.

use crate::common;
use crate::importer;

use std::path::{Path, PathBuf};

use collective_check::NodeSource;
use perfetto_export::{Input, Options, Packets, export_file_with};
use prost::Message;
use xplane_proto::XSpace;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// Export `inputs` in both packet forms and read each back; both must give
/// the same import, with `want` as its slices `(begin, end, name)`.
/// `lone`: how many launch/kernel flow ids are on one event only (a
/// launch whose kernel the recording does not hold).
fn check(
    run: &str,
    inputs: &[Input<'_>],
    options: Options,
    mut want: Vec<(i64, i64, String)>,
    lone: usize,
) {
    want.sort();
    let dir = tempfile::tempdir().unwrap();
    let mut seen = None;
    for packets in [Packets::Plain, Packets::Deflated] {
        let mut options = options.clone();
        options.packets = packets;
        let path = dir.path().join("t.pftrace");
        let summary = export_file_with(inputs, &path, &options).unwrap();
        let mut got = importer::import(&std::fs::read(&path).unwrap());
        got.slices.sort();
        assert_eq!(got.slices.len(), want.len(), "{run} {packets:?}: slices");
        assert!(
            got.slices == want,
            "{run} {packets:?}: the slices' exact ns"
        );
        let drawn = got.flows.len() - got.lone_flows.len();
        assert!(
            drawn as u64 >= summary.collective_flows,
            "{run}: collective flows drawn"
        );
        assert_eq!(
            got.lone_flows.len(),
            lone,
            "{run}: flow ids on one event only"
        );
        let figures = (
            got.packets,
            got.event_sequences,
            got.threads,
            got.flows.len(),
            got.instants,
        );
        eprintln!(
            "{run} {packets:?}: {} packets, {} event sequences, {} slices, {} thread tracks, {} flows ({} collective, {} on one event), {} instants",
            got.packets,
            got.event_sequences,
            got.slices.len(),
            got.threads,
            got.flows.len(),
            summary.collective_flows,
            got.lone_flows.len(),
            got.instants
        );
        assert_eq!(got.instants as u64, summary.violations, "{run}");
        if packets == Packets::Plain {
            seen = Some((
                got.event_sequences,
                got.threads,
                got.flows.len(),
                got.instants,
            ));
        } else {
            assert_eq!(
                seen,
                Some((figures.1, figures.2, figures.3, figures.4)),
                "{run}: both forms import alike"
            );
        }
    }
}

fn slices_of(node: u32, space: &XSpace) -> Vec<(i64, i64, String)> {
    common::expected(node, space)
        .into_iter()
        .map(|g| (g.begin_ns, g.end_ns, g.name))
        .collect()
}

/// Per-node XSpace recordings, exported together as `export` does.
fn check_xspace_run(dir: &Path, lone: usize) {
    let files: Vec<(u32, Vec<u8>)> = files_ending(dir, ".xplane.pb")
        .iter()
        .map(|p| {
            let node = collective_check::node_id_from_path(p).unwrap().0;
            (node, std::fs::read(p).unwrap())
        })
        .collect();
    assert!(!files.is_empty(), "{}", dir.display());
    let want = files
        .iter()
        .flat_map(|(n, b)| slices_of(*n, &XSpace::decode(&b[..]).unwrap()))
        .collect();
    check(
        &dir.display().to_string(),
        &common::inputs_of(&files),
        Options::default(),
        want,
        lone,
    );
}

/// Export a Kineto run's XSpace with its collectives, as `export` and
/// `merge -o *.pftrace` do (`KinetoOut::write`).
fn check_kineto_space(run: &str, space: &trace_align::KinetoSpace, lone: usize) {
    let bytes = xplane_proto::encode_xspace(&space.space).unwrap();
    let input = Input {
        bytes: &bytes,
        path: Path::new("converted"),
        node: NodeSource::PlaneStat,
    };
    let mut options = Options::default();
    options.collectives = Some(space.collectives.clone());
    check(run, &[input], options, slices_of(0, &space.space), lone);
}

/// A PyTorch run merged as `merge` merges it: every rank moved onto rank
/// 0's clock by the collectives (`trace_align::merge_kineto_space`).
fn check_merged_kineto_run(dir: &Path, lone: usize) {
    let traces: Vec<_> = files_ending(dir, ".pt.trace.json.gz")
        .into_iter()
        .map(|p| (collective_check::node_id_from_path(&p).unwrap(), p))
        .collect();
    let (space, _) = trace_align::merge_kineto_space(
        &traces,
        collective_check::NodeId(0),
        collective_clock::Estimator::default(),
    )
    .unwrap();
    check_kineto_space(&format!("{} merged", dir.display()), &space, lone);
}

/// A PyTorch run converted as `export` converts it: one XSpace
/// (`trace_align::kineto_space`) with the Kineto matching's collectives.
fn check_kineto_run(dir: &Path, lone: usize) {
    let files = trace_align::RunFiles::from_traces(files_ending(dir, ".pt.trace.json.gz")).unwrap();
    let run = trace_align::kineto_space(&files.traces()).unwrap();
    check_kineto_space(&dir.display().to_string(), &run, lone);
}

#[test]
fn jax_recordings_import_under_trace_processor_rules() {
    let root = fixtures();
    for (run, lone) in [
        ("jax-faketime/mesh2x2_skew_60steps", 0),
        ("jax-faketime/n2_skew_250steps", 0),
        ("jax-faketime/n4_skew_1thread_350steps", 0),
        ("jax-faketime/n4_skew_300steps", 0),
        ("jax-cpu/n4_shardmap_psum_50steps", 0),
        ("real-gpu-machine/jax-gpu-1p", 0),
    ] {
        check_xspace_run(&root.join(run), lone);
    }
}

#[test]
fn kineto_recordings_import_under_trace_processor_rules() {
    let root = fixtures();
    for (run, lone) in [
        ("kineto-gloo/n2_gloo_100steps", 0),
        ("kineto-gloo/n4_gloo_2groups_20steps", 0),
        ("kineto-gloo/n4_gloo_50steps", 0),
        ("kineto-gloo/n4_gloo_skew_200steps", 0),
        // CUDA runtime calls with a `correlation` but no kernel or copy
        // on the GPU (`cudaStreamIsCapturing`, `cudaEventRecord`,
        // `cudaStreamWaitEvent`, … on the four ranks): their
        // flow ids begin flows that draw nothing.
        ("real-gpu-machine/kineto-cuda-4r-skew", 19_724),
    ] {
        check_kineto_run(&root.join(run), lone);
    }
}

#[test]
fn merged_kineto_recordings_import_under_trace_processor_rules() {
    let root = fixtures();
    for (run, lone) in [
        ("kineto-gloo/n4_gloo_skew_200steps", 0),
        ("real-gpu-machine/kineto-cuda-4r-skew", 19_724),
    ] {
        check_merged_kineto_run(&root.join(run), lone);
    }
}

/// The plain packets of a small real run, for the read-back to reject
/// once broken.
fn small_run_packets() -> perfetto_export::proto::Trace {
    let dir = fixtures().join("jax-cpu/n4_shardmap_psum_50steps");
    let files: Vec<(u32, Vec<u8>)> = files_ending(&dir, ".xplane.pb")
        .iter()
        .map(|p| {
            let node = collective_check::node_id_from_path(p).unwrap().0;
            (node, std::fs::read(p).unwrap())
        })
        .collect();
    let mut out = Vec::new();
    perfetto_export::export(
        &common::inputs_of(&files),
        &mut perfetto_export::PerfettoWriter::new(&mut out),
    )
    .unwrap();
    perfetto_export::proto::Trace::decode(&out[..]).unwrap()
}

#[test]
#[should_panic(expected = "name iid")]
fn a_name_used_before_it_is_interned_is_rejected() {
    let mut trace = small_run_packets();
    let first = trace
        .packet
        .iter_mut()
        .find(|p| {
            p.interned_data
                .as_ref()
                .is_some_and(|i| !i.event_names.is_empty())
        })
        .unwrap();
    first.interned_data = None;
    importer::import(&trace.encode_to_vec());
}

#[test]
#[should_panic(expected = "two thread tracks")]
fn two_thread_tracks_of_one_thread_are_rejected() {
    use perfetto_export::proto::trace_packet::Data;
    let mut trace = small_run_packets();
    let threads: Vec<usize> = (0..trace.packet.len())
        .filter(|&k| matches!(&trace.packet[k].data, Some(Data::TrackDescriptor(t)) if t.thread.is_some()))
        .collect();
    let tid = match &trace.packet[threads[0]].data {
        Some(Data::TrackDescriptor(t)) => t.thread.as_ref().unwrap().tid,
        _ => unreachable!(),
    };
    if let Some(Data::TrackDescriptor(t)) = &mut trace.packet[threads[1]].data {
        t.thread.as_mut().unwrap().tid = tid;
    }
    importer::import(&trace.encode_to_vec());
}

#[test]
#[should_panic(expected = "unknown fields")]
fn a_field_outside_the_schema_is_rejected() {
    let mut bytes = small_run_packets().encode_to_vec();
    // Field 2 of `Trace` (not in the schema): a varint 7.
    bytes.extend_from_slice(&[2 << 3, 7]);
    importer::import(&bytes);
}

#[test]
#[should_panic(expected = "slices' exact ns")]
fn a_shifted_clock_snapshot_is_caught_by_the_times() {
    use perfetto_export::proto::trace_packet::Data;
    let mut trace = small_run_packets();
    // The incremental clock of the second sequence starts 1 ns late.
    let snapshot = trace
        .packet
        .iter_mut()
        .filter(|p| p.sequence_flags == Some(1))
        .nth(1)
        .unwrap();
    if let Some(Data::ClockSnapshot(c)) = &mut snapshot.data {
        for clock in &mut c.clocks {
            clock.timestamp = clock.timestamp.map(|t| t + 1);
        }
    }
    let bytes = trace.encode_to_vec();
    let got = importer::import(&bytes);
    let mut want: Vec<(i64, i64, String)> = Vec::new();
    let dir = fixtures().join("jax-cpu/n4_shardmap_psum_50steps");
    for p in files_ending(&dir, ".xplane.pb") {
        let node = collective_check::node_id_from_path(&p).unwrap().0;
        want.extend(slices_of(
            node,
            &XSpace::decode(&std::fs::read(&p).unwrap()[..]).unwrap(),
        ));
    }
    want.sort();
    let mut slices = got.slices;
    slices.sort();
    assert!(slices == want, "the slices' exact ns");
}
