//! The real JAX traces: as recorded, with a clock moved, merged into one file,
//! and with the match stats removed.

use crate::common;

use std::path::PathBuf;

use collective_check::{
    MatchKey, NodeId, Options, Report, WarningKind, check_files, check_merged, node_id_from_path,
};
use common::*;
use xplane_proto::{
    HOST_PLANE, NODE_ID_STAT, ORIGINAL_PLANE_STAT, PROFILE_START_TIME, TASK_ENV_PLANE, XSpace,
    read_xspace, session_start_ns, x_stat,
};

fn ranked(files: &[PathBuf]) -> Vec<(NodeId, PathBuf)> {
    files
        .iter()
        .map(|f| {
            (
                node_id_from_path(f).expect("rank<N> in the name"),
                f.clone(),
            )
        })
        .collect()
}

fn check_run(run: &str) -> Report {
    check_files(&ranked(&fixture(run)), &Options::default()).unwrap()
}

#[test]
fn recorded_fixtures_have_no_violations() {
    for (run, files) in fixture_runs() {
        let report = check_files(&ranked(&files), &Options::default()).unwrap();
        assert_eq!(
            report.violation_count(),
            0,
            "{run}: {}",
            report.summary_text()
        );
        assert_eq!(report.summary.overlap_failures, 0, "{run}");
        assert!(report.passes(0));
        let e = &report.extraction;
        // Every op's `end:` marker is linked to it and lies inside it.
        assert_eq!(e.end_markers_linked, e.collectives, "{run}");
        assert_eq!(e.end_markers_extending, 0, "{run}");
        match run.as_str() {
            "single" => {
                assert_eq!(report.summary.counts.matched, 0);
                assert_eq!(report.warnings[0].kind, WarningKind::NoCollectives);
                assert_eq!(report.summary.nodes, 1);
            }
            "n2_shardmap_psum_50steps" | "n4_shardmap_psum_50steps" => {
                let n = files.len();
                assert_eq!(report.summary.counts.matched, 50, "{run}");
                assert_eq!(report.summary.counts.checked, 50, "{run}");
                assert_eq!(report.summary.participants, n, "{run}");
                assert!(report.warnings.is_empty(), "{run}: {:?}", report.warnings);
                for i in &report.instances {
                    assert_eq!(i.op, "psum_invariant.7");
                    assert_eq!(i.module.as_deref(), Some("jit_f"));
                    assert!(matches!(i.key, MatchKey::RunId(_)));
                    assert_eq!(i.slots.len(), n);
                    assert!(i.complete);
                }
                // Each end marker is one event, not one more instance.
                assert_eq!(e.collectives, 50 * n as u64, "{run}");
            }
            "n2x2dev_jit_allreduce_50steps" => {
                // All four devices of one run_id form one instance.
                assert_eq!(report.summary.counts.matched, 50);
                assert_eq!(report.summary.participants, 4);
                assert!(report.warnings.is_empty(), "{:?}", report.warnings);
                let devices: Vec<_> = report
                    .participants
                    .iter()
                    .map(|p| (p.node.0, p.device))
                    .collect();
                assert_eq!(
                    devices,
                    [(0, Some(0)), (0, Some(1)), (1, Some(2048)), (1, Some(2049))]
                );
                assert!(report.instances.iter().all(|i| i.slots.len() == 4));
            }
            other => panic!("unexpected fixture run {other}"),
        }
    }
}

