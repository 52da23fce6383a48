//! The process-group checks of Kineto runs: do the ranks of every NCCL/RCCL
//! instance belong to its group, and do they agree on what it was?
//!
//! Hard errors, because a wrong match would feed the clock fit with pairs
//! of events that are not one collective:
//! - two files give one process group different ranks
//!   ([`Error::GroupRanksDisagree`]);
//! - a rank's event of a group it is not a member of
//!   ([`Error::RankNotInGroup`]);
//! - the ranks of one instance (one `Comms Id`, or one `Seq` of a group)
//!   disagree on its collective name, process group, dtype or element counts
//!   ([`Error::InstanceDisagrees`]).
//!
//! - the members of a gloo process group ran one of its ops a different
//!   number of times ([`Error::GlooCountsDisagree`], [`crate::gloo_counts`]).
//!
//! Warnings, because the instances that are there are still right:
//! - an instance lacks a rank of its group whose trace was given
//!   ([`WarningKind::GroupRankMissing`]: profiles that start or stop at
//!   different collectives on different ranks);
//! - a group has ranks with no trace given ([`WarningKind::GroupRanksNotGiven`]).
//!
//! Element counts are compared where every rank moves the same tensor size:
//! equal `In msg nelems` and equal `Out msg nelems` on every rank, except
//! when a rank lists split sizes (uneven all-to-all or all-gather); then the
//! sum of `In msg nelems` must equal the sum of `Out msg nelems` over the
//! ranks, once the instance has all of its group's ranks. Point-to-point
//! instances are compared only when matched by `Comms Id` (a `Seq` of
//! send/recv does not name the peer).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::comms::{CommsKey, CommsRecord, GroupRanks, RanksOrigin};
use crate::error::{
    CommsField, Error, GroupRanksConflict, InstanceDisagreement, RankOutsideGroup, RankValue,
    Result,
};
use crate::gloo_counts::check_gloo_counts;
use crate::occurrence::Extraction;
use crate::report::{Warning, WarningKind};
use crate::units::NodeId;

/// Everything the checks found: the hard errors first met and the warnings.
struct Findings {
    error: Option<Error>,
    warnings: Vec<Warning>,
}

