//! Matching occurrences that carry no `run_id` (gloo annotations, NCCL
//! events without `Seq`) by their order on each participant.
//!
//! Where every participant ran each op of a process group (a module) equally
//! often, the k-th occurrence of an op on each participant forms instance k.
//! Where the counts differ (an event lost from one file, a profile cut
//! mid-step), matching by index would pair every later occurrence with the
//! wrong instance. Then each participant's whole sequence of the group's
//! ops (by start time) is aligned against the others' (a longest common
//! subsequence, after the common prefix and suffix): ops of a group follow
//! one another in one order on every rank, so a gap is pinned to its place
//! and costs only its own instance. Occurrences no other participant has at
//! that place form instances of their own (reported as unmatched or
//! incomplete by the matcher).
//!
//! Point-to-point ops (one op per sender and receiver) are sequences of
//! their own. An alignment whose unshared middle exceeds
//! [`MAX_ALIGNMENT_CELLS`] falls back to the index.

use std::collections::{BTreeMap, BTreeSet};

use crate::occurrence::{Occurrence, Sym};
use crate::units::Participant;

/// `(module, op)`.
pub(crate) type OpKey = (Option<Sym>, Sym);

/// The largest table (cells) one alignment may fill: the part of two
/// sequences between their common prefix and suffix, multiplied.
pub const MAX_ALIGNMENT_CELLS: usize = 64 << 20;

/// How one stream of ops (a module, or one point-to-point op) was matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Matched {
    /// Counts differed; aligned by sequence.
    Aligned,
    /// Counts differed, and the sequences differ too much to align: by index.
    TooLarge,
}

/// The occurrences of every stream, each with its instance index within its
/// op, and how each stream with differing counts was matched.
pub(crate) struct Ordered {
    /// `(op, instance index, occurrence)`.
    pub keyed: Vec<(OpKey, usize, Occurrence)>,
    /// Streams whose counts differ: `(module, op names of the stream)` →
    /// how they were matched and each participant's count per op.
    pub mismatched: Vec<Mismatch>,
}

/// A stream whose participants ran its ops a different number of times.
pub(crate) struct Mismatch {
    /// Each op of the stream and its count per participant.
    pub counts: BTreeMap<OpKey, Vec<(Participant, usize)>>,
    /// How the stream was matched.
    pub matched: Matched,
}

type Stream = (Option<Sym>, Option<Sym>);

/// Match `by_order` (each participant's occurrences per op); `p2p` says
/// which ops are point-to-point.
pub(crate) fn order(
    by_order: BTreeMap<(OpKey, Participant), Vec<Occurrence>>,
    p2p: impl Fn(Sym) -> bool,
) -> Ordered {
    let mut streams: BTreeMap<Stream, BTreeMap<Participant, Vec<Occurrence>>> = BTreeMap::new();
    for ((op, participant), list) in by_order {
        let stream = (op.0, p2p(op.1).then_some(op.1));
        streams
            .entry(stream)
            .or_default()
            .entry(participant)
            .or_default()
            .extend(list);
    }
    let mut out = Ordered {
        keyed: Vec::new(),
        mismatched: Vec::new(),
    };
    for mut seqs in streams.into_values() {
        for list in seqs.values_mut() {
            list.sort_by_key(|o| (o.begin, o.end));
        }
        let counts = op_counts(&seqs);
        let agree = counts.values().all(|c| c.iter().all(|&(_, n)| n == c[0].1));
        if agree {
            by_index(seqs, &mut out.keyed);
            continue;
        }
        let matched = match aligned(&seqs) {
            Some(columns) => {
                keyed_columns(columns, &mut out.keyed);
                Matched::Aligned
            }
            None => {
                by_index(seqs, &mut out.keyed);
                Matched::TooLarge
            }
        };
        out.mismatched.push(Mismatch { counts, matched });
    }
    out
}

