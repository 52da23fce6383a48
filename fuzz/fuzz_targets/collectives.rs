//! Collective extraction from an XSpace on arbitrary bytes, as a per-node
//! file and as a merged one, then the happens-before check: an error or a
//! report, never a panic.
#![no_main]

use std::path::Path;

use collective_check::{Extraction, NodeId, NodeSource, Options, check, extract_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = Options::default();
    for node in [NodeSource::Given(NodeId(3)), NodeSource::PlaneStat] {
        let mut out = Extraction::new();
        if extract_bytes(data, Path::new("node3.xplane.pb"), node, &options, &mut out).is_ok() {
            let _ = check(&out, &options);
        }
    }
});
