//! Merge 8 nodes of 200 MB each (generated into a temporary folder with the
//! streaming writer) and print the time and the merge's peak memory (VmHWM).
//!
//! `cargo bench -p trace-merge --bench merge_large`; scale with
//! `MERGE_BENCH_NODES` and `MERGE_BENCH_MB`.

use std::path::Path;
use std::time::Instant;

use clock_model::NodeId;
use trace_merge::{MergeInput, MergeOptions, merge};
use xplane_proto::{
    PROFILE_START_TIME, XEvent, XEventMetadata, XLine, XPlane, XSpaceFile, XStat, XStatMetadata,
    x_event, x_stat,
};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| format!("{field} unavailable"))
}

/// One node: a host plane and 4 GPU planes of `lines` lines, written until
/// the file reaches about `target` bytes.
fn generate(path: &Path, node: u32, target: u64) -> u64 {
    let mut file = XSpaceFile::create(path).unwrap();
    let w = file.writer();
    let stats_md: std::collections::BTreeMap<i64, XStatMetadata> = [
        (1, "hlo_op"),
        (2, "fusion.1"),
        (3, "all-reduce.7"),
        (4, "run_id"),
        (5, "correlation_id"),
    ]
    .into_iter()
    .map(|(id, name)| {
        (
            id,
            XStatMetadata {
                id,
                name: name.into(),
                description: String::new(),
            },
        )
    })
    .collect();
    let events_md = (1..=20)
        .map(|id| {
            (
                id,
                XEventMetadata {
                    id,
                    name: format!("kernel_{id}"),
                    ..Default::default()
                },
            )
        })
        .collect();
    let planes = [
        "/host:CPU",
        "/device:GPU:0",
        "/device:GPU:1",
        "/device:GPU:2",
        "/device:GPU:3",
    ];
    let per_plane = target / planes.len() as u64;
    let mut event = XEvent {
        metadata_id: 1,
        data: Some(x_event::Data::OffsetPs(0)),
        duration_ps: 2_500_000,
        stats: vec![
            XStat {
                metadata_id: 1,
                value: Some(x_stat::Value::RefValue(2)),
            },
            XStat {
                metadata_id: 4,
                value: Some(x_stat::Value::Int64Value(0)),
            },
            XStat {
                metadata_id: 5,
                value: Some(x_stat::Value::Uint64Value(0)),
            },
        ],
    };
    let mut n = 0u64;
    for (k, name) in planes.iter().enumerate() {
        let start = w.position();
        w.begin_plane(k as i64, name).unwrap();
        let mut line = 0;
        while w.position() - start < per_plane {
            w.begin_line(&XLine {
                id: 100 + line,
                timestamp_ns: 1_000 + line,
                ..Default::default()
            })
            .unwrap();
            for i in 0..50_000i64 {
                event.metadata_id = 1 + (i % 20);
                event.data = Some(x_event::Data::OffsetPs(i * 3_000_000));
                event.stats[0].value = Some(x_stat::Value::RefValue(2 + (i % 2) as u64));
                event.stats[1].value = Some(x_stat::Value::Int64Value(i / 7));
                event.stats[2].value = Some(x_stat::Value::Uint64Value(n));
                w.event(&event).unwrap();
                n += 1;
            }
            w.end_line().unwrap();
            line += 1;
        }
        w.end_plane(&events_md, &stats_md, &[]).unwrap();
    }
    w.plane(&XPlane {
        name: "Task Environment".into(),
        stat_metadata: [(
            1,
            XStatMetadata {
                id: 1,
                name: PROFILE_START_TIME.into(),
                description: String::new(),
            },
        )]
        .into(),
        stats: vec![XStat {
            metadata_id: 1,
            value: Some(x_stat::Value::Uint64Value(
                1_765_432_100_000_000_000 + node as u64,
            )),
        }],
        ..Default::default()
    })
    .unwrap();
    file.commit(&[format!("node{node}")], &[], &[]).unwrap();
    n
}

fn main() {
    // `cargo bench` passes --bench; any other argument (e.g. a filter) is ignored.
    let nodes = env("MERGE_BENCH_NODES", 8) as u32;
    let mb = env("MERGE_BENCH_MB", 200);
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let mut inputs = Vec::new();
    let mut events = 0;
    let mut bytes = 0;
    for node in 0..nodes {
        let path = dir.path().join(format!("node{node}.xplane.pb"));
        events += generate(&path, node, mb << 20);
        bytes += std::fs::metadata(&path).unwrap().len();
        inputs.push(MergeInput::new(NodeId(node), path));
    }
    println!(
        "generated {nodes} nodes, {:.0} MB, {events} events in {:.1} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    // Reset the peak-RSS counter so VmHWM covers only the merge.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    println!("before merge: {}", status("VmHWM"));
    let out = dir.path().join("merged.xplane.pb");
    let t = Instant::now();
    let report = merge(&inputs, &MergeOptions::default(), &out).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let out_bytes = std::fs::metadata(&out).unwrap().len();
    println!(
        "merged {} events, {:.0} MB -> {:.0} MB in {secs:.2} s ({:.0} MB/s, {:.1} M events/s)",
        report.events,
        bytes as f64 / 1e6,
        out_bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs,
        report.events as f64 / 1e6 / secs
    );
    println!("merge peak: {}", status("VmHWM"));
    assert_eq!(report.events, events);
}