/// Each op's count per participant of the stream (0 where it never ran).
fn op_counts(
    seqs: &BTreeMap<Participant, Vec<Occurrence>>,
) -> BTreeMap<OpKey, Vec<(Participant, usize)>> {
    let ops: BTreeSet<OpKey> = seqs.values().flatten().map(|o| (o.module, o.op)).collect();
    ops.into_iter()
        .map(|op| {
            let per = seqs
                .iter()
                .map(|(p, l)| (*p, l.iter().filter(|o| (o.module, o.op) == op).count()))
                .collect();
            (op, per)
        })
        .collect()
}

/// The k-th occurrence of each op on each participant is instance k.
fn by_index(
    seqs: BTreeMap<Participant, Vec<Occurrence>>,
    keyed: &mut Vec<(OpKey, usize, Occurrence)>,
) {
    for list in seqs.into_values() {
        let mut next: BTreeMap<OpKey, usize> = BTreeMap::new();
        for o in list {
            let k = next.entry((o.module, o.op)).or_default();
            keyed.push(((o.module, o.op), *k, o));
            *k += 1;
        }
    }
}

/// One place of the aligned sequences: its op and the occurrences there.
struct Column {
    op: Sym,
    members: Vec<Occurrence>,
}

/// Each column is an instance: its index is the number of earlier columns
/// of the same op.
fn keyed_columns(columns: Vec<Column>, keyed: &mut Vec<(OpKey, usize, Occurrence)>) {
    let mut next: BTreeMap<Sym, usize> = BTreeMap::new();
    for c in columns {
        let k = next.entry(c.op).or_default();
        for o in c.members {
            keyed.push(((o.module, o.op), *k, o));
        }
        *k += 1;
    }
}

/// Align every participant's sequence into one list of columns, each
/// participant in turn against the columns so far; None when an alignment
/// is too large.
fn aligned(seqs: &BTreeMap<Participant, Vec<Occurrence>>) -> Option<Vec<Column>> {
    let mut columns: Vec<Column> = Vec::new();
    for list in seqs.values() {
        let ops: Vec<Sym> = columns.iter().map(|c| c.op).collect();
        let path = lcs_path(&ops, &list.iter().map(|o| o.op).collect::<Vec<_>>())?;
        let mut old = std::mem::take(&mut columns).into_iter();
        let mut theirs = list.iter();
        for step in path {
            let column = match step {
                Step::Both => {
                    let mut c = old.next().expect("a column per left step");
                    c.members
                        .push(*theirs.next().expect("an occurrence per right step"));
                    c
                }
                Step::Left => old.next().expect("a column per left step"),
                Step::Right => {
                    let o = *theirs.next().expect("an occurrence per right step");
                    Column {
                        op: o.op,
                        members: vec![o],
                    }
                }
            };
            columns.push(column);
        }
    }
    Some(columns)
}

/// One step of an alignment of `a` (left) and `b` (right).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `a[i]` and `b[j]` match.
    Both,
    /// `a[i]` has no partner.
    Left,
    /// `b[j]` has no partner.
    Right,
}

