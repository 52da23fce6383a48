//! A real JAX run on a 2×2 `(data, model)` mesh of four processes
//! (`fixtures/jax-faketime/mesh2x2_skew_60steps`): collectives over one
//! axis run in two replica groups under one `run_id`, and each group is an
//! instance of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use collective_check::{
    MatchKey, NodeId, Options, Report, WarningKind, check_files, node_id_from_path,
};
use xplane_proto::{METADATA_PLANE, read_xspace, write_xspace};

fn run_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jax-faketime/mesh2x2_skew_60steps")
}

fn traces(dir: &Path) -> Vec<(NodeId, PathBuf)> {
    (0..4)
        .map(|r| {
            let f = dir.join(format!("rank{r}.xplane.pb"));
            (node_id_from_path(&f).unwrap(), f)
        })
        .collect()
}

/// Per op, the sorted node sets of its instances and how many of each.
fn groups_by_op(report: &Report) -> BTreeMap<String, BTreeMap<Vec<u32>, usize>> {
    let mut out: BTreeMap<String, BTreeMap<Vec<u32>, usize>> = BTreeMap::new();
    for i in &report.instances {
        let nodes: Vec<u32> = i.slots.iter().map(|s| s.participant.node.0).collect();
        *out.entry(i.op.clone())
            .or_default()
            .entry(nodes)
            .or_default() += 1;
    }
    out
}

/// Per op, the count of the warnings of `kind`.
fn warned(report: &Report, kind: WarningKind) -> BTreeMap<String, usize> {
    report
        .warnings
        .iter()
        .filter(|w| w.kind == kind)
        .map(|w| (w.op.clone().unwrap(), w.count))
        .collect()
}

#[test]
fn each_replica_group_is_an_instance() {
    let report = check_files(&traces(&run_dir()), &Options::default()).unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.extraction.replica_group_unknown, 0);
    assert_eq!(report.extraction.hlo_protos_undecodable, 0);
    // 60 steps: one instance of the op over both axes, two of each op
    // over one axis.
    assert_eq!(report.summary.counts.matched, 60 * 7);
    let g = groups_by_op(&report);
    let sets = |v: &[(&[u32], usize)]| -> BTreeMap<Vec<u32>, usize> {
        v.iter().map(|(s, n)| (s.to_vec(), *n)).collect()
    };
    assert_eq!(g["psum_invariant.14"], sets(&[(&[0, 1, 2, 3], 60)]));
    assert_eq!(
        g["psum_invariant.15"],
        sets(&[(&[0, 1], 60), (&[2, 3], 60)])
    );
    assert_eq!(g["all_gather.3"], sets(&[(&[0, 2], 60), (&[1, 3], 60)]));
    assert_eq!(g["ppermute.3"], sets(&[(&[0, 1], 60), (&[2, 3], 60)]));
    for i in &report.instances {
        assert!(i.complete, "{}", i.key);
        // The op over both axes keeps the plain key; the others name their
        // group by its lowest device (device ids 0, 2048, 4096, 6144).
        match (i.op.as_str(), &i.key) {
            ("psum_invariant.14", MatchKey::RunId(_)) => {}
            (_, MatchKey::RunIdGroup { group, .. }) => {
                let lowest = i.slots.iter().filter_map(|s| s.participant.device).min();
                assert_eq!(Some(*group), lowest, "{}", i.key);
            }
            (op, key) => panic!("{op}: {key}"),
        }
    }
}

/// Without the HLO protos (the `/host:metadata` planes removed) the groups
/// cannot be told apart: the occurrences are matched by `run_id` over every
/// participant, and a warning per op says so.
#[test]
fn without_hlo_protos_the_merge_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    for (_, f) in traces(&run_dir()) {
        let mut space = read_xspace(&f).unwrap();
        space.planes.retain(|p| p.name != METADATA_PLANE);
        write_xspace(dir.path().join(f.file_name().unwrap()), &space).unwrap();
    }
    let report = check_files(&traces(dir.path()), &Options::default()).unwrap();
    assert_eq!(report.summary.counts.matched, 60 * 4);
    assert!(report.instances.iter().all(|i| i.slots.len() == 4));
    assert_eq!(report.extraction.replica_group_unknown, 4 * 60 * 4);
    let unknown = warned(&report, WarningKind::ReplicaGroupUnknown);
    let ops = [
        "all_gather.3",
        "ppermute.3",
        "psum_invariant.14",
        "psum_invariant.15",
    ];
    assert_eq!(unknown, ops.iter().map(|o| (o.to_string(), 240)).collect());
}

/// With the HLO protos but without `device_ordinal` stats, an op over one
/// axis is known to run in two groups, and no occurrence of it can be
/// placed in one: they are left out with a warning per op instead of being
/// matched over all four processes. The op over both axes needs no device.
#[test]
fn occurrences_of_several_groups_without_a_device_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    for (_, f) in traces(&run_dir()) {
        let mut space = read_xspace(&f).unwrap();
        for plane in &mut space.planes {
            let ordinal: Vec<i64> = plane
                .stat_metadata
                .values()
                .filter(|m| m.name == "device_ordinal")
                .map(|m| m.id)
                .collect();
            for event in plane.lines.iter_mut().flat_map(|l| l.events.iter_mut()) {
                event.stats.retain(|s| !ordinal.contains(&s.metadata_id));
            }
        }
        write_xspace(dir.path().join(f.file_name().unwrap()), &space).unwrap();
    }
    let report = check_files(&traces(dir.path()), &Options::default()).unwrap();
    assert_eq!(report.summary.counts.matched, 60);
    assert!(report.instances.iter().all(|i| i.op == "psum_invariant.14"
        && i.slots.len() == 4
        && matches!(i.key, MatchKey::RunId(_))));
    assert_eq!(report.extraction.replica_group_unknown, 0);
    assert_eq!(report.extraction.replica_group_unplaced, 3 * 60 * 4);
    let unplaced = warned(&report, WarningKind::ReplicaGroupUnplaced);
    let ops = ["all_gather.3", "ppermute.3", "psum_invariant.15"];
    assert_eq!(unplaced, ops.iter().map(|o| (o.to_string(), 240)).collect());
}

/// On the 1-D meshes every group is known and holds every device: the keys
/// stay plain `run_id`s.
#[test]
fn one_dimensional_runs_keep_one_instance_per_run_id() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for run in [
        "jax-cpu/n2_shardmap_psum_50steps",
        "jax-cpu/n2x2dev_jit_allreduce_50steps",
        "jax-cpu/n4_shardmap_psum_50steps",
        "jax-faketime/n2_skew_250steps",
    ] {
        let dir = root.join(run);
        let ranks = if run.contains("n4_") { 4 } else { 2 };
        let files: Vec<(NodeId, PathBuf)> = traces(&dir).into_iter().take(ranks).collect();
        let report = check_files(&files, &Options::default()).unwrap();
        assert_eq!(report.extraction.replica_group_unknown, 0, "{run}");
        assert!(
            report
                .instances
                .iter()
                .all(|i| matches!(i.key, MatchKey::RunId(_))),
            "{run}"
        );
        assert!(report.warnings.is_empty(), "{run}: {:?}", report.warnings);
    }
}
