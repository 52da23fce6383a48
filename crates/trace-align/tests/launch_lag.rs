//! Each Kineto rank's launch → kernel causality on the real PyTorch DDP
//! recording (four ranks on one H100, three of them under faked clocks that
//! CUPTI follows too), and on a rank whose GPU events were moved 50 ms
//! before their launches.

use std::path::{Path, PathBuf};

use alignment_core::AlignError;
use collective_check::NodeId;
use kineto_trace::{TraceFile, launches};
use trace_align::{RunError, kineto_launch_lags};

fn rank(r: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real-gpu-machine/kineto-cuda-4r-skew")
        .join(format!("rank{r}.pt.trace.json.gz"))
}

/// `path`'s trace, uncompressed, with the `ts` of every kernel, copy and
/// memset moved by `shift_ns` (their host launches left where they are).
fn gpu_shifted(path: &Path, shift_ns: i64) -> Vec<u8> {
    let file = TraceFile::open(path).unwrap();
    let trace = file.parse().unwrap();
    let found = launches(&trace).unwrap();
    let mut bytes = trace.bytes().to_vec();
    // Rewritten from the last so that earlier byte offsets stay valid.
    let mut kernels: Vec<usize> = found.kernels.iter().map(|k| k.2).collect();
    kernels.sort_unstable();
    let mut events: Vec<_> = trace
        .events()
        .map(Result::unwrap)
        .filter(|e| kernels.binary_search(&e.offset).is_ok())
        .map(|e| e.ts.unwrap())
        .collect();
    events.sort_by_key(|s| std::cmp::Reverse(s.span.start));
    for ts in events {
        let ns = ts.value.ns + shift_ns;
        let text = format!("{}.{:03}", ns.div_euclid(1000), ns.rem_euclid(1000));
        bytes.splice(ts.span.clone(), text.into_bytes());
    }
    bytes
}

/// The least and median lags per rank of `run.json`'s
/// `gpu_minus_launch_us` (read from the same files with float64 µs), ns.
const RUN_JSON_MIN_P50_NS: [(i64, i64); 4] = [
    (8_048, 285_413),
    (6_721, 278_125),
    (8_103, 283_110),
    (5_756, 283_972),
];

#[test]
fn real_ranks_lag_as_recorded() {
    let traces: Vec<(NodeId, PathBuf)> = (0..4).map(|r| (NodeId(r), rank(r))).collect();
    let lags = kineto_launch_lags(&traces).unwrap();
    for (r, want) in lags.iter().zip(RUN_JSON_MIN_P50_NS) {
        let lag = r.lag.clone().unwrap();
        assert!(lag.pairs > 6_900 && lag.unpaired == 0, "{lag:?}");
        assert!((lag.min_ns - want.0).abs() <= 1, "rank {}: {lag:?}", r.rank);
        // run.json's median of an even count averages the two middle lags.
        assert!(
            (lag.p50_ns - want.1).abs() <= 1_000,
            "rank {}: {lag:?}",
            r.rank
        );
        assert!(lag.earliest.place.starts_with("the event at byte "));
    }
}

#[test]
fn gpu_events_50ms_before_their_launches_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let shifted = dir.path().join("rank1.pt.trace.json");
    std::fs::write(&shifted, gpu_shifted(&rank(1), -50_000_000)).unwrap();
    let unshifted = kineto_launch_lags(&[(NodeId(1), rank(1))]).unwrap()[0]
        .lag
        .clone()
        .unwrap();
    let err =
        kineto_launch_lags(&[(NodeId(0), rank(0)), (NodeId(1), shifted.clone())]).unwrap_err();
    let RunError::Align {
        node,
        source:
            AlignError::KernelBeforeLaunch {
                path,
                correlation_id,
                lead_ns,
                ..
            },
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*node, NodeId(1));
    assert_eq!(path, &shifted);
    assert_eq!(*lead_ns, 50_000_000 - unshifted.min_ns);
    assert_eq!(*correlation_id, unshifted.earliest.correlation_id);
    let text = std::error::Error::source(&err).unwrap().to_string();
    assert!(text.contains(&format!("{lead_ns} ns before")), "{text}");
}
