//! An [`Extraction`] as stored: the string table and the occurrences that
//! index it, with the reader's statistics, nodes and Kineto records, so
//! that one node's collectives can be read once where its trace lives and
//! matched elsewhere. Deserialising checks what [`Extraction::push`]
//! asserts: every symbol names a string, no occurrence ends before it
//! begins, and no string is listed twice.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::comms::KinetoRecords;
use crate::occurrence::{ExtractStats, Extraction, NodeInfo, Occurrence, Sym};
use crate::units::NodeId;

/// The stored fields, borrowed for writing.
#[derive(Serialize)]
struct StoredRef<'a> {
    names: &'a [String],
    occurrences: &'a [Occurrence],
    stats: &'a ExtractStats,
    nodes: &'a BTreeMap<NodeId, NodeInfo>,
    kineto: &'a KinetoRecords,
}

/// The stored fields, owned for reading.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    names: Vec<String>,
    occurrences: Vec<Occurrence>,
    stats: ExtractStats,
    nodes: BTreeMap<NodeId, NodeInfo>,
    kineto: KinetoRecords,
}

impl Serialize for Extraction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StoredRef {
            names: self.names(),
            occurrences: self.occurrences(),
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
        for (i, o) in stored.occurrences.iter().enumerate() {
            let known = |s: Sym| s.index() < stored.names.len();
            if !known(o.op) || !o.module.is_none_or(known) {
                return Err(custom(format!("occurrence {i} names no stored string")));
            }
            if o.end < o.begin {
                return Err(custom(format!("occurrence {i} ends before it begins")));
            }
        }
        Ok(Extraction::from_parts(
            stored.occurrences,
            stored.names,
            ids,
            stored.stats,
            stored.nodes,
            stored.kineto,
        ))
    }
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
    fn refuses_a_symbol_without_its_string() {
        let text = serde_json::to_string(&one()).unwrap();
        let text = text.replace(r#""names":["all-reduce.1","jit_step"]"#, r#""names":["x"]"#);
        let err = serde_json::from_str::<Extraction>(&text).unwrap_err();
        assert!(err.to_string().contains("names no stored string"), "{err}");
    }

    #[test]
    fn refuses_an_occurrence_that_ends_before_it_begins() {
        let text = serde_json::to_string(&one()).unwrap();
        let text = text.replace("1795303341484203896250", "1");
        let err = serde_json::from_str::<Extraction>(&text).unwrap_err();
        assert!(err.to_string().contains("ends before it begins"), "{err}");
    }
}
