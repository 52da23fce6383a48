//! The snapshot-pair parsers (`SnapshotPairs` protobuf and JSONL) on
//! arbitrary bytes: an error or pairs, never a panic; accepted pairs never
//! go backwards on either clock.
#![no_main]

use std::path::Path;

use alignment_core::Snapshots;
use libfuzzer_sys::fuzz_target;

fn non_decreasing(s: &Snapshots) {
    for w in s.pairs().windows(2) {
        assert!(w[0].sys_ns() <= w[1].sys_ns() && w[0].tracer_ns() <= w[1].tracer_ns());
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = Snapshots::parse_protobuf(data, Path::new("node0.snapshots.pb")) {
        non_decreasing(&s);
    }
    if let Ok(s) = Snapshots::parse_jsonl(data, Path::new("node0.snapshots.jsonl")) {
        non_decreasing(&s);
    }
});