/// Check the Kineto process groups and NCCL/RCCL instances of `ex` (see
/// the module documentation); the first hard finding is the error.
pub fn verify_kineto_groups(ex: &Extraction) -> Result<()> {
    check_gloo_counts(ex)?;
    match findings(ex).error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The warnings of the group checks (what [`check`](crate::check) reports).
pub(crate) fn group_warnings(ex: &Extraction) -> Vec<Warning> {
    findings(ex).warnings
}

fn findings(ex: &Extraction) -> Findings {
    let records = &ex.kineto;
    let mut out = Findings {
        error: None,
        warnings: Vec::new(),
    };
    for u in &records.gloo_unresolved {
        out.warnings.push(Warning::new(
            WarningKind::GlooGroupsUnresolved,
            None,
            u.threads,
            format!(
                "rank {}: {} gloo worker thread(s) do not split evenly among its process groups {:?}; its gloo collectives are matched as one group",
                u.node, u.threads, u.groups
            ),
        ));
    }
    if records.comms.is_empty() && records.groups.is_empty() {
        return out;
    }
    let groups = match group_table(ex, &records.groups) {
        Ok(g) => g,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let mut instances: BTreeMap<&CommsKey, Vec<&CommsRecord>> = BTreeMap::new();
    for r in &records.comms {
        if let Some(key) = &r.key {
            instances.entry(key).or_default().push(r);
        }
    }
    let given: BTreeSet<i64> = ex.nodes.keys().map(|n| i64::from(n.0)).collect();
    let mut missing: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    let mut used_groups: BTreeSet<&str> = BTreeSet::new();
    for (key, members) in &instances {
        let check = agreement(ex, key, members).and_then(|group| {
            let Some(group) = group else { return Ok(()) };
            used_groups.insert(group);
            let Some(ranks) = groups.get(group) else {
                return Ok(());
            };
            membership(ex, key, group, ranks, members)?;
            let have: BTreeSet<i64> = members.iter().map(|r| i64::from(r.node.0)).collect();
            let absent: Vec<String> = ranks
                .iter()
                .filter(|r| given.contains(r) && !have.contains(r))
                .map(i64::to_string)
                .collect();
            if !absent.is_empty() && !members[0].kind.is_point_to_point() {
                let e = missing.entry(group).or_default();
                e.0 += 1;
                if e.1.is_empty() {
                    e.1 = format!("{key} has no event of rank(s) {}", absent.join(", "));
                }
            } else if ranks.iter().all(|r| have.contains(r)) && members.iter().any(|r| r.uneven) {
                totals(ex, key, members)?;
            }
            Ok(())
        });
        if let Err(e) = check {
            out.error.get_or_insert(e);
        }
    }
    for (group, (n, example)) in missing {
        out.warnings.push(Warning::new(
            WarningKind::GroupRankMissing,
            Some(group),
            n,
            format!("{n} instance(s) of process group {group:?} lack a rank of the group whose trace was given (e.g. {example}); they are checked on the ranks present"),
        ));
    }
    for group in used_groups {
        let Some(ranks) = groups.get(group) else {
            continue;
        };
        let absent: Vec<String> = ranks
            .iter()
            .filter(|r| !given.contains(r))
            .map(i64::to_string)
            .collect();
        if !absent.is_empty() {
            out.warnings.push(Warning::new(
                WarningKind::GroupRanksNotGiven,
                Some(group),
                absent.len(),
                format!(
                    "process group {group:?} has rank(s) {} with no trace given: its instances are checked on the ranks given",
                    absent.join(", ")
                ),
            ));
        }
    }
    out
}

/// Each group's ranks; two statements that differ are an error.
fn group_table(ex: &Extraction, statements: &[GroupRanks]) -> Result<BTreeMap<String, Vec<i64>>> {
    let mut table: BTreeMap<String, &GroupRanks> = BTreeMap::new();
    for s in statements {
        match table.get(&s.group) {
            None => {
                table.insert(s.group.clone(), s);
            }
            Some(first) => {
                let set = |g: &GroupRanks| g.ranks.iter().copied().collect::<BTreeSet<i64>>();
                if set(first) != set(s) {
                    return Err(Error::GroupRanksDisagree(Box::new(GroupRanksConflict {
                        group: s.group.clone(),
                        first: source(ex, first),
                        first_ranks: first.ranks.clone(),
                        second: source(ex, s),
                        second_ranks: s.ranks.clone(),
                    })));
                }
            }
        }
    }
    Ok(table
        .into_iter()
        .map(|(g, s)| (g, s.ranks.clone()))
        .collect())
}

fn source(ex: &Extraction, g: &GroupRanks) -> String {
    let place = match g.origin {
        RanksOrigin::PgConfig => "distributedInfo.pg_config".to_owned(),
        RanksOrigin::EventArgs(Some(id)) => {
            format!("`Process Group Ranks` of the event with External id {id}")
        }
        RanksOrigin::EventArgs(None) => "`Process Group Ranks` of an event".to_owned(),
    };
    format!("rank {} ({}) {place}", g.node, file(ex, g.node).display())
}

fn file(ex: &Extraction, node: NodeId) -> PathBuf {
    ex.nodes
        .get(&node)
        .and_then(|i| i.files.first())
        .map(PathBuf::from)
        .unwrap_or_default()
}

fn value(ex: &Extraction, r: &CommsRecord, value: String) -> RankValue {
    RankValue {
        rank: i64::from(r.node.0),
        file: file(ex, r.node),
        external_id: r.external_id,
        value,
    }
}

/// One arg of a record, as text.
type Getter = fn(&CommsRecord) -> Option<String>;

/// The members agree on name, group, dtype and (where comparable) counts;
/// returns the instance's group.
fn agreement<'a>(
    ex: &Extraction,
    key: &CommsKey,
    members: &[&'a CommsRecord],
) -> Result<Option<&'a str>> {
    let p2p = members[0].kind.is_point_to_point();
    let seq_p2p = p2p && matches!(key, CommsKey::Seq { .. });
    let uneven = members.iter().any(|r| r.uneven);
    let fields: [(CommsField, bool, Getter); 5] = [
        (CommsField::CollectiveName, !p2p, |r| {
            Some(r.collective.clone())
        }),
        (CommsField::ProcessGroupName, true, |r| r.group.clone()),
        (CommsField::Dtype, !seq_p2p, |r| r.dtype.clone()),
        (CommsField::InMsgNelems, !seq_p2p && !uneven, |r| {
            r.in_nelems.map(|n| n.to_string())
        }),
        (CommsField::OutMsgNelems, !seq_p2p && !uneven, |r| {
            r.out_nelems.map(|n| n.to_string())
        }),
    ];
    for (field, compared, get) in fields {
        if !compared {
            continue;
        }
        let present: Vec<(&CommsRecord, String)> =
            members.iter().filter_map(|r| Some((*r, get(r)?))).collect();
        if present.iter().any(|(_, v)| *v != present[0].1) {
            return Err(Error::InstanceDisagrees(Box::new(InstanceDisagreement {
                instance: key.clone(),
                field,
                values: distinct_by_rank(ex, &present),
            })));
        }
    }
    Ok(members[0].group.as_deref())
}

/// One value per rank (its first event), for the error.
fn distinct_by_rank(ex: &Extraction, present: &[(&CommsRecord, String)]) -> Vec<RankValue> {
    let mut seen = BTreeSet::new();
    present
        .iter()
        .filter(|(r, _)| seen.insert(r.node))
        .map(|(r, v)| value(ex, r, v.clone()))
        .collect()
}

/// Every member is a rank of the group.
fn membership(
    ex: &Extraction,
    key: &CommsKey,
    group: &str,
    ranks: &[i64],
    members: &[&CommsRecord],
) -> Result<()> {
    match members
        .iter()
        .find(|r| !ranks.contains(&i64::from(r.node.0)))
    {
        Some(r) => Err(Error::RankNotInGroup(Box::new(RankOutsideGroup {
            instance: key.clone(),
            group: group.to_owned(),
            rank: i64::from(r.node.0),
            file: file(ex, r.node),
            external_id: r.external_id,
            ranks: ranks.to_vec(),
        }))),
        None => Ok(()),
    }
}

/// Uneven sizes: what the ranks send adds up to what they receive.
fn totals(ex: &Extraction, key: &CommsKey, members: &[&CommsRecord]) -> Result<()> {
    let mut seen = BTreeSet::new();
    let per_rank: Vec<&CommsRecord> = members
        .iter()
        .filter(|r| seen.insert(r.node))
        .copied()
        .collect();
    let sum = |get: fn(&CommsRecord) -> Option<u64>| -> Option<u64> {
        per_rank.iter().map(|r| get(r)).sum::<Option<u64>>()
    };
    let (Some(sent), Some(received)) = (sum(|r| r.in_nelems), sum(|r| r.out_nelems)) else {
        return Ok(());
    };
    if sent == received {
        return Ok(());
    }
    Err(Error::InstanceDisagrees(Box::new(InstanceDisagreement {
        instance: key.clone(),
        field: CommsField::NelemsTotals,
        values: per_rank
            .iter()
            .map(|r| {
                let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
                value(
                    ex,
                    r,
                    format!("in {} out {}", n(r.in_nelems), n(r.out_nelems)),
                )
            })
            .collect(),
    })))
}
