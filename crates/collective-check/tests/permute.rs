//! Who sends to whom in the collective permutes of the recorded JAX runs
//! (`fixtures/jax-faketime`), from the `source_target_pairs` of their HLO.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use collective_check::{
    CollectiveKind, Extraction, Group, NodeSource, Options, PermutePeers, PlaneChoice, Transfers,
    extract_bytes, extract_file, group, node_id_from_path,
};
use xplane_proto::{METADATA_PLANE, encode_xspace, read_xspace};

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

fn extract(run: &str) -> Extraction {
    let mut ex = Extraction::new();
    for f in files(run) {
        let node = NodeSource::Given(node_id_from_path(&f).unwrap());
        extract_file(&f, node, &Options::default(), &mut ex).unwrap();
    }
    ex
}

fn permutes(ex: &Extraction) -> Vec<Group> {
    let mut warnings = Vec::new();
    let groups = group(ex, PlaneChoice::Auto, &mut warnings);
    assert!(warnings.is_empty(), "{warnings:?}");
    groups
        .into_iter()
        .filter(|g| g.kind == CollectiveKind::CollectivePermute)
        .collect()
}

/// Per `(sender node, receiver node)`, how many transfers the run's
/// permute instances hold; and every instance's [`Transfers`] counts.
fn transfers_by_nodes(groups: &[Group]) -> BTreeMap<(u32, u32), usize> {
    let mut by_nodes = BTreeMap::new();
    for g in groups {
        let t = g.transfers.as_ref().expect("a permute has transfers");
        assert_eq!(
            (t.known, t.unknown, t.unplaced, t.unmatched),
            (g.members.len(), 0, 0, 0)
        );
        for p in &t.pairs {
            let from = g.members[p.from].participant.node.0;
            let to = g.members[p.to].participant.node.0;
            *by_nodes.entry((from, to)).or_default() += 1;
        }
    }
    by_nodes
}

/// The ring `ppermute(x, "x", [(i, (i + 1) % 4)])`: in each of the 300
/// instances every rank sends to the next one.
#[test]
fn a_ring_of_four_sends_to_the_next_rank() {
    let groups = permutes(&extract("n4_skew_300steps"));
    assert_eq!(groups.len(), 300);
    assert!(groups.iter().all(|g| g.members.len() == 4));
    let want: BTreeMap<(u32, u32), usize> = (0..4).map(|r| ((r, (r + 1) % 4), 300)).collect();
    assert_eq!(transfers_by_nodes(&groups), want);
}

/// On the 2×2 mesh the permute runs within each row ({0, 1} and {2, 3}),
/// each row one instance, in which both ranks send to each other.
#[test]
fn a_permute_within_rows_pairs_the_ranks_of_each_row() {
    let groups = permutes(&extract("mesh2x2_skew_60steps"));
    assert_eq!(groups.len(), 120);
    assert!(groups.iter().all(|g| g.members.len() == 2));
    let want: BTreeMap<(u32, u32), usize> = [(0, 1), (1, 0), (2, 3), (3, 2)]
        .into_iter()
        .map(|p| (p, 60))
        .collect();
    assert_eq!(transfers_by_nodes(&groups), want);
}

/// Without the HLO protos (the `/host:metadata` planes removed) the peers
/// are not known, and no transfer is made up.
#[test]
fn without_hlo_protos_no_transfer_is_known() {
    let mut ex = Extraction::new();
    for f in files("n4_skew_300steps") {
        let mut space = read_xspace(&f).unwrap();
        space.planes.retain(|p| p.name != METADATA_PLANE);
        let bytes = encode_xspace(&space).unwrap();
        let node = NodeSource::Given(node_id_from_path(&f).unwrap());
        extract_bytes(&bytes, &f, node, &Options::default(), &mut ex).unwrap();
    }
    assert!(
        ex.occurrences()
            .iter()
            .filter(|o| o.kind == CollectiveKind::CollectivePermute)
            .all(|o| o.peers == PermutePeers::Unknown)
    );
    let mut warnings = Vec::new();
    let groups = group(&ex, PlaneChoice::Auto, &mut warnings);
    let permutes: Vec<&Group> = groups
        .iter()
        .filter(|g| g.kind == CollectiveKind::CollectivePermute)
        .collect();
    assert_eq!(permutes.len(), 300);
    for g in permutes {
        let t = g.transfers.as_ref().unwrap();
        assert_eq!(
            t,
            &Transfers {
                unknown: 4,
                ..Transfers::default()
            }
        );
    }
}
