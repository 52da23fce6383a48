//! An [`Extraction`] as stored: the string table and the occurrences that
//! index it, with the reader's statistics, nodes and Kineto records, so
//! that one node's collectives can be read once where its trace lives and
//! matched elsewhere. Deserialising checks what [`Extraction::push`]
//! asserts: every symbol names a string, no occurrence ends before it
//! begins, and no string is listed twice.
//!
//! Compact for its size on disk (and for gzip): the participants are a
//! table, and the occurrences are stored by column, each column one array;
//! `begin`, `run_id` and `correlation` hold the difference from the
//! occurrence before (the first value, absolute), `length` is `end −
//! begin`; times in ps.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::classify::CollectiveKind;
use crate::comms::KinetoRecords;
use crate::hlo_groups::ReplicaGroup;
use crate::occurrence::{ExtractStats, Extraction, NodeInfo, Occurrence, Sym};
use crate::permute::PermutePeers;
use crate::units::{NodeId, Participant, TimePs};

/// The occurrences as stored, by column (see the module docs).
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Columns {
    participant: Vec<u32>,
    kind: Vec<CollectiveKind>,
    op: Vec<Sym>,
    module: Vec<Option<Sym>>,
    run_id: Vec<Option<i128>>,
    group: Vec<ReplicaGroup>,
    peers: Vec<PermutePeers>,
    correlation: Vec<Option<i128>>,
    begin: Vec<i128>,
    length: Vec<i128>,
    on_device: Vec<bool>,
}

/// The difference of each present value from the present one before it
/// (the first, from 0).
fn deltas(values: impl Iterator<Item = Option<i128>>) -> Vec<Option<i128>> {
    let mut previous = 0;
    values
        .map(|v| {
            v.map(|v| {
                let d = v - previous;
                previous = v;
                d
            })
        })
        .collect()
}

/// The values of [`deltas`]; `None` past the range of `T`.
fn sums<T: TryFrom<i128>>(deltas: &[Option<i128>]) -> Option<Vec<Option<T>>> {
    let mut previous = 0i128;
    deltas
        .iter()
        .map(|d| match d {
            None => Some(None),
            Some(d) => {
                previous = previous.checked_add(*d)?;
                T::try_from(previous).ok().map(Some)
            }
        })
        .collect()
}

/// The stored fields, borrowed for writing.
#[derive(Serialize)]
struct StoredRef<'a> {
    names: &'a [String],
    participants: Vec<Participant>,
    occurrences: Columns,
    stats: &'a ExtractStats,
    nodes: &'a BTreeMap<NodeId, NodeInfo>,
    kineto: &'a KinetoRecords,
}

/// The stored fields, owned for reading.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    names: Vec<String>,
    participants: Vec<Participant>,
    occurrences: Columns,
    stats: ExtractStats,
    nodes: BTreeMap<NodeId, NodeInfo>,
    kineto: KinetoRecords,
}

impl Serialize for Extraction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (participants, occurrences) = columns(self.occurrences());
        StoredRef {
            names: self.names(),
            participants,
            occurrences,
            stats: &self.stats,
            nodes: &self.nodes,
            kineto: &self.kineto,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Extraction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = Stored::deserialize(deserializer)?;
        let custom = <D::Error as serde::de::Error>::custom;
        let mut ids = HashMap::with_capacity(stored.names.len());
        for (i, name) in stored.names.iter().enumerate() {
            let sym = Sym::at(i).ok_or_else(|| custom("more than 2^32 names".to_owned()))?;
            if ids.insert(name.clone(), sym).is_some() {
                return Err(custom(format!("name {name:?} listed twice")));
            }
        }
        let occurrences = occurrences(&stored).map_err(custom)?;
        Ok(Extraction::from_parts(
            occurrences,
            stored.names,
            ids,
            stored.stats,
            stored.nodes,
            stored.kineto,
        ))
    }
}

/// The participants table and the columns of `occurrences`.
fn columns(occurrences: &[Occurrence]) -> (Vec<Participant>, Columns) {
    let mut participants: Vec<Participant> = Vec::new();
    let mut index = HashMap::new();
    let mut c = Columns::default();
    for o in occurrences {
        let p = *index.entry(o.participant).or_insert_with(|| {
            participants.push(o.participant);
            (participants.len() - 1) as u32
        });
        c.participant.push(p);
        c.kind.push(o.kind);
        c.op.push(o.op);
        c.module.push(o.module);
        c.group.push(o.group);
        c.peers.push(o.peers);
        c.length.push(o.end.0 - o.begin.0);
        c.on_device.push(o.on_device);
    }
    c.run_id = deltas(occurrences.iter().map(|o| o.run_id.map(i128::from)));
    c.correlation = deltas(occurrences.iter().map(|o| o.correlation.map(i128::from)));
    c.begin = deltas(occurrences.iter().map(|o| Some(o.begin.0)))
        .into_iter()
        .flatten()
        .collect();
    (participants, c)
}