/// Rank 1's clock moved by `shift_ns`: its collectives seem to start after
/// the others have finished. Collectives that really lasted longer than the
/// error still overlap: the n4 psums last 1.5–16 ms (median 6 ms, four
/// processes on two cores) and the n2x2 all-reduces up to 12 ms, so 5 ms
/// exposes 44, 36 and 21 of 50; 20 ms exposes every one.
#[test]
fn a_moved_clock_violates_nearly_every_instance() {
    let dir = tempfile::tempdir().unwrap();
    for (run, shift_ns, expected) in [
        ("n2_shardmap_psum_50steps", 5_000_000, 44),
        ("n2x2dev_jit_allreduce_50steps", 5_000_000, 36),
        ("n4_shardmap_psum_50steps", 5_000_000, 21),
        ("n2_shardmap_psum_50steps", 20_000_000, 50),
        ("n2x2dev_jit_allreduce_50steps", 20_000_000, 50),
        ("n4_shardmap_psum_50steps", 20_000_000, 50),
    ] {
        let files = fixture(run);
        let mut inputs = ranked(&files);
        let mut space = read_xspace(&files[1]).unwrap();
        shift_clock(&mut space, shift_ns);
        inputs[1].1 = write(
            dir.path(),
            &format!("{run}_{shift_ns}_rank1.xplane.pb"),
            &space,
        );
        let report = check_files(&inputs, &Options::default()).unwrap();
        let n = report.summary.counts.matched;
        assert_eq!(n, 50, "{run}");
        eprintln!(
            "{run} +{shift_ns} ns: {} of {n} instances violate",
            report.violation_count()
        );
        assert_eq!(
            report.violation_count(),
            expected,
            "{run} +{shift_ns} ns\n{}",
            report.summary_text()
        );
        assert!(!report.passes(0));
        // Node 1 is the one that (seemingly) starts last.
        assert_eq!(report.stragglers[0].node, NodeId(1), "{run}");
        for v in &report.violations {
            assert_eq!(v.last_to_start.node, NodeId(1));
            assert!(v.size_ns > 0.0 && v.size_ns < shift_ns as f64, "{v:?}");
        }
        // A tolerance of the whole error hides them all.
        let mut loose = Options::default();
        loose.tolerance_ns = shift_ns as f64;
        assert_eq!(check_files(&inputs, &loose).unwrap().violation_count(), 0);
    }
}

/// Merge rank files the way the merge lays them out: one session start, the
/// reference node's host plane keeps `/host:CPU`, others are renamed, every
/// plane carries `node_id` and `original_plane_name`.
fn merge(files: &[PathBuf]) -> XSpace {
    let spaces: Vec<XSpace> = files.iter().map(|f| read_xspace(f).unwrap()).collect();
    let t0 = spaces.iter().map(session_start_ns).min().unwrap();
    let mut merged = XSpace::default();
    for (node, space) in spaces.iter().enumerate() {
        let shift = (session_start_ns(space) - t0) as i64;
        for plane in &space.planes {
            if plane.name == TASK_ENV_PLANE {
                continue;
            }
            let mut plane = plane.clone();
            set_plane_stat(
                &mut plane,
                NODE_ID_STAT,
                x_stat::Value::Int64Value(node as i64),
            );
            let original = x_stat::Value::StrValue(plane.name.clone());
            set_plane_stat(&mut plane, ORIGINAL_PLANE_STAT, original);
            if node > 0 && plane.name == HOST_PLANE {
                plane.name = format!("/device:GPU:Host_Node_{node}");
            } else if plane.name != HOST_PLANE {
                plane.name = format!("{}#{node}", plane.name);
            }
            for line in &mut plane.lines {
                line.timestamp_ns += shift;
            }
            merged.planes.push(plane);
        }
    }
    let mut env = xplane_proto::XPlane {
        name: TASK_ENV_PLANE.into(),
        ..Default::default()
    };
    set_plane_stat(
        &mut env,
        PROFILE_START_TIME,
        x_stat::Value::Uint64Value(t0 as u64),
    );
    merged.planes.push(env);
    merged
}

#[test]
fn a_merged_file_gives_the_same_report_as_the_rank_files() {
    let dir = tempfile::tempdir().unwrap();
    for run in ["n4_shardmap_psum_50steps", "n2x2dev_jit_allreduce_50steps"] {
        let files = fixture(run);
        let path = write(
            dir.path(),
            &format!("{run}.merged.xplane.pb"),
            &merge(&files),
        );
        let merged = check_merged(&path, &Options::default()).unwrap();
        let separate = check_run(run);
        assert_eq!(merged.instances, separate.instances, "{run}");
        assert_eq!(merged.participants, separate.participants, "{run}");
        assert_eq!(merged.violation_count(), 0);
    }
}

