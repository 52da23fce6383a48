//! The one set of collective counts every command prints.
//!
//! Each figure has one definition here, and [`Counts`]'s `Display` gives
//! the words every command uses for them, so that `merge`, `align`,
//! `validate`, `collectives` and `report` count the same run the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::report::Instance;
use crate::units::NodeId;

/// The counts of the matched collective instances of a run.
///
/// A *matched instance* is one execution of one collective, its
/// occurrences on every participant matched into one
/// [`Instance`](crate::Instance) (point-to-point transfers included where
/// the check reads them: always for PyTorch profiler traces).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Matched instances, of every kind.
    pub matched: usize,
    /// `matched` by collective kind (`all-reduce`, `send`, …).
    pub by_kind: BTreeMap<String, usize>,
    /// Matched instances whose participants are on at least two nodes:
    /// the ones that say something about the clocks.
    pub across_nodes: usize,
    /// Matched instances the happens-before rule is applied to:
    /// all-to-all style kinds (all-reduce, all-gather, reduce-scatter,
    /// all-to-all) with at least two participants.
    pub checked: usize,
    /// Matched point-to-point instances (send/recv): never checked.
    pub point_to_point: usize,
    /// Matched instances with every participant that ran the op present.
    pub complete: usize,
    /// Matched instances missing a participant that ran the op elsewhere.
    pub incomplete: usize,
    /// Matched instances with a single participant.
    pub single_participant: usize,
}

impl Counts {
    /// The counts of `instances`.
    pub fn of(instances: &[Instance]) -> Counts {
        let mut c = Counts {
            matched: instances.len(),
            ..Counts::default()
        };
        for i in instances {
            *c.by_kind.entry(i.kind.as_str().to_owned()).or_default() += 1;
            let nodes: BTreeSet<NodeId> = i.slots.iter().map(|s| s.participant.node).collect();
            c.across_nodes += usize::from(nodes.len() >= 2);
            c.checked += usize::from(i.checked);
            c.point_to_point += usize::from(i.kind.is_point_to_point());
            c.complete += usize::from(i.complete);
            c.incomplete += usize::from(!i.complete);
            c.single_participant += usize::from(i.slots.len() < 2);
        }
        c
    }

    /// `by_kind` as `all-reduce 1000, send 800`.
    pub fn kinds_text(&self) -> String {
        self.by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One line, the same in every command: `collectives: 2600 matched
/// instances (all-reduce 1000, …); 2600 across nodes, 1400 checked for
/// happens-before, 800 point-to-point; 2600 complete, 0 incomplete, 0 with
/// one participant`.
impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "collectives: {} matched instances", self.matched)?;
        if !self.by_kind.is_empty() {
            write!(f, " ({})", self.kinds_text())?;
        }
        write!(
            f,
            "; {} across nodes, {} checked for happens-before, {} point-to-point; \
             {} complete, {} incomplete, {} with one participant",
            self.across_nodes,
            self.checked,
            self.point_to_point,
            self.complete,
            self.incomplete,
            self.single_participant
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::CollectiveKind;
    use crate::matching::MatchKey;
    use crate::report::Slot;
    use crate::units::{Participant, TimePs};

    fn slot(node: u32, device: i64) -> Slot {
        Slot {
            participant: Participant {
                node: NodeId(node),
                device: Some(device),
            },
            begin_ps: TimePs(0),
            end_ps: TimePs(1),
            correlation: None,
        }
    }

    fn instance(kind: CollectiveKind, slots: Vec<Slot>, complete: bool) -> Instance {
        let checked = kind.is_all_to_all_style() && slots.len() >= 2;
        Instance {
            index: 0,
            op: kind.as_str().to_owned(),
            module: None,
            kind,
            key: MatchKey::Occurrence(0),
            last_to_start: slots[0].participant,
            slots,
            complete,
            start_spread_ns: 0.0,
            end_spread_ns: 0.0,
            overlap: true,
            checked,
            violation_ns: None,
        }
    }

    #[test]
    fn each_count_follows_its_definition() {
        let instances = vec![
            instance(
                CollectiveKind::AllReduce,
                vec![slot(0, 0), slot(1, 0)],
                true,
            ),
            // Two devices of one node: checked, but not across nodes.
            instance(
                CollectiveKind::AllGather,
                vec![slot(0, 0), slot(0, 1)],
                true,
            ),
            instance(CollectiveKind::Send, vec![slot(0, 0), slot(1, 0)], true),
            instance(CollectiveKind::Broadcast, vec![slot(2, 0)], false),
        ];
        let c = Counts::of(&instances);
        assert_eq!(c.matched, 4);
        assert_eq!(c.across_nodes, 2);
        assert_eq!(c.checked, 2);
        assert_eq!(c.point_to_point, 1);
        assert_eq!((c.complete, c.incomplete), (3, 1));
        assert_eq!(c.single_participant, 1);
        assert_eq!(c.by_kind["all-reduce"], 1);
        assert_eq!(c.by_kind.values().sum::<usize>(), c.matched);
        assert_eq!(
            c.to_string(),
            "collectives: 4 matched instances (all-gather 1, all-reduce 1, broadcast 1, \
             send 1); 2 across nodes, 2 checked for happens-before, 1 point-to-point; 3 \
             complete, 1 incomplete, 1 with one participant"
        );
    }
}
