//! Read + retime + write of a large Kineto trace, in MB/s of uncompressed
//! JSON on one core, against Python's `json.load` + `json.dump` of the same
//! file in the same run; with each phase's peak memory.
//!
//! Run with `cargo bench -p kineto-trace --bench retime_large`. It builds a
//! trace of `KINETO_BENCH_MB` MB (default 256) by repeating the events of the
//! recorded fixture `n2_gloo_100steps/rank0` (each copy shifted by the
//! fixture's length so times keep increasing), then runs each phase in a
//! child process of its own so its peak resident memory (`VmHWM`) is its
//! own; for the memory-mapped reader that includes the file pages it
//! touched. The same file gzipped is then read and rewritten (gzip out, as
//! in). `KINETO_BENCH_PYTHON=0` skips the Python phase (which needs
//! several times the file in memory).

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kineto_trace::{EpochNs, TraceFile, retime_file};

const PHASE_VAR: &str = "KINETO_BENCH_PHASE";

fn main() {
    if let Ok(phase) = std::env::var(PHASE_VAR) {
        let mut args = std::env::args().skip(1);
        let input = PathBuf::from(args.next().expect("input"));
        let output = PathBuf::from(args.next().expect("output"));
        run_phase(&phase, &input, &output);
        return;
    }
    let mb: u64 = std::env::var("KINETO_BENCH_MB")
        .ok()
        .map(|s| s.parse().expect("KINETO_BENCH_MB is a number"))
        .unwrap_or(256);
    let python = std::env::var("KINETO_BENCH_PYTHON").map_or(true, |v| v != "0");
    let dir = tempfile::tempdir().expect("temporary folder");
    let input = dir.path().join("rank0.pt.trace.json");
    let output = dir.path().join("out").join("rank0.pt.trace.json");
    std::fs::create_dir(output.parent().unwrap()).unwrap();
    let events = synthesise(&input, mb * 1_000_000);
    let size = std::fs::metadata(&input).unwrap().len();
    println!("trace: {events} events, {:.1} MB", size as f64 / 1e6);
    println!(
        "baseline        {}",
        child("baseline", &input, &output, size)
    );
    println!("read            {}", child("read", &input, &output, size));
    println!("retime + write  {}", child("retime", &input, &output, size));
    println!("retime (2)      {}", child("retime", &input, &output, size));
    let gz = dir.path().join("rank0.pt.trace.json.gz");
    compress(&input, &gz);
    let gz_out = output.with_extension("json.gz");
    println!("read .gz        {}", child("read", &gz, &gz_out, size));
    println!("retime .gz      {}", child("retime", &gz, &gz_out, size));
    if python {
        println!("python json     {}", python_phase(&input, &output, size));
    }
}

fn child(phase: &str, input: &Path, output: &Path, size: u64) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(input)
        .arg(output)
        .env(PHASE_VAR, phase)
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "phase {phase} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut parts = text.trim().splitn(3, ' ');
    let secs: f64 = parts.next().unwrap().parse().unwrap();
    let cpu: f64 = parts.next().unwrap().parse().unwrap();
    let rest = parts.next().unwrap_or("");
    if phase == "baseline" {
        return rest.to_string();
    }
    figures(size, secs, cpu, rest)
}

fn figures(size: u64, secs: f64, cpu: f64, rest: &str) -> String {
    let mb = size as f64 / 1e6;
    format!(
        "{secs:.2} s wall ({:.0} MB/s), {cpu:.2} s on CPU ({:.0} MB/s), {rest}",
        mb / secs,
        mb / cpu
    )
}