/// Check a merged n2 run whose reference host plane `edit` changed; the
/// error it gives.
fn merged_host_plane_error(
    dir: &std::path::Path,
    edit: impl FnOnce(&mut xplane_proto::XPlane),
) -> collective_check::Error {
    let mut space = merge(&fixture("n2_shardmap_psum_50steps"));
    let host = space
        .planes
        .iter_mut()
        .find(|p| p.name == HOST_PLANE)
        .unwrap();
    edit(host);
    let path = write(dir, "merged.xplane.pb", &space);
    check_merged(&path, &Options::default()).unwrap_err()
}

#[test]
fn a_merged_plane_without_node_id_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = merged_host_plane_error(dir.path(), |host| {
        let id = stat_id(host, NODE_ID_STAT);
        host.stats.retain(|s| s.metadata_id != id);
    })
    .to_string();
    assert!(
        err.contains("merged.xplane.pb") && err.contains("/host:CPU") && err.contains("node_id"),
        "{err}"
    );
}

#[test]
fn a_merged_plane_whose_node_id_is_no_node_id_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for value in [-1, i64::from(u32::MAX) + 1] {
        let err = merged_host_plane_error(dir.path(), |host| {
            set_plane_stat(host, NODE_ID_STAT, x_stat::Value::Int64Value(value));
        });
        assert!(
            matches!(&err, collective_check::Error::NodeIdOutOfRange { value: v, .. } if *v == value),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("merged.xplane.pb")
                && msg.contains("/host:CPU")
                && msg.contains(&value.to_string()),
            "{msg}"
        );
    }
}

#[test]
fn without_run_id_instances_match_by_occurrence_order() {
    let dir = tempfile::tempdir().unwrap();
    let files = fixture("n2_shardmap_psum_50steps");
    let mut inputs = ranked(&files);
    for (i, (_, path)) in inputs.iter_mut().enumerate() {
        let mut space = read_xspace(&*path).unwrap();
        strip_event_stat(&mut space, "run_id");
        *path = write(dir.path(), &format!("rank{i}.xplane.pb"), &space);
    }
    let by_order = check_files(&inputs, &Options::default()).unwrap();
    let by_run = check_run("n2_shardmap_psum_50steps");
    assert_eq!(by_order.summary.counts.matched, 50);
    assert!(by_order.warnings.is_empty(), "{:?}", by_order.warnings);
    assert_eq!(by_order.violation_count(), 0);
    assert_eq!(by_order.instances.len(), by_run.instances.len());
    for (a, b) in by_order.instances.iter().zip(&by_run.instances) {
        assert!(matches!(a.key, MatchKey::Occurrence(_)));
        assert_eq!(
            a.slots, b.slots,
            "order and run_id matching pair the same events"
        );
    }
}

/// Drop the `k`-th psum event of a file.
fn drop_psum(space: &mut XSpace, k: usize) {
    let host = space
        .planes
        .iter_mut()
        .find(|p| p.name == HOST_PLANE)
        .unwrap();
    let id = event_id(host, "psum_invariant.7");
    let mut seen = 0;
    for line in &mut host.lines {
        line.events.retain(|e| {
            if e.metadata_id != id {
                return true;
            }
            seen += 1;
            seen != k + 1
        });
    }
}

