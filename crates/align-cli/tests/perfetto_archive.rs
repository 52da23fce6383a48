//! `merge -o run.tar`: Perfetto's multi-machine archive, read back as a
//! TAR and its `perfetto_manifest` checked against Perfetto's published
//! format (<https://perfetto.dev/docs/reference/perfetto-manifest>), on the
//! recorded 4-rank CUDA run and a recorded 4-process JAX run.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::cli;
use perfetto_export::proto::{Trace, track_event};
use prost::Message;
use serde_json::Value;

/// The members of a ustar archive, each header checked as a reader checks
/// it: magic, checksum, octal size, a regular file, data padded to 512,
/// two zero blocks at the end.
fn read_tar(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    assert_eq!(bytes.len() % 512, 0, "an archive is whole blocks");
    let octal = |field: &[u8]| {
        let text = std::str::from_utf8(field).unwrap();
        u64::from_str_radix(text.trim_matches(|c| c == '\0' || c == ' '), 8).unwrap()
    };
    let mut members = Vec::new();
    let mut at = 0;
    loop {
        let h = &bytes[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            assert!(bytes[at + 512..at + 1024].iter().all(|&b| b == 0));
            assert_eq!(at + 1024, bytes.len(), "nothing after the end blocks");
            return members;
        }
        assert_eq!(&h[257..263], b"ustar\0", "ustar magic");
        assert_eq!(&h[263..265], b"00", "ustar version");
        assert_eq!(h[156], b'0', "a regular file");
        let mut blank = h.to_vec();
        blank[148..156].fill(b' ');
        let sum: u64 = blank.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(octal(&h[148..156]), sum, "header checksum");
        let name_end = h[..100].iter().position(|&b| b == 0).unwrap_or(100);
        let name = String::from_utf8(h[..name_end].to_vec()).unwrap();
        let size = octal(&h[124..136]) as usize;
        let data = bytes[at + 512..at + 512 + size].to_vec();
        at += 512 + size.div_ceil(512) * 512;
        members.push((name, data));
    }
}

const CLOCKS: [&str; 6] = [
    "REALTIME",
    "REALTIME_COARSE",
    "MONOTONIC",
    "MONOTONIC_COARSE",
    "MONOTONIC_RAW",
    "BOOTTIME",
];

/// Check `manifest` against the published format and the archive's
/// members; the machine name of each member.
fn check_manifest(manifest: &Value, members: &BTreeSet<String>) -> BTreeMap<String, String> {
    let top = manifest.as_object().unwrap();
    assert_eq!(top.len(), 1, "one top-level key");
    let m = &manifest["perfetto_manifest"];
    assert_eq!(m["version"], 1);
    let trace_time = &m["trace_time"];
    assert!(CLOCKS.contains(&trace_time["clock"].as_str().unwrap()));
    let files = m["files"].as_array().unwrap();
    let paths: BTreeSet<String> = files
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(&paths, members, "every trace listed, nothing else");
    assert!(paths.contains(trace_time["file"].as_str().unwrap()));
    let mut machines = BTreeMap::new();
    for f in files {
        let name = f["machine"]["name"].as_str().unwrap();
        assert!(!name.is_empty());
        assert!(f.get("machines").is_none(), "machine and machines exclude");
        if let Some(clocks) = f.get("clocks") {
            assert!(CLOCKS.contains(&clocks["clock"].as_str().unwrap()));
            assert!(paths.contains(clocks["sync_to"]["file"].as_str().unwrap()));
            assert!(CLOCKS.contains(&clocks["sync_to"]["clock"].as_str().unwrap()));
            assert_eq!(clocks["offset_ns"], 0, "the traces are aligned already");
        } else {
            assert_eq!(
                f["path"], trace_time["file"],
                "only the timeline is unrelated"
            );
        }
        machines.insert(f["path"].as_str().unwrap().to_owned(), name.to_owned());
    }
    for (key, value) in m["attributes"].as_object().unwrap() {
        assert!(key.starts_with("trace_align."), "{key}");
        assert!(value.is_string() || value.is_i64(), "{key}: {value}");
    }
    machines
}

