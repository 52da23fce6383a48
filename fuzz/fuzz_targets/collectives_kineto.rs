//! Collective extraction from a PyTorch (Kineto) trace on arbitrary bytes,
//! then the happens-before check: an error or a report, never a panic.
#![no_main]

use collective_check::{Extraction, NodeId, Options, check, extract_kineto};
use kineto_trace::{Compression, TraceFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let file = TraceFile::from_bytes(data.to_vec(), "rank1.pt.trace.json", Compression::None);
    let Ok(trace) = file.parse() else { return };
    let options = Options::default();
    let mut out = Extraction::new();
    if extract_kineto(&trace, NodeId(1), &options, &mut out).is_ok() {
        let _ = check(&out, &options);
    }
});