#[test]
fn a_missing_occurrence_is_warned_about_never_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let files = fixture("n2_shardmap_psum_50steps");

    // With run_id: one incomplete, unmatched instance.
    let mut space = read_xspace(&files[1]).unwrap();
    drop_psum(&mut space, 10);
    let r1 = write(dir.path(), "rank1.xplane.pb", &space);
    let report = check_files(
        &[(NodeId(0), files[0].clone()), (NodeId(1), r1.clone())],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(report.summary.counts.matched, 50);
    assert_eq!(report.summary.counts.incomplete, 1);
    assert_eq!(report.summary.counts.single_participant, 1);
    let kinds: Vec<_> = report.warnings.iter().map(|w| (w.kind, w.count)).collect();
    assert!(kinds.contains(&(WarningKind::Incomplete, 1)), "{kinds:?}");
    assert!(kinds.contains(&(WarningKind::Unmatched, 1)), "{kinds:?}");

    // Without run_id: the counts differ.
    let mut a = read_xspace(&files[0]).unwrap();
    strip_event_stat(&mut a, "run_id");
    strip_event_stat(&mut space, "run_id");
    let r0 = write(dir.path(), "o_rank0.xplane.pb", &a);
    let r1 = write(dir.path(), "o_rank1.xplane.pb", &space);
    let report = check_files(&[(NodeId(0), r0), (NodeId(1), r1)], &Options::default()).unwrap();
    let w = report
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::CountMismatch)
        .expect("count mismatch warning");
    assert_eq!(w.count, 1);
    assert!(
        w.message.contains("n0d0: 50") && w.message.contains("n1d2048: 49"),
        "{}",
        w.message
    );
    assert_eq!(report.summary.counts.single_participant, 1);
}

#[test]
fn duplicate_node_ids_are_an_error() {
    let files = fixture("n2_shardmap_psum_50steps");
    let err = check_files(
        &[(NodeId(0), files[0].clone()), (NodeId(0), files[1].clone())],
        &Options::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("node 0 given twice"), "{err}");
}

#[test]
fn json_and_csv_outputs() {
    let report = check_run("n2x2dev_jit_allreduce_50steps");
    let mut json = Vec::new();
    report.write_json(&mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["summary"]["counts"]["matched"], 50);
    assert_eq!(v["instances"][0]["slots"].as_array().unwrap().len(), 4);
    assert!(v["instances"][0]["key"]["run_id"].is_i64());
    // Epoch picoseconds are written as exact integers.
    let text = String::from_utf8(json.clone()).unwrap();
    let exact = format!("\"begin_ps\": {}", report.instances[0].slots[0].begin_ps.0);
    assert!(text.contains(&exact), "{exact}");

    let mut csv = Vec::new();
    report.write_csv(&mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 51);
    assert!(lines[0].starts_with("index,op,module,kind,key,participants,complete,start_spread_ns"));
    assert!(lines[0].ends_with("n1d2049_correlation,n1d2049_start_ns"));
    let cols = lines[0].split(',').count();
    assert!(lines[1..].iter().all(|l| l.split(',').count() == cols));
    assert!(lines[1].starts_with("0,all-reduce,jit_step,all-reduce,run_id="));

    let text = report.summary_text();
    assert!(
        text.contains("50 matched instances") && text.contains("violations: 0"),
        "{text}"
    );
}

/// JAX writes `all_gather.3`, `reduce_scatter.7`, `ppermute.3`,
/// `all_to_all.2`, `psum.1` (underscore spellings): the recorded psum renamed
/// to each is still found in every instance, as its kind, and still passes.
#[test]
fn jax_underscore_op_names_are_collectives() {
    use collective_check::CollectiveKind::*;
    let dir = tempfile::tempdir().unwrap();
    let run = "n4_shardmap_psum_50steps";
    let files = fixture(run);
    for (name, kind, checked) in [
        ("all_gather.3", AllGather, 50),
        ("reduce_scatter.7", ReduceScatter, 50),
        ("all_to_all.2", AllToAll, 50),
        ("psum.1", AllReduce, 50),
        ("ppermute.3", CollectivePermute, 0),
    ] {
        let inputs: Vec<(NodeId, PathBuf)> = ranked(&files)
            .into_iter()
            .map(|(node, path)| {
                let mut space = read_xspace(&path).unwrap();
                rename_op(&mut space, "psum_invariant.7", name);
                let file = format!("{name}_rank{}.xplane.pb", node.0);
                (node, write(dir.path(), &file, &space))
            })
            .collect();
        let report = check_files(&inputs, &Options::default()).unwrap();
        assert_eq!(report.summary.counts.matched, 50, "{name}");
        assert!(
            report
                .instances
                .iter()
                .all(|i| i.kind == kind && i.op == name)
        );
        assert_eq!(report.summary.counts.checked, checked, "{name}");
        assert_eq!(report.violation_count(), 0, "{name}");
        assert_eq!(report.extraction.unclassified_candidates, 0, "{name}");
        assert_eq!(report.extraction.end_markers_linked, 200, "{name}");
    }
}

