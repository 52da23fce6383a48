//! Property test: random traces, including events that overlap without
//! nesting, odd picoseconds and every kind of stat, come back from the
//! Perfetto writer event for event.

use crate::common;

use proptest::prelude::*;
use prost::Message;
use xplane_proto::{
    XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, x_event, x_stat,
};

/// Stat metadata: 1..=3 are names, 10..=12 interned strings.
fn stat_metadata() -> std::collections::BTreeMap<i64, XStatMetadata> {
    [
        (1, "run_id"),
        (2, "hlo_op"),
        (3, "bytes"),
        (10, "fusion.1"),
        (11, "all-reduce.3"),
        (12, ""),
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
    .collect()
}

fn stat() -> impl Strategy<Value = XStat> {
    let value = prop_oneof![
        any::<i64>().prop_map(x_stat::Value::Int64Value),
        any::<u64>().prop_map(x_stat::Value::Uint64Value),
        (-1e12f64..1e12).prop_map(x_stat::Value::DoubleValue),
        "[a-z\"\\\\ ·]{0,8}".prop_map(x_stat::Value::StrValue),
        (10u64..=12).prop_map(x_stat::Value::RefValue),
        proptest::collection::vec(any::<u8>(), 0..4).prop_map(x_stat::Value::BytesValue),
    ];
    (1i64..=3, value).prop_map(|(metadata_id, v)| XStat {
        metadata_id,
        value: Some(v),
    })
}

fn event() -> impl Strategy<Value = XEvent> {
    (
        1i64..=4,
        0i64..50_000_000,
        0i64..20_000_000,
        proptest::collection::vec(stat(), 0..3),
    )
        .prop_map(|(metadata_id, offset, duration, stats)| XEvent {
            metadata_id,
            data: Some(x_event::Data::OffsetPs(offset)),
            duration_ps: duration,
            stats,
        })
}

fn line() -> impl Strategy<Value = XLine> {
    (
        0i64..5,
        0i64..1_000_000,
        proptest::collection::vec(event(), 0..25),
    )
        .prop_map(|(id, ts, events)| XLine {
            id,
            name: format!("line {id}"),
            timestamp_ns: ts,
            events,
            ..Default::default()
        })
}

fn plane() -> impl Strategy<Value = XPlane> {
    let name = prop_oneof![
        Just("/host:CPU".to_owned()),
        (0u32..3).prop_map(|k| format!("/device:GPU:{k}")),
        Just("/custom".to_owned())
    ];
    (name, proptest::collection::vec(line(), 1..3)).prop_map(|(name, lines)| XPlane {
        name,
        lines,
        event_metadata: (1..=4)
            .map(|id| {
                (
                    id,
                    XEventMetadata {
                        id,
                        name: format!("op{id}"),
                        ..Default::default()
                    },
                )
            })
            .collect(),
        stat_metadata: stat_metadata(),
        ..Default::default()
    })
}

fn space() -> impl Strategy<Value = XSpace> {
    (
        proptest::collection::vec(plane(), 1..3),
        0u64..2_000_000_000_000_000_000,
    )
        .prop_map(|(mut planes, start)| {
            let mut env = XPlane {
                name: "Task Environment".into(),
                ..Default::default()
            };
            env.stat_metadata.insert(
                1,
                XStatMetadata {
                    id: 1,
                    name: "profile_start_time".into(),
                    description: String::new(),
                },
            );
            env.stats.push(XStat {
                metadata_id: 1,
                value: Some(x_stat::Value::Uint64Value(start)),
            });
            planes.push(env);
            XSpace {
                planes,
                ..Default::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_traces_round_trip(spaces in proptest::collection::vec(space(), 1..3)) {
        let nodes: Vec<(u32, Vec<u8>)> = spaces
            .iter()
            .enumerate()
            .map(|(n, s)| (n as u32 * 3, s.encode_to_vec()))
            .collect();
        common::round_trip(&nodes);
    }
}
