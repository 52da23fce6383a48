//! The Kineto JSON reader on arbitrary bytes: scanning and reading every
//! event must return, never panic; whatever it accepts, the identity rewrite
//! must keep every event byte and parse again.
#![no_main]

use kineto_trace::{Compression, Trace, TraceFile, identity, retime};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let file = TraceFile::from_bytes(data.to_vec(), "fuzz.json", Compression::None);
    let Ok(trace) = file.parse() else { return };
    if trace.events().any(|e| e.is_err()) {
        return;
    }
    let mut out = Vec::new();
    if retime(&trace, &identity, &(), &mut out).is_ok() {
        let again = TraceFile::from_bytes(out, "out.json", Compression::None);
        let again: Trace<'_> = again.parse().expect("the rewrite parses");
        let events = |t: &Trace<'_>| t.bytes()[t.events_member().value.clone()].to_vec();
        assert_eq!(events(&again), events(&trace));
    }
});
