//! Nodes held at clocks known otherwise (probe offsets): the others are
//! fitted onto the same clock, and nothing is fitted for the held ones.

use std::collections::BTreeSet;

use clock_model::HostTime;
use collective_check::NodeId;
use collective_clock::{Error, Evidence, Options, SyntheticRun, estimate_holding};

/// Worst error over every member time of `node`, ns.
fn worst_error_ns(
    est: &collective_clock::Estimate,
    truth: &collective_clock::Truth,
    ev: &Evidence,
    node: NodeId,
) -> i128 {
    ev.instances()
        .iter()
        .flat_map(|i| &i.members)
        .filter(|m| m.node == node)
        .flat_map(|m| [m.begin, m.end])
        .map(|h| (est.offset_ps(node, h).unwrap() - truth.correction_ps(node, h)).abs() / 1000)
        .max()
        .unwrap()
}

#[test]
fn nodes_held_at_their_true_clocks_align_the_others_onto_them() {
    let run = SyntheticRun {
        nodes: 4,
        ..SyntheticRun::default()
    };
    let (ev, truth) = run.generate();
    // Nodes 0, 1 and 3 are aligned otherwise: their times mapped exactly.
    let mut held_ev = ev.clone();
    held_ev.map_times(|node, h| match node.0 {
        1 | 3 => HostTime::from_ps(h.as_ps() + truth.correction_ps(node, h)),
        _ => h,
    });
    let held = BTreeSet::from([NodeId(0), NodeId(1), NodeId(3)]);
    let est = estimate_holding(&held_ev, &held, &Options::default()).unwrap();
    for n in [0, 1, 3] {
        assert!(
            matches!(est.maps[&NodeId(n)], clock_model::OffsetMap::Identity),
            "node {n} is held"
        );
        assert!(est.report.node(NodeId(n)).unwrap().reference);
    }
    assert_eq!(est.report.reference, NodeId(0));
    assert_eq!(est.report.violated_constraints(), 0);
    let err = worst_error_ns(&est, &truth, &held_ev, NodeId(2));
    assert!(err < 3_000, "node 2 is {err} ns off");
}

#[test]
fn a_node_linked_only_to_a_held_node_other_than_the_reference_is_linked() {
    // Node 2 shares instances with node 1 only; node 1 is held.
    let mut ev = Evidence::new();
    let t = |ns: i64| HostTime::from_ns(1_790_000_000_000_000_000 + ns);
    for k in 0..20_i64 {
        let at = k * 1_000_000;
        let key = collective_check::MatchKey::RunId(k);
        ev.push_all_to_all(
            "all-reduce.1",
            key.clone(),
            &[
                (NodeId(0), t(at), t(at + 50_000)),
                (NodeId(1), t(at + 900), t(at + 50_200)),
            ],
        );
        // Node 2's clock is 40 µs behind.
        ev.push_all_to_all(
            "all-reduce.2",
            key,
            &[
                (NodeId(1), t(at + 100_000), t(at + 150_000)),
                (NodeId(2), t(at + 60_500), t(at + 110_300)),
            ],
        );
    }
    let held = BTreeSet::from([NodeId(0), NodeId(1)]);
    let est = estimate_holding(&ev, &held, &Options::default()).unwrap();
    let off = est.offset_ps(NodeId(2), t(5_000_000)).unwrap() / 1000;
    assert!((off - 40_000).abs() < 1_000, "{off}");
    // With node 0 held alone, node 2 is linked through node 1 and lands on
    // the same correction.
    let est = estimate_holding(&ev, &BTreeSet::from([NodeId(0)]), &Options::default()).unwrap();
    let alone = est.offset_ps(NodeId(2), t(5_000_000)).unwrap() / 1000;
    assert!((alone - 40_000).abs() < 1_000, "{alone}");
}

#[test]
fn holding_nothing_is_an_error() {
    let (ev, _) = SyntheticRun::default().generate();
    let e = estimate_holding(&ev, &BTreeSet::new(), &Options::default()).unwrap_err();
    assert!(matches!(e, Error::NoHeldNode), "{e}");
}