/// A longest common subsequence of `a` and `b` as the steps that walk
/// both; None when the part between their common prefix and suffix is too
/// large to tabulate.
fn lcs_path(a: &[Sym], b: &[Sym]) -> Option<Vec<Step>> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let (n, m) = (ma.len(), mb.len());
    if (n + 1).saturating_mul(m + 1) > MAX_ALIGNMENT_CELLS {
        return None;
    }
    // len[i][j]: LCS length of ma[i..] and mb[j..].
    let w = m + 1;
    let mut len = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            len[i * w + j] = if ma[i] == mb[j] {
                len[(i + 1) * w + j + 1] + 1
            } else {
                len[(i + 1) * w + j].max(len[i * w + j + 1])
            };
        }
    }
    let mut path = vec![Step::Both; prefix];
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && ma[i] == mb[j] && len[i * w + j] == len[(i + 1) * w + j + 1] + 1 {
            path.push(Step::Both);
            i += 1;
            j += 1;
        } else if j == m || (i < n && len[(i + 1) * w + j] >= len[i * w + j + 1]) {
            path.push(Step::Left);
            i += 1;
        } else {
            path.push(Step::Right);
            j += 1;
        }
    }
    path.extend(std::iter::repeat_n(Step::Both, suffix));
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::CollectiveKind;
    use crate::hlo_groups::ReplicaGroup;
    use crate::occurrence::Extraction;
    use crate::permute::PermutePeers;
    use crate::units::{NodeId, TimePs};

    fn occ(node: u32, op: Sym, at: i128) -> Occurrence {
        Occurrence {
            participant: Participant {
                node: NodeId(node),
                device: None,
            },
            kind: CollectiveKind::AllReduce,
            op,
            module: None,
            run_id: None,
            group: ReplicaGroup::All,
            peers: PermutePeers::NotLookedUp,
            correlation: None,
            begin: TimePs(at),
            end: TimePs(at + 1),
            on_device: false,
        }
    }

    #[test]
    fn a_gap_is_pinned_between_its_neighbours() {
        let mut ex = Extraction::new();
        let (a, b) = (ex.intern("a"), ex.intern("b"));
        let full = [a, b, a, b, a, b];
        // Node 1 lacks the second `a` (index 2).
        let cut = [a, b, b, a, b];
        assert_eq!(
            lcs_path(&full, &cut).unwrap(),
            [
                Step::Both,
                Step::Both,
                Step::Left,
                Step::Both,
                Step::Both,
                Step::Both
            ]
        );
        let mut by_order: BTreeMap<(OpKey, Participant), Vec<Occurrence>> = BTreeMap::new();
        for (node, ops) in [(0, &full[..]), (1, &cut[..])] {
            for (t, op) in ops.iter().enumerate() {
                let o = occ(node, *op, t as i128 * 10);
                by_order
                    .entry(((None, *op), o.participant))
                    .or_default()
                    .push(o);
            }
        }
        let ordered = order(by_order, |_| false);
        assert_eq!(ordered.mismatched.len(), 1);
        assert_eq!(ordered.mismatched[0].matched, Matched::Aligned);
        // Instance `a` #1 has node 0 only; `a` #2 pairs node 0's third `a`
        // (t = 40) with node 1's second (t = 30).
        let of = |op: Sym, k: usize| -> Vec<(u32, i128)> {
            let mut v: Vec<(u32, i128)> = ordered
                .keyed
                .iter()
                .filter(|(o, i, _)| o.1 == op && *i == k)
                .map(|(_, _, o)| (o.participant.node.0, o.begin.0))
                .collect();
            v.sort();
            v
        };
        assert_eq!(of(a, 1), [(0, 20)]);
        assert_eq!(of(a, 2), [(0, 40), (1, 30)]);
        assert_eq!(of(b, 2), [(0, 50), (1, 40)]);
    }

    #[test]
    fn equal_counts_match_by_index_whatever_the_order() {
        let mut ex = Extraction::new();
        let (a, b) = (ex.intern("a"), ex.intern("b"));
        let mut by_order: BTreeMap<(OpKey, Participant), Vec<Occurrence>> = BTreeMap::new();
        for (node, ops) in [(0, [a, b]), (1, [b, a])] {
            for (t, op) in ops.iter().enumerate() {
                let o = occ(node, *op, t as i128);
                by_order
                    .entry(((None, *op), o.participant))
                    .or_default()
                    .push(o);
            }
        }
        let ordered = order(by_order, |_| false);
        assert!(ordered.mismatched.is_empty());
        assert_eq!(ordered.keyed.len(), 4);
        assert!(ordered.keyed.iter().all(|(_, k, _)| *k == 0));
    }

    #[test]
    fn too_large_a_middle_is_not_tabulated() {
        let mut ex = Extraction::new();
        let (a, b) = (ex.intern("a"), ex.intern("b"));
        let n = 9000;
        let left = vec![a; n];
        let right = vec![b; n];
        assert!(lcs_path(&left, &right).is_none());
        assert_eq!(lcs_path(&left, &left).unwrap().len(), n);
    }
}
