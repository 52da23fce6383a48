//! Do the ranks agree on how often each gloo collective ran in each
//! process group?
//!
//! gloo annotations carry no sequence number: their process group comes
//! from the worker thread that ran them ([`crate::gloo_groups`]), a rule
//! that a rank's file cannot check on its own. Across ranks it can: every
//! member of a group runs each of the group's collectives, so per group and
//! op (`gloo:<op> <Input Dims>`) the members' counts agree, up to the few a
//! profiling window that starts or stops mid-step cuts off, or an event
//! lost from one file (the matcher aligns those away, see
//! [`crate::matching`]). Counts that differ by more
//! ([`Error::GlooCountsDisagree`]) mean the threads went to the wrong
//! groups: matched anyway they would pair different collectives and move
//! the clocks by whole steps, so the run fails instead.

use std::collections::{BTreeMap, BTreeSet};

use crate::comms::{GroupRanks, RanksOrigin};
use crate::error::{Error, Result};
use crate::kineto::GLOO_PREFIX;
use crate::occurrence::{Extraction, Sym};
use crate::units::NodeId;

/// The ranks of one process group disagree on how many times they ran a
/// gloo collective.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "gloo op {op:?} in process group {group}: the ranks ran it a different number of times ({}); their worker threads cannot be given their process groups consistently (a group created on some ranks only?), so its instances cannot be matched",
    counts.iter().map(|(n, c)| format!("rank {n}: {c}")).collect::<Vec<_>>().join(", ")
)]
pub struct GlooCounts {
    /// The op (`gloo:<op> <Input Dims>`).
    pub op: String,
    /// The process group (`pg_name`), or `"unknown"` when the ranks' groups
    /// could not be told apart.
    pub group: String,
    /// Each member rank's count (0 for a member that never ran it).
    pub counts: Vec<(NodeId, usize)>,
}

/// How far the counts of one op may differ: a profile cut mid-step costs
/// at most one instance at each end, a lost event one; a wrong thread
/// split moves about half of an op's occurrences to another group.
const TOLERATED: usize = 2;

/// Check every gloo op of `ex` (occurrences without a `run_id` whose op
/// starts with `gloo:`, point-to-point aside) per process group.
pub(crate) fn check_gloo_counts(ex: &Extraction) -> Result<()> {
    let mut counts: BTreeMap<(Option<Sym>, Sym), BTreeMap<NodeId, usize>> = BTreeMap::new();
    for o in ex.occurrences() {
        if o.run_id.is_some() || o.kind.is_point_to_point() {
            continue;
        }
        if !ex.name(o.op).starts_with(GLOO_PREFIX) {
            continue;
        }
        *counts
            .entry((o.module, o.op))
            .or_default()
            .entry(o.participant.node)
            .or_default() += 1;
    }
    for ((module, op), by_node) in counts {
        let group = module.map(|m| ex.name(m));
        let members = members(ex, group, &by_node);
        let list: Vec<(NodeId, usize)> = members
            .iter()
            .map(|n| (*n, by_node.get(n).copied().unwrap_or(0)))
            .collect();
        let largest = list.iter().map(|c| c.1).max().unwrap_or(0);
        let smallest = list.iter().map(|c| c.1).min().unwrap_or(0);
        if largest - smallest > TOLERATED {
            return Err(Error::GlooCountsDisagree(Box::new(GlooCounts {
                op: ex.name(op).to_owned(),
                group: group.map_or_else(|| "unknown".to_owned(), |g| format!("{g:?}")),
                counts: list,
            })));
        }
    }
    Ok(())
}

/// The ranks expected to run an op of `group`: the group's members (from
/// `pg_config`) whose traces were given, else every rank that ran it.
fn members(
    ex: &Extraction,
    group: Option<&str>,
    ran: &BTreeMap<NodeId, usize>,
) -> BTreeSet<NodeId> {
    let given: BTreeSet<NodeId> = ex.nodes.keys().copied().collect();
    let stated = group.and_then(|g| {
        ex.kineto
            .groups
            .iter()
            .find(|s: &&GroupRanks| s.group == g && s.origin == RanksOrigin::PgConfig)
    });
    let mut members: BTreeSet<NodeId> = ran.keys().copied().collect();
    if let Some(s) = stated {
        members.extend(
            s.ranks
                .iter()
                .filter_map(|r| u32::try_from(*r).ok().map(NodeId))
                .filter(|n| given.contains(n)),
        );
    }
    members
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::CollectiveKind;
    use crate::hlo_groups::ReplicaGroup;
    use crate::occurrence::Occurrence;
    use crate::permute::PermutePeers;
    use crate::units::{Participant, TimePs};

    fn run(counts: &[(u32, &str, usize)]) -> Extraction {
        let mut ex = Extraction::new();
        let op = ex.intern("gloo:all_reduce [[200]]");
        for &(node, group, n) in counts {
            ex.nodes.entry(NodeId(node)).or_default();
            let module = Some(ex.intern(group));
            for k in 0..n {
                ex.push(Occurrence {
                    participant: Participant {
                        node: NodeId(node),
                        device: None,
                    },
                    kind: CollectiveKind::AllReduce,
                    op,
                    module,
                    run_id: None,
                    group: ReplicaGroup::All,
                    peers: PermutePeers::NotLookedUp,
                    correlation: None,
                    begin: TimePs(k as i128),
                    end: TimePs(k as i128 + 1),
                    on_device: false,
                });
            }
        }
        ex
    }

    #[test]
    fn a_lost_event_is_tolerated() {
        assert!(check_gloo_counts(&run(&[(0, "0", 100), (1, "0", 99)])).is_ok());
    }

    #[test]
    fn a_wrong_thread_split_fails_naming_op_group_and_ranks() {
        let err =
            check_gloo_counts(&run(&[(0, "0", 53), (0, "1", 47), (1, "0", 100)])).unwrap_err();
        let Error::GlooCountsDisagree(c) = &err else {
            panic!("{err}");
        };
        assert_eq!(c.group, "\"0\"");
        assert_eq!(c.counts, [(NodeId(0), 53), (NodeId(1), 100)]);
        assert!(err.to_string().contains("rank 0: 53, rank 1: 100"), "{err}");
    }

    #[test]
    fn a_member_that_never_ran_the_op_counts_zero() {
        let mut ex = run(&[(0, "0", 40)]);
        ex.nodes.entry(NodeId(1)).or_default();
        ex.kineto.groups.push(GroupRanks {
            node: NodeId(0),
            group: "0".into(),
            ranks: vec![0, 1],
            origin: RanksOrigin::PgConfig,
        });
        let err = check_gloo_counts(&ex).unwrap_err();
        assert!(err.to_string().contains("rank 1: 0"), "{err}");
    }
}
