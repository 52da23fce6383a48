//! Merge node files from the command line, or write synthetic GPU node files
//! (used by `scripts/check-with-xprof.sh`).
//!
//! ```text
//! cargo run -p trace-merge --example merge_files -- merge OUT NODE=PATH...
//! cargo run -p trace-merge --example merge_files -- synth DIR NODES GPUS
//! ```

use std::process::ExitCode;

use trace_merge::{MergeInput, MergeOptions, merge};
use xplane_proto::{
    PROFILE_START_TIME, PROFILE_STOP_TIME, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat,
    XStatMetadata, write_xspace, x_event, x_stat,
};

fn plane(name: &str, id: i64, node: u32, lines: i64, events: i64) -> XPlane {
    let md = |id: i64, name: &str| {
        (
            id,
            XStatMetadata {
                id,
                name: name.into(),
                description: String::new(),
            },
        )
    };
    XPlane {
        id,
        name: name.into(),
        lines: (0..lines)
            .map(|l| XLine {
                id: 100 + l,
                name: format!("Stream #{l}"),
                timestamp_ns: 1_000_000 + l * 1_000,
                events: (0..events)
                    .map(|e| XEvent {
                        metadata_id: 1 + e % 2,
                        data: Some(x_event::Data::OffsetPs(e * 2_000_000)),
                        duration_ps: 1_000_000,
                        stats: vec![XStat {
                            metadata_id: 1,
                            value: Some(x_stat::Value::RefValue(2)),
                        }],
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        event_metadata: (1..=2)
            .map(|i| {
                (
                    i,
                    XEventMetadata {
                        id: i,
                        name: format!("kernel_{i}_node{node}"),
                        ..Default::default()
                    },
                )
            })
            .collect(),
        stat_metadata: [md(1, "hlo_op"), md(2, "all-reduce.1")].into(),
        stats: vec![],
    }
}

fn synth(dir: &str, nodes: u32, gpus: u32) -> Result<(), Box<dyn std::error::Error>> {
    let t0 = 1_765_432_100_000_000_000u64;
    for node in 0..nodes {
        let mut planes = vec![plane("/host:CPU", 0, node, 2, 30)];
        for k in 0..gpus {
            planes.push(plane(&format!("/device:GPU:{k}"), k as i64, node, 2, 20));
        }
        planes.push(XPlane {
            name: "Task Environment".into(),
            stat_metadata: [
                (
                    1,
                    XStatMetadata {
                        id: 1,
                        name: PROFILE_START_TIME.into(),
                        description: String::new(),
                    },
                ),
                (
                    2,
                    XStatMetadata {
                        id: 2,
                        name: PROFILE_STOP_TIME.into(),
                        description: String::new(),
                    },
                ),
            ]
            .into(),
            stats: vec![
                XStat {
                    metadata_id: 1,
                    value: Some(x_stat::Value::Uint64Value(t0)),
                },
                XStat {
                    metadata_id: 2,
                    value: Some(x_stat::Value::Uint64Value(t0 + 1_000_000_000)),
                },
            ],
            ..Default::default()
        });
        planes.push(XPlane {
            name: "/host:snapshots".into(),
            ..plane("/host:snapshots", 0, node, 1, 3)
        });
        let space = XSpace {
            planes,
            hostnames: vec![format!("host{node}")],
            ..Default::default()
        };
        write_xspace(format!("{dir}/node{node}.xplane.pb"), &space)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result: Result<(), Box<dyn std::error::Error>> = match args.first().map(String::as_str) {
        Some("synth") if args.len() == 4 => synth(
            &args[1],
            args[2].parse().unwrap_or(0),
            args[3].parse().unwrap_or(0),
        ),
        Some("merge") if args.len() >= 3 => (|| {
            let mut inputs = Vec::new();
            for spec in &args[2..] {
                let (node, path) = spec
                    .split_once('=')
                    .ok_or(format!("expected NODE=PATH, got {spec:?}"))?;
                inputs.push(MergeInput::new(node.parse()?, path));
            }
            let report = merge(&inputs, &MergeOptions::default(), &args[1])?;
            println!("{}", serde_json::to_string(&report)?);
            Ok(())
        })(),
        _ => Err("usage: merge OUT NODE=PATH... | synth DIR NODES GPUS".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
