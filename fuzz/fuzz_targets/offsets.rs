//! The probe offsets parser (`round_offsets.jsonl`) on arbitrary bytes: an
//! error or a parse, never a panic; what it accepts builds clock maps for
//! every node it names without panicking.
#![no_main]

use std::path::Path;

use alignment_core::{AlignOptions, NodeClocks, OffsetsFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(offsets) = OffsetsFile::parse(data, Path::new("round_offsets.jsonl")) else {
        return;
    };
    let options = AlignOptions::default();
    let mut nodes: Vec<alignment_core::NodeId> = offsets.nodes.keys().copied().collect();
    nodes.extend(offsets.rows.iter().map(|(_, r)| r.node_id));
    nodes.dedup();
    for node in nodes.into_iter().take(8) {
        let _ = NodeClocks::build(node, &offsets, None, None, None, &options);
    }
});
