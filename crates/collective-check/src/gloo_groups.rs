//! Which process group a gloo annotation belongs to.
//!
//! torch records neither the group nor a sequence number on gloo's
//! `gloo:<op>` annotations, nor the group on the `c10d::` op on the calling
//! thread. What separates the groups is the thread: every gloo process group
//! runs its collectives on worker threads of its own (`pt_gloo_runloop`,
//! two per group by default), spawned when the group is created, in the
//! order the groups are created. `distributedInfo.pg_config` lists a rank's
//! groups in that order (only the groups the rank is a member of). So, on
//! one rank, the worker threads sorted by thread id (Linux hands out
//! increasing ids) split into equal consecutive runs, one per gloo group of
//! the rank, in `pg_config` order.
//!
//! One-member groups (`dist.new_group([0])`) and groups the rank is not a
//! member of take no threads: a one-member group's collectives have no
//! peer to match, and a group whose threads ran nothing in the profiled
//! window leaves no thread to count. Whether the split was right is checked
//! across ranks afterwards ([`crate::gloo_counts`]).
//!
//! When the threads do not split evenly (a worker that ran nothing in the
//! profiled window) the rank's annotations are left without a group, as
//! with a single group, and the report says so
//! ([`WarningKind::GlooGroupsUnresolved`](crate::WarningKind::GlooGroupsUnresolved)).

use std::collections::{BTreeMap, BTreeSet};

use kineto_trace::ProcessGroup;
use serde::Serialize;

use crate::units::NodeId;

/// A thread of a trace: (pid, tid) as text.
pub(crate) type Thread = (String, String);

/// A rank whose gloo worker threads could not be given their groups.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GlooUnresolved {
    /// The rank.
    pub node: NodeId,
    /// Its gloo process groups (`pg_config` entries with a gloo backend).
    pub groups: Vec<String>,
    /// The worker threads that ran gloo collectives.
    pub threads: usize,
}

/// The outcome for one rank.
pub(crate) enum GlooGroups {
    /// Each worker thread's group name.
    ByThread(BTreeMap<Thread, String>),
    /// No group is known (no `pg_config`, or the threads do not split).
    Unknown(Option<GlooUnresolved>),
}

impl GlooGroups {
    /// The group of an annotation on `thread`, if known.
    pub(crate) fn of(&self, thread: &Thread) -> Option<&str> {
        match self {
            GlooGroups::ByThread(map) => map.get(thread).map(String::as_str),
            GlooGroups::Unknown(_) => None,
        }
    }
}

/// True when `group` may run collectives on worker threads of `node` that
/// other ranks' annotations can match: `node` is a member, and the group
/// has another member (a one-member group's collectives have no peer, and
/// a group `node` is not in runs nothing there). Empty `ranks` (not
/// written) count as every rank.
fn takes_threads(group: &ProcessGroup, node: NodeId) -> bool {
    match group.ranks.as_slice() {
        [] => true,
        [_] => false,
        ranks => ranks.contains(&node.get()),
    }
}

/// The groups of `node`'s gloo worker `threads`, from its `pg_config`.
pub(crate) fn assign(
    pg_config: &[ProcessGroup],
    node: NodeId,
    threads: &BTreeSet<Thread>,
) -> GlooGroups {
    let groups: Vec<&ProcessGroup> = pg_config
        .iter()
        .filter(|g| g.backend_config.contains("gloo"))
        .filter(|g| takes_threads(g, node))
        .collect();
    if groups.is_empty() || threads.is_empty() {
        return GlooGroups::Unknown(None);
    }
    let mut sorted: Vec<&Thread> = threads.iter().collect();
    sorted.sort_by_key(|(pid, tid)| {
        (
            pid.parse::<i64>().ok(),
            tid.parse::<i64>().ok(),
            tid.clone(),
        )
    });
    if !sorted.len().is_multiple_of(groups.len()) {
        return GlooGroups::Unknown(Some(GlooUnresolved {
            node,
            groups: groups.iter().map(|g| g.pg_name.clone()).collect(),
            threads: sorted.len(),
        }));
    }
    let per_group = sorted.len() / groups.len();
    GlooGroups::ByThread(
        sorted
            .chunks(per_group)
            .zip(&groups)
            .flat_map(|(chunk, g)| chunk.iter().map(|t| ((*t).clone(), g.pg_name.clone())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(name: &str, backend: &str, ranks: &[u32]) -> ProcessGroup {
        serde_json::from_value(serde_json::json!({
            "pg_name": name, "backend_config": backend, "ranks": ranks
        }))
        .unwrap()
    }

    fn threads(tids: &[&str]) -> BTreeSet<Thread> {
        tids.iter()
            .map(|t| ("7".to_owned(), (*t).to_owned()))
            .collect()
    }

    #[test]
    fn threads_split_in_creation_order() {
        let config = [
            pg("0", "cpu:gloo,cuda:gloo", &[0, 1, 2, 3]),
            pg("1", "cpu:gloo,cuda:gloo", &[1, 2, 3]),
        ];
        // 998 < 1001 numerically, though not as text.
        let g = assign(
            &config,
            NodeId(1),
            &threads(&["1001", "1002", "998", "999"]),
        );
        let of = |t: &str| g.of(&("7".to_owned(), t.to_owned())).map(str::to_owned);
        assert_eq!(of("998").as_deref(), Some("0"));
        assert_eq!(of("999").as_deref(), Some("0"));
        assert_eq!(of("1001").as_deref(), Some("1"));
        assert_eq!(of("1002").as_deref(), Some("1"));
    }

    #[test]
    fn groups_without_the_rank_or_gloo_are_not_counted() {
        let config = [
            pg("0", "cpu:gloo,cuda:nccl", &[0, 1]),
            pg("1", "cuda:nccl", &[0, 1]),
            pg("2", "cpu:gloo", &[1]),
        ];
        let g = assign(&config, NodeId(0), &threads(&["5", "6"]));
        assert_eq!(g.of(&("7".into(), "6".into())), Some("0"));
    }

    /// Regression: rank 0 of a 2-rank run also created `new_group([0])`;
    /// its two worker threads of the default group were split one each
    /// between the default and the one-member group.
    #[test]
    fn one_member_groups_take_no_threads() {
        let config = [
            pg("0", "cpu:gloo,cuda:gloo", &[0, 1]),
            pg("1", "cpu:gloo,cuda:gloo", &[0]),
        ];
        let g = assign(&config, NodeId(0), &threads(&["5", "6"]));
        assert_eq!(g.of(&("7".into(), "5".into())), Some("0"));
        assert_eq!(g.of(&("7".into(), "6".into())), Some("0"));
    }

    #[test]
    fn uneven_threads_leave_the_groups_unknown() {
        let config = [pg("0", "cpu:gloo", &[0, 1]), pg("1", "cpu:gloo", &[0, 1])];
        match assign(&config, NodeId(0), &threads(&["5", "6", "9"])) {
            GlooGroups::Unknown(Some(u)) => {
                assert_eq!(u.threads, 3);
                assert_eq!(u.groups, ["0", "1"]);
            }
            _ => panic!("three threads cannot split into two groups"),
        }
        assert!(matches!(
            assign(&[], NodeId(0), &threads(&["5"])),
            GlooGroups::Unknown(None)
        ));
    }
}
