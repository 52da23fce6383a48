//! The collective permutes of the recorded JAX runs (`fixtures/jax-faketime`)
//! as clock evidence: one one-way constraint per `(source, target)` pair of
//! their HLO, the target's end after the source's begin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use collective_check::{
    Extraction, NodeSource, Options as CheckOptions, PlaneChoice, extract_bytes, node_id_from_path,
};
use collective_clock::{Evidence, PermuteStats, Role};
use xplane_proto::{METADATA_PLANE, XSpace, encode_xspace, read_xspace};

fn files(run: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-faketime")
        .join(run);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|f| f.to_string_lossy().ends_with(".xplane.pb"))
        .collect();
    files.sort();
    files
}

/// The run's evidence, each trace changed by `edit` first.
fn evidence(run: &str, edit: impl Fn(&mut XSpace)) -> Evidence {
    let mut ex = Extraction::new();
    for f in files(run) {
        let mut space = read_xspace(&f).unwrap();
        edit(&mut space);
        let bytes = encode_xspace(&space).unwrap();
        let node = NodeSource::Given(node_id_from_path(&f).unwrap());
        extract_bytes(&bytes, &f, node, &CheckOptions::default(), &mut ex).unwrap();
    }
    Evidence::from_extraction(&ex, PlaneChoice::Auto)
}

/// Per `(sender, receiver)` node, the one-way instances of `op`.
fn one_way_by_nodes(ev: &Evidence, op: &str) -> BTreeMap<(u32, u32), usize> {
    let mut out = BTreeMap::new();
    for i in ev.instances().iter().filter(|i| ev.op_name(i.op) == op) {
        let role = |r: Role| i.members.iter().find(|m| m.role == r).unwrap().node.0;
        assert_eq!(i.members.len(), 2);
        *out.entry((role(Role::Sends), role(Role::Receives)))
            .or_default() += 1;
    }
    out
}

#[test]
fn a_ring_of_four_gives_one_constraint_per_pair() {
    let ev = evidence("n4_skew_300steps", |_| {});
    let want: BTreeMap<(u32, u32), usize> = (0..4).map(|r| ((r, (r + 1) % 4), 300)).collect();
    assert_eq!(one_way_by_nodes(&ev, "ppermute.3"), want);
    assert_eq!(
        ev.stats.permutes,
        PermuteStats {
            instances: 300,
            one_way: 1200,
            ..PermuteStats::default()
        }
    );
    assert_eq!(ev.stats.one_way, 1200);
    assert_eq!(ev.stats.all_to_all, 900);
    assert!(ev.stats.skipped_by_kind.is_empty(), "{:?}", ev.stats);
}

#[test]
fn a_permute_within_mesh_rows_pairs_the_ranks_of_each_row() {
    let ev = evidence("mesh2x2_skew_60steps", |_| {});
    let want: BTreeMap<(u32, u32), usize> = [(0, 1), (1, 0), (2, 3), (3, 2)]
        .into_iter()
        .map(|p| (p, 60))
        .collect();
    assert_eq!(one_way_by_nodes(&ev, "ppermute.3"), want);
    assert_eq!(
        ev.stats.permutes,
        PermuteStats {
            instances: 120,
            one_way: 240,
            ..PermuteStats::default()
        }
    );
    assert!(ev.stats.skipped_by_kind.is_empty(), "{:?}", ev.stats);
}

/// Without the HLO protos (the `/host:metadata` planes removed) who sends
/// to whom is not known: the permutes are left out and counted.
#[test]
fn a_permute_without_hlo_stays_skipped_and_counted() {
    let ev = evidence("n4_skew_300steps", |space| {
        space.planes.retain(|p| p.name != METADATA_PLANE)
    });
    assert!(one_way_by_nodes(&ev, "ppermute.3").is_empty());
    assert_eq!(ev.stats.one_way, 0);
    assert_eq!(
        ev.stats.permutes,
        PermuteStats {
            unknown: 300,
            ..PermuteStats::default()
        }
    );
    assert_eq!(
        ev.stats.skipped_by_kind,
        [("collective-permute".to_owned(), 300)].into()
    );
}

/// Without `device_ordinal` stats the device of each permute occurrence,
/// and so its peers, cannot be placed: every member is counted unplaced.
#[test]
fn a_permute_without_devices_is_unplaced() {
    let ev = evidence("n4_skew_300steps", |space| {
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
    });
    assert_eq!(ev.stats.one_way, 0);
    assert_eq!(
        ev.stats.permutes,
        PermuteStats {
            unplaced: 1200,
            unplaced_instances: 300,
            ..PermuteStats::default()
        }
    );
    assert_eq!(
        ev.stats.skipped_by_kind,
        [("collective-permute".to_owned(), 300)].into()
    );
}