/// The occurrences of `stored`, checked.
fn occurrences(stored: &Stored) -> Result<Vec<Occurrence>, String> {
    let c = &stored.occurrences;
    let n = c.participant.len();
    let lengths = [
        c.kind.len(),
        c.op.len(),
        c.module.len(),
        c.run_id.len(),
        c.group.len(),
        c.peers.len(),
        c.correlation.len(),
        c.begin.len(),
        c.length.len(),
        c.on_device.len(),
    ];
    if lengths.iter().any(|&l| l != n) {
        return Err(format!(
            "occurrence columns of different lengths ({n} participants, {lengths:?})"
        ));
    }
    let run_ids = sums::<i64>(&c.run_id).ok_or("a run_id out of range")?;
    let correlations = sums::<u64>(&c.correlation).ok_or("a correlation out of range")?;
    let begin_deltas: Vec<Option<i128>> = c.begin.iter().copied().map(Some).collect();
    let begins = sums::<i128>(&begin_deltas).ok_or("a begin out of range")?;
    let known = |s: Sym| s.index() < stored.names.len();
    (0..n)
        .map(|i| {
            let participant = *stored
                .participants
                .get(c.participant[i] as usize)
                .ok_or_else(|| format!("occurrence {i} names no stored participant"))?;
            if !known(c.op[i]) || !c.module[i].is_none_or(known) {
                return Err(format!("occurrence {i} names no stored string"));
            }
            let begin = begins[i].ok_or("a begin out of range")?;
            if c.length[i] < 0 {
                return Err(format!("occurrence {i} ends before it begins"));
            }
            let end = begin
                .checked_add(c.length[i])
                .ok_or_else(|| format!("occurrence {i}: end out of range"))?;
            Ok(Occurrence {
                participant,
                kind: c.kind[i],
                op: c.op[i],
                module: c.module[i],
                run_id: run_ids[i],
                group: c.group[i],
                peers: c.peers[i],
                correlation: correlations[i],
                begin: TimePs(begin),
                end: TimePs(end),
                on_device: c.on_device[i],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::CollectiveKind;
    use crate::units::{Participant, TimePs};

    fn one() -> Extraction {
        let mut e = Extraction::new();
        let op = e.intern("all-reduce.1");
        let module = Some(e.intern("jit_step"));
        e.push(Occurrence {
            participant: Participant {
                node: NodeId(3),
                device: Some(1),
            },
            kind: CollectiveKind::AllReduce,
            op,
            module,
            run_id: Some(7),
            group: Default::default(),
            peers: Default::default(),
            correlation: Some(11),
            begin: TimePs(1_795_303_341_484_103_896_250),
            end: TimePs(1_795_303_341_484_203_896_250),
            on_device: true,
        });
        e
    }

    #[test]
    fn round_trips_through_json() {
        let e = one();
        let text = serde_json::to_string(&e).unwrap();
        let back: Extraction = serde_json::from_str(&text).unwrap();
        assert_eq!(back.occurrences(), e.occurrences());
        assert_eq!(back.names(), e.names());
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
    }

    #[test]
    fn times_are_stored_as_differences() {
        let mut e = one();
        let mut second = e.occurrences()[0];
        second.begin = TimePs(second.begin.0 + 5_000);
        second.end = TimePs(second.begin.0 + 7_000);
        e.push(second);
        let text = serde_json::to_string(&e).unwrap();
        assert!(
            text.contains(r#""begin":[1795303341484103896250,5000]"#),
            "{text}"
        );
        assert!(text.contains(r#""length":[100000000,7000]"#), "{text}");
        assert!(text.contains(r#""correlation":[11,0]"#), "{text}");
        let back: Extraction = serde_json::from_str(&text).unwrap();
        assert_eq!(back.occurrences(), e.occurrences());
    }

    #[test]
    fn refuses_a_symbol_without_its_string() {
        let text = serde_json::to_string(&one()).unwrap();
        let text = text.replace(r#""names":["all-reduce.1","jit_step"]"#, r#""names":["x"]"#);
        assert!(text.contains(r#""names":["x"]"#));
        let err = serde_json::from_str::<Extraction>(&text).unwrap_err();
        assert!(err.to_string().contains("names no stored string"), "{err}");
    }

    #[test]
    fn refuses_an_occurrence_that_ends_before_it_begins() {
        let text = serde_json::to_string(&one()).unwrap();
        assert!(text.contains(r#""length":[100000000]"#), "{text}");
        let text = text.replace(r#""length":[100000000]"#, r#""length":[-1]"#);
        let err = serde_json::from_str::<Extraction>(&text).unwrap_err();
        assert!(err.to_string().contains("ends before it begins"), "{err}");
    }
}
