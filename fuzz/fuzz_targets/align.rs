//! The align path on arbitrary bytes: one node's trace aligned by the probe
//! offsets of a fixed run into an in-memory XSpace. It must return, never
//! panic; whatever it accepts, the checker every command uses must accept
//! too (bytes are checked as they are copied), the output must read back,
//! and every input event must be in it.
#![no_main]

use std::io::Cursor;
use std::path::Path;

use alignment_core::{AlignOptions, NodeAligner, NodeInput, OffsetsFile};
use libfuzzer_sys::fuzz_target;
use xplane_proto::{SpaceView, XSpaceWriter};

const T0: i64 = 1_765_432_100_000_000_000;

fn offsets() -> OffsetsFile {
    let end = T0 + 4_000_000_000;
    let text = format!(
        "{{\"meta\":true,\"nodes\":[{{\"node_id\":0,\"start_walltime_ns\":{T0}}},{{\"node_id\":1,\"start_walltime_ns\":{T0}}}]}}\n\
         {{\"round_id\":1,\"window_start_ns\":{T0},\"window_end_ns\":{end},\"node_id\":0,\"offset_ns\":0}}\n\
         {{\"round_id\":1,\"window_start_ns\":{T0},\"window_end_ns\":{end},\"node_id\":1,\"offset_ns\":1e+06}}\n"
    );
    OffsetsFile::parse(text.as_bytes(), Path::new("round_offsets.jsonl")).expect("fixed offsets")
}

fuzz_target!(|data: &[u8]| {
    let input = NodeInput {
        node_id: alignment_core::NodeId(1),
        trace: "fuzz.xplane.pb".into(),
        start_walltime_ns: Some(T0 as u64),
        start_gpu_ns: Some(1_000),
        ..Default::default()
    };
    let view = SpaceView::new(data);
    let options = AlignOptions::default();
    let Ok(mut aligner) = NodeAligner::new(&input, view, &offsets(), &options, None) else {
        return;
    };
    let mut writer = XSpaceWriter::new(Cursor::new(Vec::new()));
    if aligner.write(&mut writer).is_err() {
        return;
    }
    let Ok((hostnames, errors, warnings)) = aligner.space_strings() else {
        return;
    };
    let out = writer
        .finish(&hostnames, &errors, &warnings)
        .expect("writing into memory")
        .into_inner();
    let input_totals = view
        .check_top_level()
        .map_err(|e| e.to_string())
        .and_then(|()| view.check().map_err(|e| e.to_string()))
        .expect("align accepted bytes the checker refuses");
    let output = SpaceView::new(&out)
        .check()
        .expect("the aligned trace reads back");
    assert_eq!(output.events, input_totals.events, "events lost or added");
});
