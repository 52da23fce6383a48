//! The complete (`X`) events of a trace with their times on the epoch
//! clock: what every reader of spans (GPU activities, a report's steps
//! and busy time) walks.

use crate::error::Result;
use crate::event::{Event, Events, Phase};
use crate::time::{DurNs, EpochNs, TimeBase};
use crate::trace::Trace;

/// A complete event with its start on the epoch clock and its duration
/// as recorded (a negative one is refused when the trace is read).
#[derive(Debug, Clone)]
pub struct CompleteSpan<'a> {
    /// The event.
    pub event: Event<'a>,
    /// Its start, epoch ns.
    pub start: EpochNs,
    /// Its duration, ns.
    pub dur: DurNs,
}

/// The complete events of a trace, in file order ([`Trace::complete_spans`]).
pub struct CompleteSpans<'a> {
    events: Events<'a>,
    base: TimeBase,
}

impl<'a> Iterator for CompleteSpans<'a> {
    type Item = Result<CompleteSpan<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        for event in self.events.by_ref() {
            let event = match event {
                Ok(event) => event,
                Err(e) => return Some(Err(e)),
            };
            if event.phase != Phase::Complete {
                continue;
            }
            let (Some(ts), Some(dur)) = (event.ts_ns(), event.dur_ns()) else {
                continue;
            };
            let Some(start) = self.base.to_epoch(ts) else {
                continue;
            };
            return Some(Ok(CompleteSpan { event, start, dur }));
        }
        None
    }
}

impl<'a> Trace<'a> {
    /// Every complete (`X`) event with a `ts` and a `dur` whose start
    /// falls within 64-bit epoch ns, with that start and its duration, in
    /// file order; a malformed event is an error naming the file and byte.
    pub fn complete_spans(&self) -> CompleteSpans<'a> {
        CompleteSpans {
            events: self.events(),
            base: self.base(),
        }
    }
}
