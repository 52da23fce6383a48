//! The rules: happens-before, overlap, spreads, stragglers.

use std::collections::{BTreeMap, BTreeSet};

use crate::counts::Counts;
use crate::extract::Options;
use crate::groups::group_warnings;
use crate::matching::{Group, group};
use crate::occurrence::{Extraction, Occurrence};
use crate::report::{
    Instance, Report, Slot, Spread, Straggler, Summary, Violation, Warning, WarningKind,
};
use crate::units::{DurationPs, NodeId, Participant, TimePs};

/// Match the occurrences of `extraction` into instances and apply the rules.
///
/// Happens-before, for all-to-all style kinds (all-reduce, all-gather,
/// reduce-scatter, all-to-all) with at least two participants: no participant
/// can finish before every participant has started, so an instance violates
/// the rule when `end_i < max_j begin_j` for some `i`; its size is
/// `max_j begin_j - min_i end_i`. Touching (`end == begin`) is not a
/// violation. For closed intervals this is the same as "the intervals do not
/// all share a point" ([`Instance::overlap`] is false), which is also
/// reported for the other kinds without counting as a violation.
pub fn check(extraction: &Extraction, options: &Options) -> Report {
    let mut warnings: Vec<Warning> = Vec::new();
    let groups = group(extraction, options.planes, &mut warnings);
    warnings.extend(group_warnings(extraction));
    let tolerance = DurationPs::from_ns_f64(options.tolerance_ns.max(0.0));
    let mut rules = Rules::default();
    for (index, g) in groups.into_iter().enumerate() {
        rules.apply(extraction, index, g, tolerance);
    }
    if rules.instances.is_empty() {
        warnings.push(Warning::new(
            WarningKind::NoCollectives,
            None,
            0,
            "no collective found: nothing was checked".to_owned(),
        ));
    }
    rules.report(extraction, warnings)
}

/// The rules applied to instance after instance.
#[derive(Default)]
struct Rules {
    participants: BTreeSet<Participant>,
    instances: Vec<Instance>,
    violations: Vec<Violation>,
    /// Per node: how often it was the last to start, and by how much
    /// (ps) it started after the second to last, summed.
    last: BTreeMap<NodeId, (usize, i128)>,
    /// Instances of two participants or more.
    multi: usize,
    /// Their start and end spreads, ns.
    starts: Vec<f64>,
    ends: Vec<f64>,
}

/// The extreme begins and ends of an instance's members.
struct Bounds {
    min_begin: TimePs,
    max_begin: TimePs,
    min_end: TimePs,
    max_end: TimePs,
    /// The participant that began last (the first of them).
    last_to_start: Participant,
}

impl Bounds {
    fn of(m: &[Occurrence]) -> Bounds {
        let max_begin = m
            .iter()
            .map(|o| o.begin)
            .max()
            .expect("a group has members");
        let min_begin = m
            .iter()
            .map(|o| o.begin)
            .min()
            .expect("a group has members");
        let max_end = m.iter().map(|o| o.end).max().expect("a group has members");
        let min_end = m.iter().map(|o| o.end).min().expect("a group has members");
        let last_to_start = m
            .iter()
            .find(|o| o.begin == max_begin)
            .expect("the max is a member")
            .participant;
        Bounds {
            min_begin,
            max_begin,
            min_end,
            max_end,
            last_to_start,
        }
    }
}

impl Rules {
    /// Apply the rules to `g`, instance `index`, a violation being a gap
    /// beyond `tolerance`.
    fn apply(&mut self, extraction: &Extraction, index: usize, g: Group, tolerance: DurationPs) {
        let m = &g.members;
        self.participants.extend(m.iter().map(|o| o.participant));
        let b = Bounds::of(m);
        let start_spread = b.max_begin.since(b.min_begin);
        let end_spread = b.max_end.since(b.min_end);
        let checked = g.kind.is_all_to_all_style() && m.len() >= 2;
        let gap = b.max_begin.since(b.min_end);
        let violation = (checked && gap.0 > 0 && gap > tolerance).then_some(gap);
        if m.len() >= 2 {
            self.multi += 1;
            self.starts.push(start_spread.as_ns_f64());
            self.ends.push(end_spread.as_ns_f64());
            self.note_last(m, &b);
        }
        let op = extraction.name(g.op).to_owned();
        if let Some(size) = violation {
            self.violations.push(Violation {
                instance: index,
                op: op.clone(),
                key: g.key.clone(),
                size_ns: size.as_ns_f64(),
                last_to_start: b.last_to_start,
                finished_early: m
                    .iter()
                    .filter(|o| o.end < b.max_begin)
                    .map(|o| o.participant)
                    .collect(),
            });
        }
        self.instances.push(Instance {
            index,
            op,
            module: g.module.map(|s| extraction.name(s).to_owned()),
            kind: g.kind,
            key: g.key,
            slots: m
                .iter()
                .map(|o| Slot {
                    participant: o.participant,
                    begin_ps: o.begin,
                    end_ps: o.end,
                    correlation: o.correlation,
                })
                .collect(),
            complete: g.complete,
            start_spread_ns: start_spread.as_ns_f64(),
            end_spread_ns: end_spread.as_ns_f64(),
            last_to_start: b.last_to_start,
            overlap: b.max_begin <= b.min_end,
            checked,
            violation_ns: violation.map(DurationPs::as_ns_f64),
        });
    }

    /// Count the node that began last among the members `m` (of two or
    /// more), and its lead over the one that began before it.
    fn note_last(&mut self, m: &[Occurrence], b: &Bounds) {
        let second = m
            .iter()
            .filter(|o| o.participant != b.last_to_start)
            .map(|o| o.begin)
            .max()
            .expect("two members");
        let e = self.last.entry(b.last_to_start.node).or_default();
        e.0 += 1;
        e.1 += b.max_begin.since(second).0;
    }

    /// The report: the straggler table and the summary.
    fn report(self, extraction: &Extraction, warnings: Vec<Warning>) -> Report {
        let multi = self.multi;
        let mut stragglers: Vec<Straggler> = self
            .last
            .into_iter()
            .map(|(node, (n, lead))| Straggler {
                node,
                times_last: n,
                share: n as f64 / multi as f64,
                mean_lead_ns: lead as f64 / n as f64 / 1000.0,
            })
            .collect();
        stragglers.sort_by(|a, b| b.times_last.cmp(&a.times_last).then(a.node.cmp(&b.node)));
        let (instances, violations) = (self.instances, self.violations);
        let summary = Summary {
            nodes: extraction.nodes.len(),
            participants: self.participants.len(),
            counts: Counts::of(&instances),
            violations: violations.len(),
            max_violation_ns: violations.iter().map(|v| v.size_ns).fold(0.0, f64::max),
            overlap_failures: instances
                .iter()
                .filter(|i| i.slots.len() >= 2 && !i.overlap)
                .count(),
            warnings: warnings.len(),
            start_spread: spread(self.starts),
            end_spread: spread(self.ends),
        };
        Report {
            summary,
            nodes: extraction.nodes.clone(),
            participants: self.participants.into_iter().collect(),
            extraction: extraction.stats.clone(),
            instances,
            violations,
            warnings,
            stragglers,
        }
    }
}

fn spread(mut v: Vec<f64>) -> Spread {
    if v.is_empty() {
        return Spread::default();
    }
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Spread {
        median_ns: rank(0.5),
        p90_ns: rank(0.9),
        max_ns: v[v.len() - 1],
    }
}