/// A collective-looking name that is not classified is counted, not dropped
/// without a word; the recorded traces have none.
#[test]
fn unclassified_candidates_are_counted() {
    for (run, _) in fixture_runs() {
        assert_eq!(
            check_run(&run).extraction.unclassified_candidates,
            0,
            "{run}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let files = fixture("n2_shardmap_psum_50steps");
    let inputs: Vec<(NodeId, PathBuf)> = ranked(&files)
        .into_iter()
        .map(|(node, path)| {
            let mut space = read_xspace(&path).unwrap();
            rename_op(&mut space, "psum_invariant.7", "all_gather_fusion.3");
            strip_event_stat(&mut space, "hlo_op");
            let file = format!("candidate_rank{}.xplane.pb", node.0);
            (node, write(dir.path(), &file, &space))
        })
        .collect();
    let report = check_files(&inputs, &Options::default()).unwrap();
    assert_eq!(report.summary.counts.matched, 0);
    assert_eq!(report.extraction.unclassified_candidates, 100);
    let json = serde_json::to_value(&report.extraction).unwrap();
    assert_eq!(json["unclassified_candidates"], 100);
}

/// `check_files` reads its files in parallel: the same report as reading
/// them one after the other into one extraction, and of two bad files the
/// first in the list is the one named.
#[test]
fn files_read_in_parallel_give_the_report_of_one_read_after_another() {
    use collective_check::{Extraction, NodeSource, check, extract_file};
    let options = Options::default();
    for (run, files) in fixture_runs() {
        let files = ranked(&files);
        let mut all = Extraction::new();
        for (node, path) in &files {
            extract_file(path, NodeSource::Given(*node), &options, &mut all).unwrap();
        }
        assert_eq!(
            check_files(&files, &options).unwrap(),
            check(&all, &options),
            "{run}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let bad: Vec<(NodeId, PathBuf)> = (0..4)
        .map(|n| {
            let path = dir.path().join(format!("rank{n}.xplane.pb"));
            std::fs::write(&path, [0x0a, 0x7f, n]).unwrap(); // a plane cut short
            (NodeId(u32::from(n)), path)
        })
        .collect();
    for _ in 0..8 {
        let err = check_files(&bad, &options).unwrap_err().to_string();
        assert!(err.contains("rank0.xplane.pb"), "{err}");
    }
}

/// `validate --csv` wrote trace text as it was: a module or op name
/// starting with `=`, `+`, `@` became a spreadsheet formula, and control
/// characters went into the cell.
#[test]
fn csv_cells_from_trace_text_are_never_formulas_or_control_characters() {
    let run = "n2x2dev_jit_allreduce_50steps";
    let module = check_run(run).instances[0].module.clone().unwrap();
    let hostile = "=HYPERLINK(\"http://x\";\"y\")\u{1b}[2J";
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<(NodeId, PathBuf)> = ranked(&fixture(run))
        .into_iter()
        .map(|(node, path)| {
            let mut space = read_xspace(&path).unwrap();
            rename_op(&mut space, &module, hostile);
            let file = format!("rank{}.xplane.pb", node.0);
            (node, write(dir.path(), &file, &space))
        })
        .collect();
    let report = check_files(&inputs, &Options::default()).unwrap();
    assert_eq!(report.instances[0].module.as_deref(), Some(hostile));
    let mut csv = Vec::new();
    report.write_csv(&mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(!csv.contains('\u{1b}'), "{csv}");
    assert!(!csv.contains(",=") && !csv.contains(",\"="), "{csv}");
    assert!(
        csv.contains("\"'=HYPERLINK(\"\"http://x\"\";\"\"y\"\")\\u{1B}[2J\""),
        "{csv}"
    );
}
