//! Idle time attributed to the annotations that cover it: the user's own
//! scopes (`data_wait`, `record_function` ranges) on the thread that marks
//! the steps, so "idle" says what the node was waiting in.
//!
//! Each idle instant goes to the innermost annotation covering it (the one
//! that started last; scopes on one thread nest), or to none.

use std::collections::HashMap;

use crate::input::Span;
use crate::model::{IdleAnnotation, NodeIdle};
use clock_model::NodeId;

/// Annotations listed per node at most (the others are summed).
pub const IDLE_ANNOTATIONS: usize = 5;

/// A node's annotations: interned names and spans on the global clock.
#[derive(Clone, Debug, Default)]
pub(crate) struct Annotations {
    names: Vec<String>,
    index: HashMap<String, u32>,
    /// `(name, span)`, in any order.
    spans: Vec<(u32, Span)>,
}

impl Annotations {
    /// Add one annotation `name` over `span`.
    pub(crate) fn push(&mut self, name: &str, span: Span) {
        let id = match self.index.get(name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as u32;
                self.names.push(name.to_owned());
                self.index.insert(name.to_owned(), id);
                id
            }
        };
        self.spans.push((id, span));
    }

    /// Per name with some, the time of `idle` (sorted, disjoint spans)
    /// under it as the innermost annotation, ns; and the time under none.
    pub(crate) fn named(&self, idle: &[Span]) -> (Vec<(&str, i64)>, i64) {
        let (by_name, none) = self.attribute(idle);
        let named = self
            .names
            .iter()
            .zip(by_name)
            .filter(|(_, ns)| *ns > 0)
            .map(|(name, ns)| (name.as_str(), ns))
            .collect();
        (named, none)
    }

    /// Per name, the time of `idle` (sorted, disjoint spans) under it as the
    /// innermost annotation, ns; and the idle time under none.
    fn attribute(&self, idle: &[Span]) -> (Vec<i64>, i64) {
        let mut by_name = vec![0i64; self.names.len()];
        let mut none = 0i64;
        let mut spans = self.spans.clone();
        spans.sort_unstable_by_key(|(_, s)| (s.start, std::cmp::Reverse(s.end)));
        // Active annotations, innermost (latest start) on top; ended ones
        // are dropped when they surface.
        let mut active: std::collections::BinaryHeap<(i64, usize)> = Default::default();
        let mut next = 0;
        for gap in idle {
            let mut at = gap.start;
            while at < gap.end {
                while next < spans.len() && spans[next].1.start <= at {
                    active.push((spans[next].1.start, next));
                    next += 1;
                }
                while active.peek().is_some_and(|&(_, i)| spans[i].1.end <= at) {
                    active.pop();
                }
                let upcoming = spans.get(next).map_or(i64::MAX, |s| s.1.start);
                let top = active.peek().map(|&(_, i)| i);
                let until = gap
                    .end
                    .min(upcoming)
                    .min(top.map_or(i64::MAX, |i| spans[i].1.end));
                match top {
                    Some(i) => by_name[spans[i].0 as usize] += until - at,
                    None => none += until - at,
                }
                at = until;
            }
        }
        (by_name, none)
    }
}

/// A node's idle time within its step `windows` (sorted, disjoint), where
/// it is not in `busy` (sorted, disjoint), attributed to `annotations`.
pub(crate) fn node_idle(
    node: NodeId,
    windows: &[Span],
    busy: &[Span],
    annotations: &Annotations,
) -> NodeIdle {
    let idle = gaps(windows, busy);
    let idle_ns = idle.iter().map(|s| s.end - s.start).sum();
    let (by_name, unannotated_ns) = annotations.attribute(&idle);
    let mut named: Vec<IdleAnnotation> = by_name
        .into_iter()
        .enumerate()
        .filter(|&(_, ns)| ns > 0)
        .map(|(k, ns)| IdleAnnotation {
            name: annotations.names[k].clone(),
            ns,
        })
        .collect();
    named.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    let other_annotations_ns = named.iter().skip(IDLE_ANNOTATIONS).map(|a| a.ns).sum();
    named.truncate(IDLE_ANNOTATIONS);
    NodeIdle {
        node,
        idle_ns,
        annotations: named,
        other_annotations_ns,
        unannotated_ns,
    }
}

/// `windows` less `busy` (both sorted and disjoint), sorted and disjoint.
fn gaps(windows: &[Span], busy: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    let mut b = 0;
    for w in windows {
        let mut at = w.start;
        while b < busy.len() && busy[b].end <= at {
            b += 1;
        }
        let mut k = b;
        while k < busy.len() && busy[k].start < w.end {
            if busy[k].start > at {
                out.push(Span {
                    start: at,
                    end: busy[k].start,
                });
            }
            at = at.max(busy[k].end);
            k += 1;
        }
        if at < w.end {
            out.push(Span {
                start: at,
                end: w.end,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: i64, end: i64) -> Span {
        Span { start, end }
    }

    #[test]
    fn idle_goes_to_the_innermost_annotation() {
        let mut a = Annotations::default();
        a.push("step", span(0, 100));
        a.push("data_wait", span(10, 40));
        a.push("h2d", span(20, 30));
        a.push("data_wait", span(60, 70));
        // Busy 40..60; windows 0..100: idle 0..40 and 60..100.
        let idle = node_idle(NodeId(3), &[span(0, 100)], &[span(40, 60)], &a);
        assert_eq!(idle.idle_ns, 80);
        let named: Vec<(&str, i64)> = idle
            .annotations
            .iter()
            .map(|a| (a.name.as_str(), a.ns))
            .collect();
        // step: 0..10 and 70..100; data_wait: 10..20, 30..40, 60..70; h2d 20..30.
        assert_eq!(named, [("step", 40), ("data_wait", 30), ("h2d", 10)]);
        assert_eq!(idle.unannotated_ns, 0);
        assert_eq!(idle.other_annotations_ns, 0);
    }

    #[test]
    fn idle_outside_every_annotation_is_unannotated() {
        let mut a = Annotations::default();
        a.push("load", span(5, 15));
        let idle = node_idle(NodeId(0), &[span(0, 20), span(30, 50)], &[span(12, 35)], &a);
        // Idle 0..12 and 35..50; "load" covers 5..12.
        assert_eq!(idle.idle_ns, 27);
        assert_eq!(idle.annotations[0].ns, 7);
        assert_eq!(idle.unannotated_ns, 20);
    }

    #[test]
    fn annotations_beyond_the_listed_are_summed() {
        let mut a = Annotations::default();
        for k in 0..8 {
            a.push(&format!("a{k}"), span(k * 10, k * 10 + 10 - k));
        }
        let idle = node_idle(NodeId(0), &[span(0, 80)], &[], &a);
        assert_eq!(idle.annotations.len(), IDLE_ANNOTATIONS);
        assert_eq!(idle.annotations[0].name, "a0");
        // a5..a7 hold 5 + 4 + 3 ns.
        assert_eq!(idle.other_annotations_ns, 12);
        let listed: i64 = idle.annotations.iter().map(|a| a.ns).sum();
        assert_eq!(listed + idle.other_annotations_ns + idle.unannotated_ns, 80);
    }

    #[test]
    fn gaps_are_the_windows_less_the_busy_time() {
        let g = gaps(
            &[span(0, 10), span(20, 30)],
            &[span(-5, 2), span(4, 6), span(9, 22), span(25, 26)],
        );
        assert_eq!(g, [span(2, 4), span(6, 9), span(22, 25), span(26, 30)]);
    }
}
