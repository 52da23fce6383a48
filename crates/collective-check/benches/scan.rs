//! Scan speed: extract collectives from a synthetic XSpace of 10 M events.
//!
//! Four `/device:GPU:<k>` planes of 25 lines × 100 000 events; every event
//! carries an interned `hlo_op` and a `correlation_id`, so the scanner must
//! look at the stats of every event; 1 in 100 is a collective (half by NCCL
//! kernel name, half by `hlo_op` only).
//!
//! Run: `cargo bench -p collective-check --bench scan`

use std::hint::black_box;
use std::path::Path;

use collective_check::{Extraction, NodeId, NodeSource, Options, extract_bytes};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use xplane_proto::prost::Message;
use xplane_proto::prost::encoding::{WireType, encode_key, encode_varint, message};
use xplane_proto::{XEvent, XEventMetadata, XLine, XPlane, XStat, XStatMetadata, x_event, x_stat};

const PLANES: usize = 4;
const LINES: usize = 25;
const EVENTS_PER_LINE: usize = 100_000;
const EVENTS: usize = PLANES * LINES * EVENTS_PER_LINE;

fn plane_header(k: usize) -> XPlane {
    let mut plane = XPlane {
        id: k as i64,
        name: format!("/device:GPU:{k}"),
        ..Default::default()
    };
    let mut stat = |id: i64, name: &str| {
        plane.stat_metadata.insert(
            id,
            XStatMetadata {
                id,
                name: name.into(),
                description: String::new(),
            },
        );
    };
    stat(1, "hlo_op");
    stat(2, "correlation_id");
    stat(3, "run_id");
    for i in 0..40 {
        stat(100 + i, &format!("fusion.{i}"));
    }
    stat(200, "all-reduce-start.1");
    for i in 0..40 {
        let name = if i == 0 {
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL".to_owned()
        } else {
            format!("loop_fusion_kernel_{i}")
        };
        plane.event_metadata.insert(
            1 + i,
            XEventMetadata {
                id: 1 + i,
                name,
                ..Default::default()
            },
        );
    }
    plane
}

fn line(k: usize, l: usize) -> XLine {
    let events = (0..EVENTS_PER_LINE)
        .map(|i| {
            let n = (l * EVENTS_PER_LINE + i) as i64;
            let (metadata_id, hlo) = match i % 200 {
                0 => (1, 200),   // NCCL kernel by name
                100 => (2, 200), // all-reduce by hlo_op only
                _ => (2 + (i % 39) as i64, 100 + (i % 40) as i64),
            };
            let mut stats = vec![
                XStat {
                    metadata_id: 1,
                    value: Some(x_stat::Value::RefValue(hlo as u64)),
                },
                XStat {
                    metadata_id: 2,
                    value: Some(x_stat::Value::Int64Value(n)),
                },
            ];
            if hlo == 200 {
                stats.push(XStat {
                    metadata_id: 3,
                    value: Some(x_stat::Value::Int64Value(n / 100)),
                });
            }
            XEvent {
                metadata_id,
                data: Some(x_event::Data::OffsetPs(i as i64 * 2_000_000)),
                duration_ps: 1_500_000,
                stats,
            }
        })
        .collect();
    XLine {
        id: (k * LINES + l) as i64,
        name: format!("Stream #{l}"),
        timestamp_ns: 1_000,
        events,
        ..Default::default()
    }
}

/// Encode the space plane by plane and line by line, so only one line of
/// owned events is alive at a time.
fn build() -> Vec<u8> {
    let mut space = Vec::new();
    for k in 0..PLANES {
        let mut plane = plane_header(k).encode_to_vec();
        for l in 0..LINES {
            message::encode(3, &line(k, l), &mut plane);
        }
        encode_key(1, WireType::LengthDelimited, &mut space);
        encode_varint(plane.len() as u64, &mut space);
        space.extend_from_slice(&plane);
    }
    space
}

fn scan(c: &mut Criterion) {
    let bytes = build();
    let options = Options::default();
    let run = || {
        let mut ex = Extraction::new();
        extract_bytes(
            black_box(&bytes),
            Path::new("synthetic.xplane.pb"),
            NodeSource::Given(NodeId(0)),
            &options,
            &mut ex,
        )
        .unwrap();
        ex
    };
    let ex = run();
    assert_eq!(ex.stats.events_scanned, EVENTS as u64);
    assert_eq!(ex.stats.collectives, (EVENTS / 100) as u64);
    eprintln!(
        "synthetic XSpace: {} events, {:.0} MB",
        EVENTS,
        bytes.len() as f64 / 1e6
    );

    let mut group = c.benchmark_group("scan");
    group.sample_size(10);
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.bench_function("extract_10M_events", |b| b.iter(run));
    group.finish();
}

criterion_group!(benches, scan);
criterion_main!(benches);
