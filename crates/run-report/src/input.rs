//! What the report is computed from, whatever the format: per node its
//! correction, step markers and busy time on the global clock, and the
//! collectives as recorded and as aligned.

use clock_model::NodeId;
use clock_model::{HostTime, OffsetMap};
use collective_check::{Extraction, Report as CheckReport};

/// A span on the global clock, epoch ns, `start <= end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Span {
    pub start: i64,
    pub end: i64,
}

/// A step marker on one node, on the global clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Marker {
    pub step: i64,
    pub span: Span,
}

/// A node's correction `global − host`, evaluable at any host time.
pub(crate) enum Correction {
    /// The node's clock maps (XSpace).
    Clocks(Box<alignment_core::NodeClocks>),
    /// An offset map `Host → Global` (Kineto).
    Map(OffsetMap),
}

impl Correction {
    /// The correction at host time `host_ns` (epoch ns), ns.
    pub fn at(&self, host_ns: i64) -> i64 {
        let h = HostTime::from_ns(host_ns);
        let g = match self {
            Correction::Clocks(c) => c.host_to_global(h).time.as_ps(),
            Correction::Map(m) => m.map(h).time.as_ps(),
        };
        i64::try_from(g.div_euclid(1000) - i128::from(host_ns)).unwrap_or(0)
    }
}

/// One node as read.
pub(crate) struct NodeData {
    pub node: NodeId,
    pub correction: Correction,
    /// Probe anchors: (host time, measured correction), epoch ns and ns.
    pub anchors: Vec<(i64, i64)>,
    /// Step markers, sorted by start.
    pub markers: Vec<Marker>,
    /// The name of the marker events, when there are any.
    pub marker_name: Option<String>,
    /// Union of the node's work (kernels, ops), sorted and disjoint.
    pub busy: Vec<Span>,
    /// Per host thread (line), its ops joined: sorted and disjoint.
    pub host_lanes: Vec<Vec<Span>>,
    /// First and last aligned time of the node's events.
    pub extent: Option<Span>,
    /// Its GPU work.
    pub gpu: crate::gpu::NodeKernels,
    /// Its annotations: the user's scopes that idle time is attributed to.
    pub annotations: crate::idle::Annotations,
}

/// The whole run as read.
pub(crate) struct RunData {
    pub format: crate::InputFormat,
    pub reference_node: NodeId,
    pub clock_source: String,
    pub clock_reason: String,
    /// The estimate from the collectives, when that was the source.
    pub estimate: Option<collective_clock::EstimateReport>,
    pub nodes: Vec<NodeData>,
    pub before: CheckReport,
    pub after: CheckReport,
}

/// Check collectives of traces in `format` as every command does
/// ([`TraceFormat::check_options`](trace_align::TraceFormat::check_options)).
pub(crate) fn check(ex: &Extraction, format: trace_align::TraceFormat) -> CheckReport {
    collective_check::check(ex, &format.check_options())
}

/// Sort `spans` and merge the overlapping ones, in place.
pub(crate) fn union(mut spans: Vec<Span>) -> Vec<Span> {
    // Stable sort: it finds sorted runs, so that spans read stream after
    // stream (or line after line) cost a merge of the runs, not a sort;
    // spans already in order (a line's, mostly) are not sorted at all,
    // which spares the sort's buffer.
    if !spans.is_sorted() {
        spans.sort();
    }
    // Merged into the front of the same vector: no second one.
    let mut kept = 0;
    for k in 0..spans.len() {
        let s = spans[k];
        if kept > 0 && s.start <= spans[kept - 1].end {
            spans[kept - 1].end = spans[kept - 1].end.max(s.end);
        } else {
            spans[kept] = s;
            kept += 1;
        }
    }
    spans.truncate(kept);
    spans.shrink_to_fit();
    spans
}

/// The union of spans pushed in order of start, built as they come.
#[derive(Default)]
pub(crate) struct SortedUnion(Vec<Span>);

impl SortedUnion {
    /// Add `s`, which starts no earlier than any span before it.
    #[inline]
    pub fn push(&mut self, s: Span) {
        debug_assert!(self.0.last().is_none_or(|l| l.start <= s.start));
        match self.0.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => self.0.push(s),
        }
    }

    /// The union, sorted and disjoint.
    pub fn spans(self) -> Vec<Span> {
        self.0
    }
}

/// The union of two sorted disjoint lists, sorted and disjoint.
pub(crate) fn join(mut a: Vec<Span>, b: Vec<Span>) -> Vec<Span> {
    if a.is_empty() {
        return b;
    }
    // Two sorted runs: the union's stable sort merges them in one pass.
    a.extend(b);
    union(a)
}

/// Total length of the sorted disjoint `spans` inside `window`.
pub(crate) fn covered(spans: &[Span], window: Span) -> i64 {
    let first = spans.partition_point(|s| s.end <= window.start);
    spans[first..]
        .iter()
        .take_while(|s| s.start < window.end)
        .map(|s| s.end.min(window.end) - s.start.max(window.start))
        .filter(|&d| d > 0)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start: i64, end: i64) -> Span {
        Span { start, end }
    }

    #[test]
    fn union_merges_overlapping_and_nested_spans() {
        let u = union(vec![s(5, 7), s(0, 3), s(1, 2), s(3, 4), s(10, 12)]);
        assert_eq!(u, vec![s(0, 4), s(5, 7), s(10, 12)]);
    }

    proptest::proptest! {
        /// The covered length of the union equals a count of the integer
        /// points that some span covers, inside the window.
        #[test]
        fn covered_union_counts_every_point_once(
            raw in proptest::collection::vec((0i64..200, 0i64..40), 0..30),
            w in (0i64..250, 0i64..250),
        ) {
            let spans: Vec<Span> = raw.iter().map(|&(a, d)| s(a, a + d)).collect();
            let window = s(w.0.min(w.1), w.0.max(w.1));
            let u = union(spans.clone());
            for pair in u.windows(2) {
                proptest::prop_assert!(pair[0].end < pair[1].start);
            }
            let brute = (window.start..window.end)
                .filter(|&t| spans.iter().any(|x| x.start <= t && t < x.end))
                .count() as i64;
            proptest::prop_assert_eq!(covered(&u, window), brute);
        }
    }

    #[test]
    fn covered_clips_to_the_window() {
        let u = vec![s(0, 4), s(5, 7), s(10, 12)];
        assert_eq!(covered(&u, s(2, 11)), 2 + 2 + 1);
        assert_eq!(covered(&u, s(7, 10)), 0);
        assert_eq!(covered(&u, s(-5, 50)), 4 + 2 + 2);
    }
}
