//! The cross-node critical path: a slow node holds the steps' time, and
//! every step's path adds up to its length, on simulated and real runs.

use std::path::{Path, PathBuf};

use clock_model::NodeId;
use run_report::{Report, ReportOptions, render_html};
use trace_align::RunFiles;
use trace_synth::Straggler;

fn synth(straggler: Option<Straggler>) -> Report {
    crate::synth::report_of(30, straggler)
}

/// Every step's path covers the step once: its nodes' and its kinds'
/// times each add up to its length; the run's shares add up to one.
fn assert_adds_up(r: &Report) {
    let c = &r.critical_path;
    assert_eq!(c.steps.len(), r.steps.steps.len());
    for s in &c.steps {
        let nodes: i64 = s.nodes.iter().map(|n| n.ns).sum();
        let kinds: i64 = s.kinds.iter().map(|k| k.ns).sum();
        assert_eq!(
            (nodes, kinds),
            (s.length_ns, s.length_ns),
            "step {}",
            s.step
        );
        if !s.segments.is_empty() {
            let covered: i64 = s.segments.iter().map(|g| g.end_ns - g.start_ns).sum();
            assert_eq!(covered, s.length_ns, "step {}", s.step);
            for pair in s.segments.windows(2) {
                assert_eq!(pair[0].end_ns, pair[1].start_ns, "step {}", s.step);
            }
        }
    }
    assert_eq!(c.steps_ns, c.steps.iter().map(|s| s.length_ns).sum::<i64>());
    let share: f64 = c.by_node.iter().map(|n| n.share).sum();
    assert!((share - 1.0).abs() < 1e-6, "{share}");
}

#[test]
fn a_straggler_holds_the_critical_path() {
    let r = synth(Some(Straggler {
        node: 2,
        delay_ns: 300_000,
    }));
    assert_adds_up(&r);
    let c = &r.critical_path;
    assert_eq!(c.by_node[0].node, NodeId(2), "{:?}", c.by_node);
    assert!(c.by_node[0].share > 0.5, "{:?}", c.by_node);
    assert_eq!(c.waits[0].node, NodeId(2), "{:?}", c.waits);
    // Every step goes through node 2, and the others wait for it its
    // delay less the natural stagger of the next-latest (up to 300 µs).
    let per_step = c.waits[0].ns / c.steps.len() as i64;
    assert!((100_000..=400_000).contains(&per_step), "{per_step}");
    let page = render_html(&r);
    assert!(page.contains("id=\"critical-path\""));
    assert!(
        page.contains("wait for rank 2"),
        "the table names the straggler"
    );
}

#[test]
fn without_a_straggler_no_node_holds_the_path_alone() {
    let r = synth(None);
    assert_adds_up(&r);
    let c = &r.critical_path;
    assert!(c.by_node[0].share < 0.7, "{:?}", c.by_node);
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

#[test]
fn the_real_cuda_run_has_a_path_for_every_step() {
    let run = RunFiles::discover(fixture("real-gpu-machine/kineto-cuda-4r-skew")).unwrap();
    let r = Report::build(&run, &ReportOptions::default()).unwrap();
    assert_adds_up(&r);
    assert_eq!(
        r.critical_path.by_node.len(),
        4,
        "{:?}",
        r.critical_path.by_node
    );
    // Its GPU work is launched from the host: kernels and launches are on
    // the path.
    let kinds: Vec<&str> = r
        .critical_path
        .by_kind
        .iter()
        .map(|k| k.kind.as_str())
        .collect();
    assert!(kinds.contains(&"cpu"), "{kinds:?}");
}

#[test]
fn jax_runs_have_a_path_for_every_step() {
    for name in [
        "jax-cpu/n4_shardmap_psum_50steps",
        "jax-cpu/n2x2dev_jit_allreduce_50steps",
    ] {
        let run = RunFiles::discover(fixture(name)).unwrap();
        let r = Report::build(&run, &ReportOptions::default()).unwrap();
        assert_adds_up(&r);
        assert!(!r.critical_path.by_node.is_empty(), "{name}");
    }
}

/// The path as Perfetto tracks: every stretch drawn once on its node's
/// track, at the report's times; one flow per move to another node, from
/// the stretch before to the one after.
#[test]
fn the_path_as_tracks_draws_every_stretch_and_every_move() {
    let r = synth(Some(Straggler {
        node: 2,
        delay_ns: 300_000,
    }));
    let c = &r.critical_path;
    let tracks = c.tracks(r.run_start_ns).unwrap();
    let slices: Vec<_> = tracks.iter().flat_map(|t| t.slices()).collect();
    let drawn: i64 = slices.iter().map(|s| s.end_ns - s.begin_ns).sum();
    assert_eq!(drawn, c.steps_ns, "every step's length, once");
    assert!(
        tracks
            .iter()
            .all(|t| t.name().starts_with(run_report::CRITICAL_PATH_TRACK))
    );
    let on_2: i64 = (tracks.iter().filter(|t| t.node() == NodeId(2)))
        .flat_map(|t| t.slices())
        .map(|s| s.end_ns - s.begin_ns)
        .sum();
    assert_eq!(on_2, c.by_node[0].ns, "node 2 holds the path");
    let mut ends: std::collections::BTreeMap<u64, Vec<perfetto_export::FlowStep>> =
        Default::default();
    for f in slices.iter().flat_map(|s| &s.flows) {
        ends.entry(f.id).or_default().push(f.step);
    }
    let hops: usize = c.steps.iter().map(|s| s.hops).sum();
    assert_eq!(ends.len(), hops);
    assert!(
        ends.values().all(|e| e.len() == 2),
        "each move starts once and ends once"
    );
}
