//! The plane-id scheme: no two drawn planes share an id, for any node count
//! up to 4096, and hidden names are never drawn.

use std::collections::HashMap;

use clock_model::NodeId;
use proptest::prelude::*;
use trace_merge::{IdScheme, PlaneKind, classify, hidden_name, place, viewer_draws};

fn drawn_ids(scheme: IdScheme, nodes: u32, gpus: u32) -> HashMap<i64, (u32, Option<u32>)> {
    let mut ids = HashMap::new();
    for node in 0..nodes {
        let host = place(scheme, NodeId(node), false, PlaneKind::Host, "/host:CPU", 0).unwrap();
        assert!(host.drawn);
        assert!(
            ids.insert(host.id, (node, None)).is_none(),
            "host {node} collides at {}",
            host.id
        );
        for k in 0..gpus {
            let gpu = place(
                scheme,
                NodeId(node),
                false,
                PlaneKind::Gpu { ordinal: k },
                "",
                0,
            )
            .unwrap();
            assert_eq!(gpu.name, format!("/device:GPU:{}", gpu.id));
            if let Some(prev) = ids.insert(gpu.id, (node, Some(k))) {
                panic!(
                    "GPU {k} of node {node} collides with {prev:?} at {}",
                    gpu.id
                );
            }
        }
    }
    ids
}

#[test]
fn no_collision_up_to_4096_nodes() {
    for (stride, gpus) in [(2, 1), (9, 8), (100, 8), (100, 98), (1000, 16)] {
        let scheme = IdScheme::new(stride).unwrap();
        let ids = drawn_ids(scheme, 4097, gpus);
        assert_eq!(ids.len(), 4097 * (gpus as usize + 1));
    }
}

#[test]
fn ordinal_must_fit_below_the_host_slot() {
    let scheme = IdScheme::new(9).unwrap();
    assert!(
        place(
            scheme,
            NodeId(3),
            false,
            PlaneKind::Gpu { ordinal: 7 },
            "",
            0
        )
        .is_ok()
    );
    assert!(
        place(
            scheme,
            NodeId(3),
            false,
            PlaneKind::Gpu { ordinal: 8 },
            "",
            0
        )
        .is_err()
    );
    assert!(IdScheme::new(1).is_none());
}

#[test]
fn bookkeeping_planes_are_never_drawn() {
    for name in [
        "/host:snapshots",
        "Task Environment",
        "/host:metadata",
        "/custom:x",
        "/host:CPU",
    ] {
        let kind = classify(name, name == "/host:CPU").unwrap();
        for reference in [false, true] {
            let p = place(
                IdScheme::new(100).unwrap(),
                NodeId(5),
                reference,
                kind,
                name,
                0,
            )
            .unwrap();
            assert!(!p.drawn, "{name}");
            assert!(!viewer_draws(&p.name), "{name} -> {}", p.name);
            assert!(!p.name.starts_with("/device:"), "{}", p.name);
        }
    }
    assert_eq!(
        hidden_name(NodeId(3), "/host:snapshots"),
        "/node:3/host:snapshots"
    );
    assert_eq!(
        hidden_name(NodeId(3), "Task Environment"),
        "/node:3/Task Environment"
    );
    assert_eq!(classify("/host:CPU", false).unwrap(), PlaneKind::Host);
    assert_eq!(
        classify("/device:GPU:12", false).unwrap(),
        PlaneKind::Gpu { ordinal: 12 }
    );
    assert!(classify("/device:GPU:Host_Node_3", false).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn ids_equal_only_for_the_same_plane(
        stride in 2u32..2000,
        a in 0u32..=4096, b in 0u32..=4096,
        ka in proptest::option::of(0u32..2000), kb in proptest::option::of(0u32..2000),
    ) {
        let scheme = IdScheme::new(stride).unwrap();
        let id = |node, k: Option<u32>| match k {
            None => Some(scheme.host_id(node)),
            Some(k) => scheme.gpu_id(node, k),
        };
        if let (Some(x), Some(y)) = (id(NodeId(a), ka), id(NodeId(b), kb)) {
            prop_assert_eq!(x == y, a == b && ka == kb);
        }
    }
}
