//! The real JAX traces (all processes shared one clock): a known clock error
//! is put on one rank, described in an offsets file, and alignment must
//! give back the original times exactly.

use std::path::PathBuf;

use crate::common;
use clock_model::NodeId;
use common::times;

use alignment_core::{AlignNode, NodeInput, OffsetsFile};
use xplane_proto::{
    PROFILE_START_TIME, XPlaneExt, XSpace, read_xspace, session_start_ns, write_xspace, x_stat,
};

fn fixture(run: &str, rank: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/jax-cpu")
        .join(run)
        .join(format!("rank{rank}.xplane.pb"))
}

/// Shift a trace's whole clock by `shift_ns` (as a clock `shift_ns` ahead
/// would have recorded it): only the session start moves.
fn shifted(space: &XSpace, shift_ns: i64) -> XSpace {
    let mut space = space.clone();
    let env = space
        .planes
        .iter_mut()
        .find(|p| p.name == "Task Environment")
        .unwrap();
    let id = env.stat_id(PROFILE_START_TIME).unwrap();
    let stat = env.stats.iter_mut().find(|s| s.metadata_id == id).unwrap();
    let Some(x_stat::Value::Uint64Value(v)) = stat.value else {
        panic!("uint64 start")
    };
    stat.value = Some(x_stat::Value::Uint64Value((v as i64 + shift_ns) as u64));
    space
}

#[test]
fn a_known_clock_error_on_a_real_rank_is_undone() {
    let run = "n2_shardmap_psum_50steps";
    let original = read_xspace(fixture(run, 1)).unwrap();
    let t_sess = session_start_ns(&original) as i64;
    // Rank 1's clock is 5 ms ahead: two probe rounds measure it (own windows
    // on its clock) 0.5 s before and 1.5 s after the session start.
    let shift_ns: i64 = 5_000_000;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("rank1.xplane.pb");
    write_xspace(&trace, &shifted(&original, shift_ns)).unwrap();
    let reference = read_xspace(fixture(run, 0)).unwrap();
    let t_ref = session_start_ns(&reference);
    let mut offsets = format!(
        "{{\"meta\":true,\"nodes\":[{{\"node_id\":0,\"start_walltime_ns\":{t_ref}}},{{\"node_id\":1,\"start_walltime_ns\":{}}}]}}\n",
        t_sess + shift_ns
    );
    for (round, mid) in [(0, t_sess - 500_000_000), (1, t_sess + 1_500_000_000)] {
        let (ws, we) = (mid - 2_000_000_000, mid + 2_000_000_000);
        offsets += &format!(
            "{{\"round_id\":{round},\"window_start_ns\":{ws},\"window_end_ns\":{we},\"node_id\":0,\"offset_ns\":0}}\n"
        );
        offsets += &format!(
            "{{\"round_id\":{round},\"window_start_ns\":{},\"window_end_ns\":{},\"node_id\":1,\"offset_ns\":{shift_ns}}}\n",
            ws + shift_ns,
            we + shift_ns
        );
    }
    std::fs::write(dir.path().join("round_offsets.jsonl"), offsets).unwrap();
    let offsets = OffsetsFile::read(dir.path().join("round_offsets.jsonl")).unwrap();
    let out = dir.path().join("aligned.xplane.pb");
    let input = NodeInput {
        node_id: NodeId(1),
        trace,
        ..Default::default()
    };
    let diag = AlignNode::new(&input, &offsets)
        .session_start_ns(t_ref)
        .to_file(&out)
        .unwrap();
    assert!(diag.events_corrected > 1000);
    assert!(
        diag.lines
            .iter()
            .all(|l| l.clock != alignment_core::LineClock::Tracer)
    );
    let aligned = read_xspace(&out).unwrap();
    assert_eq!(session_start_ns(&aligned), t_ref);
    assert_eq!(times(&aligned, "/host:CPU"), times(&original, "/host:CPU"));
    // Nothing but times changed: same planes, lines, metadata, stats.
    assert_eq!(aligned.planes.len(), original.planes.len());
    for (a, o) in aligned.planes.iter().zip(&original.planes) {
        assert_eq!((a.id, &a.name), (o.id, &o.name));
        if a.name == "/host:CPU" {
            assert_eq!(a.event_metadata, o.event_metadata);
            assert_eq!(a.stat_metadata, o.stat_metadata);
            assert_eq!(a.lines.len(), o.lines.len());
            for (la, lo) in a.lines.iter().zip(&o.lines) {
                let stats = |l: &xplane_proto::XLine| {
                    l.events.iter().map(|e| e.stats.clone()).collect::<Vec<_>>()
                };
                assert_eq!(stats(la), stats(lo));
            }
        }
    }
}