/// Slices (begin events) and process names in a Perfetto trace.
fn slices_and_processes(bytes: &[u8]) -> (u64, BTreeSet<String>) {
    use perfetto_export::proto::trace_packet::Data;
    let mut packets = Trace::decode(bytes).unwrap().packet;
    let mut slices = 0;
    let mut processes = BTreeSet::new();
    while let Some(packet) = packets.pop() {
        match &packet.data {
            // A bundle of packets, deflated (zlib).
            Some(Data::CompressedPackets(deflated)) => {
                let mut plain = Vec::new();
                std::io::Read::read_to_end(
                    &mut flate2::read::ZlibDecoder::new(&deflated[..]),
                    &mut plain,
                )
                .unwrap();
                packets.extend(Trace::decode(&plain[..]).unwrap().packet);
            }
            Some(Data::TrackEvent(e)) if e.r#type == Some(track_event::Type::SliceBegin as i32) => {
                slices += 1
            }
            Some(Data::TrackDescriptor(d)) => {
                if let Some(p) = &d.process {
                    processes.extend(p.process_name.clone());
                }
            }
            _ => {}
        }
    }
    (slices, processes)
}

/// `merge --run-dir RUN -o run.tar` and `-o run.pftrace`: the archive's
/// members, by name, and the slices of the single merged trace.
fn archive_and_merged(run: &Path) -> (Vec<(String, Vec<u8>)>, u64, String) {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("run.tar");
    let out = cli()
        .arg("merge")
        .arg("--run-dir")
        .arg(run)
        .arg("-o")
        .arg(&tar)
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let merged = dir.path().join("run.pftrace");
    cli()
        .args(["merge", "-q", "--run-dir"])
        .arg(run)
        .arg("-o")
        .arg(&merged)
        .assert()
        .success();
    let (slices, _) = slices_and_processes(&std::fs::read(&merged).unwrap());
    (read_tar(&std::fs::read(&tar).unwrap()), slices, stdout)
}

fn fixture(run: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(run)
}

fn check_run(run: &str, word: &str, nodes: usize) {
    let (members, merged_slices, stdout) = archive_and_merged(&fixture(run));
    assert_eq!(members[0].0, "perfetto_manifest.json", "the manifest first");
    let traces: BTreeSet<String> = members[1..].iter().map(|(n, _)| n.clone()).collect();
    let expected: BTreeSet<String> = (0..nodes).map(|n| format!("{word}{n}.pftrace")).collect();
    assert_eq!(traces, expected);
    let manifest: Value = serde_json::from_slice(&members[0].1).unwrap();
    let machines = check_manifest(&manifest, &traces);
    let distinct: BTreeSet<&String> = machines.values().collect();
    assert_eq!(distinct.len(), nodes, "a machine per node: {machines:?}");
    let mut slices = 0;
    for (name, bytes) in &members[1..] {
        let (s, processes) = slices_and_processes(bytes);
        assert!(s > 0, "{name} holds events");
        assert_eq!(processes.len(), 1, "{name}: one node: {processes:?}");
        let node = name.trim_start_matches(word).trim_end_matches(".pftrace");
        assert!(
            machines[name].contains(&format!("{word} {node}")),
            "{machines:?}"
        );
        slices += s;
    }
    assert_eq!(
        slices, merged_slices,
        "every event of the merge, in the members"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[lines.len() - 2].starts_with("wrote "), "{stdout}");
    assert!(lines[lines.len() - 1].contains("Perfetto UI"), "{stdout}");
}

#[test]
fn archive_of_the_recorded_cuda_run_names_4_machines_and_holds_every_event() {
    check_run("real-gpu-machine/kineto-cuda-4r-skew", "rank", 4);
}

#[test]
fn archive_of_a_recorded_jax_run_names_4_machines_and_holds_every_event() {
    check_run("jax-faketime/n4_skew_300steps", "node", 4);
}