fn run_phase(phase: &str, input: &Path, output: &Path) {
    let start = Instant::now();
    let summary = match phase {
        "baseline" => String::new(),
        "read" => {
            let file = TraceFile::open(input).unwrap();
            let trace = file.parse().unwrap();
            let (mut n, mut sum) = (0u64, 0i128);
            for e in trace.events() {
                let e = e.unwrap();
                n += 1;
                sum += i128::from(e.ts_ns().map_or(0, |t| t.0) + e.dur_ns().map_or(0, |d| d.0));
            }
            format!("({n} events, checksum {sum})")
        }
        "retime" => {
            let file = TraceFile::open(input).unwrap();
            let t0 = 1_790_000_000_000_000_000i64;
            // 3.7 ms back and 25 ppm slower: every ts and dur changes.
            let map = move |t: EpochNs| EpochNs(t.0 - 3_700_000 - (t.0 - t0) / 40_000);
            let stats = retime_file(&file, output, &map, &"bench").unwrap();
            format!(
                "({} events, {} ts and {} dur changed)",
                stats.events, stats.ts_changed, stats.dur_changed
            )
        }
        other => panic!("unknown phase {other}"),
    };
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{secs:.3} {:.3} peak RSS {:.0} MB {summary}",
        cpu_secs(),
        vm_hwm_kb() as f64 / 1024.0
    );
}

/// Time this process has spent on a CPU (`/proc/self/schedstat`, ns), so
/// that the figure does not depend on what else the machine runs.
fn cpu_secs() -> f64 {
    let s = std::fs::read_to_string("/proc/self/schedstat").unwrap();
    s.split_whitespace().next().unwrap().parse::<f64>().unwrap() / 1e9
}

fn python_phase(input: &Path, output: &Path, size: u64) -> String {
    let script = "import json, resource, sys, time\n\
                  t, c = time.perf_counter(), time.process_time()\n\
                  with open(sys.argv[1]) as f: d = json.load(f)\n\
                  with open(sys.argv[2], 'w') as f: json.dump(d, f)\n\
                  s, c = time.perf_counter() - t, time.process_time() - c\n\
                  print(s, c, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(input)
        .arg(output)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut parts = text.split_whitespace();
    let secs: f64 = parts.next().unwrap().parse().unwrap();
    let cpu: f64 = parts.next().unwrap().parse().unwrap();
    let kb: f64 = parts.next().unwrap().parse().unwrap();
    let rest = format!("peak RSS {:.0} MB (json.load + json.dump)", kb / 1024.0);
    figures(size, secs, cpu, &rest)
}

/// gzip `input` into `output` (fast level: the bench measures reading).
fn compress(input: &Path, output: &Path) {
    let mut src = std::fs::File::open(input).unwrap();
    let dst = BufWriter::new(std::fs::File::create(output).unwrap());
    let mut gz = flate2::write::GzEncoder::new(dst, flate2::Compression::fast());
    std::io::copy(&mut src, &mut gz).unwrap();
    gz.finish().unwrap().flush().unwrap();
}

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// Write a trace of about `bytes` bytes: the fixture's top level with its
/// events repeated, each copy's `ts` moved on by the fixture's span.
fn synthesise(path: &Path, bytes: u64) -> u64 {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/kineto-gloo/n2_gloo_100steps/rank0.pt.trace.json.gz");
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&fixture).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    let file = TraceFile::from_bytes(text, &fixture, kineto_trace::Compression::None);
    let trace = file.parse().unwrap();
    let events: Vec<_> = trace.events().map(Result::unwrap).collect();
    let first = events.iter().filter_map(|e| e.ts_ns()).min().unwrap().0;
    let last = events.iter().filter_map(|e| e.ts_ns()).max().unwrap().0;
    let span = last - first + 1_000;
    let array = trace.events_member().value.clone();
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    w.write_all(&file[..array.start + 1]).unwrap();
    let (mut written, mut count, mut copy) = (0u64, 0u64, 0i64);
    let mut buf = Vec::new();
    while written < bytes {
        for e in &events {
            buf.clear();
            if count > 0 {
                buf.extend_from_slice(b",\n");
            }
            match &e.ts {
                Some(ts) => {
                    buf.extend_from_slice(&file[e.offset..ts.span.start]);
                    let ns = ts.value.ns + copy * span;
                    buf.extend_from_slice(format!("{}.{:03}", ns / 1000, ns % 1000).as_bytes());
                    buf.extend_from_slice(&file[ts.span.end..e.offset + e.raw.len()]);
                }
                None => buf.extend_from_slice(e.raw),
            }
            w.write_all(&buf).unwrap();
            written += buf.len() as u64;
            count += 1;
        }
        copy += 1;
    }
    w.write_all(b"\n  ]").unwrap();
    w.write_all(&file[array.end..]).unwrap();
    w.flush().unwrap();
    count
}
