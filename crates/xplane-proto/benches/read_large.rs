//! Reading a large XSpace: the zero-copy reader (memory-mapped) against the
//! full prost decode, in time and peak memory.
//!
//! Run with `cargo bench -p xplane-proto --bench read_large`. It writes a
//! synthetic trace (`XPLANE_BENCH_EVENTS` events, default 22 million, two
//! stats each; about 600 MB) with the streaming writer into a temporary
//! folder, then measures each phase in a child process of its own so that
//! its peak resident memory (`VmHWM`) is its own. For the memory-mapped
//! reader the peak includes the file pages it touched.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use xplane_proto::{
    FileBytes, StatValue, XEvent, XEventMetadata, XLine, XSpaceWriter, XStat, XStatMetadata,
    x_event, x_stat,
};

const PLANES: u64 = 4;
const LINES_PER_PLANE: u64 = 8;
const EVENT_NAMES: i64 = 50;
const PHASE_VAR: &str = "XPLANE_BENCH_PHASE";

fn main() {
    if let Ok(phase) = std::env::var(PHASE_VAR) {
        let path = PathBuf::from(std::env::args().nth(1).expect("file argument"));
        run_phase(&phase, &path);
        return;
    }
    let events: u64 = std::env::var("XPLANE_BENCH_EVENTS")
        .ok()
        .map(|s| s.parse().expect("XPLANE_BENCH_EVENTS is a number"))
        .unwrap_or(22_000_000);
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("large.xplane.pb");
    let start = Instant::now();
    synthesise(&path, events);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "wrote {events} events, {:.1} MB, with the streaming writer in {:.2} s",
        size as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    println!("baseline  {}", child("baseline", &path));
    println!("walk      {}", child("walk", &path));
    println!("walk (2)  {}", child("walk", &path));
    println!("decode    {}", child("decode", &path));
}

/// Run one phase in a fresh process and return its report line.
fn child(phase: &str, path: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(path)
        .env(PHASE_VAR, phase)
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "phase {phase} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn run_phase(phase: &str, path: &Path) {
    let start = Instant::now();
    let summary = match phase {
        "baseline" => "no reading".to_string(),
        "walk" => {
            let file = FileBytes::open(path).unwrap();
            let (events, stats, sum) = walk(&file);
            format!("{events} events, {stats} stats, checksum {sum}")
        }
        "decode" => {
            let space = FileBytes::open(path).unwrap().decode().unwrap();
            let events: usize = space
                .planes
                .iter()
                .flat_map(|p| &p.lines)
                .map(|l| l.events.len())
                .sum();
            format!("{events} events")
        }
        other => panic!("unknown phase {other}"),
    };
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{secs:.3} s, peak RSS {:.1} MB ({summary})",
        vm_hwm_kb() as f64 / 1024.0
    );
}

/// Visit every event and every stat, folding their values so that nothing
/// can be optimised away.
fn walk(file: &FileBytes) -> (u64, u64, i128) {
    let (mut events, mut stats, mut sum) = (0u64, 0u64, 0i128);
    for plane in file.checked_view().unwrap().planes() {
        for line in plane.unwrap().lines() {
            let line = line.unwrap();
            for event in line.events() {
                let event = event.unwrap();
                events += 1;
                sum += (event.offset_ps() + event.duration_ps) as i128;
                for stat in event.stats() {
                    let stat = stat.unwrap();
                    stats += 1;
                    sum += match stat.value {
                        Some(StatValue::Int64(v)) => v as i128,
                        Some(StatValue::Ref(v)) => v as i128,
                        Some(v) => v.as_integer().unwrap_or(0),
                        None => 0,
                    };
                }
            }
        }
    }
    (events, stats, sum)
}

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

fn synthesise(path: &Path, events: u64) {
    let file = File::create(path).unwrap();
    let mut w = XSpaceWriter::new(BufWriter::with_capacity(1 << 20, file));
    let per_line = events / (PLANES * LINES_PER_PLANE);
    let event_metadata: BTreeMap<i64, XEventMetadata> = (1..=EVENT_NAMES)
        .map(|id| {
            let m = XEventMetadata {
                id,
                name: format!("fusion.{id}"),
                ..Default::default()
            };
            (id, m)
        })
        .collect();
    let stat_metadata: BTreeMap<i64, XStatMetadata> = ["run_id", "hlo_op"]
        .iter()
        .zip(1..)
        .chain(
            [("all-reduce.1", 3), ("fusion.2", 4)]
                .iter()
                .map(|(n, i)| (n, *i)),
        )
        .map(|(name, id)| {
            let m = XStatMetadata {
                id,
                name: name.to_string(),
                description: String::new(),
            };
            (id, m)
        })
        .collect();
    let mut event = XEvent::default();
    for p in 0..PLANES {
        w.begin_plane(p as i64, &format!("/device:GPU:{p}"))
            .unwrap();
        for l in 0..LINES_PER_PLANE {
            let header = XLine {
                id: -(l as i64) - 1,
                name: format!("Stream #{l}"),
                timestamp_ns: 1_000 * l as i64,
                ..Default::default()
            };
            w.begin_line(&header).unwrap();
            for i in 0..per_line as i64 {
                event.metadata_id = 1 + i % EVENT_NAMES;
                event.data = Some(x_event::Data::OffsetPs(i * 1_000_000));
                event.duration_ps = 500_000 + (i % 1000) * 7;
                event.stats = vec![
                    XStat {
                        metadata_id: 1,
                        value: Some(x_stat::Value::Int64Value(i / 8)),
                    },
                    XStat {
                        metadata_id: 2,
                        value: Some(x_stat::Value::RefValue(3 + (i % 2) as u64)),
                    },
                ];
                w.event(&event).unwrap();
            }
            w.end_line().unwrap();
        }
        w.end_plane(&event_metadata, &stat_metadata, &[]).unwrap();
    }
    w.finish(&[], &[], &[]).unwrap();
}
