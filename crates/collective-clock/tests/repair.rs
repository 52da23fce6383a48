//! The laws of the repair maps on random runs whose nodes are misaligned
//! by up to 400 µs: every map moves times only forward, keeps their
//! order, changes no gap by more than the bound, is the identity away
//! from what it moved; the violations it reports left are those
//! `collective_check` finds through the maps; with instances far enough
//! apart for the bound, none is left.

use collective_check::{
    CollectiveKind, Extraction, NodeId, Occurrence, Participant, PermutePeers, PlaneChoice,
    ReplicaGroup, TimePs,
};
use collective_clock::{RepairBound, repair};
use proptest::prelude::*;

/// `instances` all-reduces 100 ms apart on `offsets.len()` nodes, node
/// `i`'s times shifted by `offsets[i]`; `times[k][i]` is node `i`'s
/// (start jitter, duration) in instance `k`, ns.
fn extraction(offsets: &[i64], times: &[Vec<(i64, i64)>]) -> Extraction {
    let mut ex = Extraction::new();
    let op = ex.intern("all-reduce.1");
    for (k, instance) in times.iter().enumerate() {
        for (i, &(jitter, duration)) in instance.iter().enumerate() {
            let begin = (k as i128 * 100_000_000 + i128::from(jitter + offsets[i])) * 1000;
            ex.push(Occurrence {
                participant: Participant {
                    node: NodeId(i as u32),
                    device: None,
                },
                kind: CollectiveKind::AllReduce,
                op,
                module: None,
                run_id: Some(k as i64),
                group: ReplicaGroup::All,
                peers: PermutePeers::NotLookedUp,
                correlation: None,
                begin: TimePs(begin),
                end: TimePs(begin + i128::from(duration) * 1000),
                on_device: true,
            });
        }
    }
    ex
}

/// Per instance, per node: (start jitter, duration), ns.
type Times = Vec<Vec<(i64, i64)>>;

fn run() -> impl Strategy<Value = (Vec<i64>, Times, u32)> {
    (2usize..6, 1usize..25).prop_flat_map(|(nodes, instances)| {
        (
            prop::collection::vec(-200_000i64..200_000, nodes),
            prop::collection::vec(
                prop::collection::vec((0i64..50_000, 1_000i64..100_000), nodes),
                instances,
            ),
            prop_oneof![Just(50_000u32), Just(100_000), Just(500_000)],
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn repair_maps_keep_order_and_the_bound_and_leave_no_violation(
        (offsets, times, ppm) in run()
    ) {
        let ex = extraction(&offsets, &times);
        let bound = RepairBound::from_ppm(ppm).unwrap();
        let r = repair(&ex, PlaneChoice::Auto, bound).unwrap();
        let b = i128::from(ppm);
        for (node, map) in &r.maps {
            let info = r.report.nodes.iter().find(|n| n.node == *node).unwrap();
            let [first, last] = info.moved_ns.map(|t| i128::from(t) * 1000);
            let at = |t: i128| map.map(clock_model::GlobalTime::from_ps(t)).time.as_ps();
            // Identity away from what it moves.
            for t in [first - 1_000_000, first - 1_000, last + 1_000, last + 1_000_000] {
                prop_assert_eq!(at(t), t);
            }
            // Forward only, order kept, gaps within the bound.
            let step = ((last - first) / 997).max(1);
            let samples: Vec<i128> = (0..=1_000).map(|k| first - 3 * step + k * step).collect();
            for w in samples.windows(2) {
                let (t, u) = (w[0], w[1]);
                prop_assert!(at(t) >= t);
                let (gap, moved) = (u - t, at(u) - at(t));
                prop_assert!(moved > 0, "order at {t}");
                prop_assert!((moved - gap).abs() <= gap * b / 1_000_000 + 2, "gap {gap} -> {moved}");
            }
            prop_assert!(info.max_shift_ns > 0 && info.raises > 0);
        }
        // The violations left are those the check finds through the maps.
        let mut through = Extraction::new();
        let op = through.intern("all-reduce.1");
        let checked = collective_check::check(&ex, &Default::default());
        for o in &checked.instances {
            for s in &o.slots {
                let moved = |t: TimePs| match r.maps.get(&s.participant.node) {
                    Some(m) => TimePs(m.map(clock_model::GlobalTime::from_ps(t.0)).time.as_ps()),
                    None => t,
                };
                through.push(Occurrence {
                    participant: s.participant,
                    kind: o.kind,
                    op,
                    module: None,
                    run_id: Some(o.index as i64),
                    group: ReplicaGroup::All,
                    peers: PermutePeers::NotLookedUp,
                    correlation: None,
                    begin: moved(s.begin_ps),
                    end: moved(s.end_ps),
                    on_device: true,
                });
            }
        }
        let after = collective_check::check(&through, &Default::default());
        prop_assert_eq!(r.report.violations_before, checked.summary.violations);
        prop_assert_eq!(r.report.violations_after, after.summary.violations);
        // 100 ms apart, 400 µs at most to repair at ≥ 5 %: nothing left.
        prop_assert_eq!(r.report.violations_after, 0);
        prop_assert!(r.report.unrepaired.is_empty());
        prop_assert_eq!(r.report.instances_checked, times.len());
        prop_assert!(r.report.instances_repaired >= r.report.violations_before);
    }
}

#[test]
fn an_early_end_on_the_node_that_begins_last_is_left_and_named() {
    // Node 0 has two devices; device 1 begins after device 0 has ended,
    // node 1 in between: no clock repair of node 0 can fix its own order.
    let mut ex = Extraction::new();
    let op = ex.intern("all-reduce.1");
    for (node, device, begin, end) in [(0, 0, 0, 1_000), (0, 1, 5_000, 9_000), (1, 0, 500, 9_000)] {
        ex.push(Occurrence {
            participant: Participant {
                node: NodeId(node),
                device: Some(device),
            },
            kind: CollectiveKind::AllReduce,
            op,
            module: None,
            run_id: Some(1),
            group: ReplicaGroup::All,
            peers: PermutePeers::NotLookedUp,
            correlation: None,
            begin: TimePs(begin * 1000),
            end: TimePs(end * 1000),
            on_device: true,
        });
    }
    let r = repair(&ex, PlaneChoice::Auto, RepairBound::DEFAULT).unwrap();
    assert_eq!(r.report.violations_before, 1);
    assert_eq!(r.report.violations_after, 1);
    let u = &r.report.unrepaired[0];
    assert_eq!((u.node, u.device), (NodeId(0), Some(0)));
    assert_eq!(u.cause, collective_clock::UnrepairedCause::SameNode);
    assert_eq!(u.by_ns, 4_000);
}
