//! Name lookups within one plane: stat metadata by name, interned strings
//! (`ref_value`), event metadata names.

use std::collections::HashMap;

use crate::generated::{XPlane, XStat, XStatMetadata, x_stat};
use crate::view::{PlaneView, StatValue};
use crate::wire::WireError;

/// Lookup tables of one encoded plane, built once and borrowed from its bytes.
#[derive(Debug, Default, Clone)]
pub struct PlaneIndex<'a> {
    stat_names: HashMap<i64, &'a str>,
    stat_ids: HashMap<&'a str, i64>,
    event_names: HashMap<i64, &'a str>,
}

impl<'a> PlaneIndex<'a> {
    /// Read the plane's stat and event metadata.
    pub fn new(plane: &PlaneView<'a>) -> Result<Self, WireError> {
        let mut index = PlaneIndex::default();
        for entry in plane.stat_metadata() {
            let entry = entry?;
            index.stat_names.insert(entry.key, entry.value.name);
            // The first id of a name wins, so lookups are stable.
            index.stat_ids.entry(entry.value.name).or_insert(entry.key);
        }
        for entry in plane.event_metadata() {
            let entry = entry?;
            index.event_names.insert(entry.key, entry.value.name);
        }
        Ok(index)
    }

    /// An index of names given rather than read from a plane: event names
    /// and stat names by id (for slices a writer adds beside a plane's).
    ///
    /// ```
    /// let index = xplane_proto::PlaneIndex::from_names([(1, "kernel")], [(1, "step")]);
    /// assert_eq!(index.event_name(1), Some("kernel"));
    /// assert_eq!(index.stat_id("step"), Some(1));
    /// ```
    pub fn from_names(
        events: impl IntoIterator<Item = (i64, &'a str)>,
        stats: impl IntoIterator<Item = (i64, &'a str)>,
    ) -> Self {
        let mut index = PlaneIndex {
            event_names: events.into_iter().collect(),
            ..PlaneIndex::default()
        };
        for (id, name) in stats {
            index.stat_names.insert(id, name);
            index.stat_ids.entry(name).or_insert(id);
        }
        index
    }

    /// The id of the stat metadata named `name`.
    pub fn stat_id(&self, name: &str) -> Option<i64> {
        self.stat_ids.get(name).copied()
    }

    /// The name of stat metadata `id`.
    pub fn stat_name(&self, id: i64) -> Option<&'a str> {
        self.stat_names.get(&id).copied()
    }

    /// The name of event metadata `id`.
    pub fn event_name(&self, id: i64) -> Option<&'a str> {
        self.event_names.get(&id).copied()
    }

    /// True when the plane has event metadata `id`.
    pub fn has_event_metadata(&self, id: i64) -> bool {
        self.event_names.contains_key(&id)
    }

    /// A string stat's text: `str_value` as is, `ref_value` resolved through
    /// the stat metadata; `None` for other kinds or a dangling reference.
    pub fn resolve_str(&self, value: &StatValue<'a>) -> Option<&'a str> {
        match *value {
            StatValue::Str(s) => Some(s),
            StatValue::Ref(id) => self.stat_name(id as i64),
            _ => None,
        }
    }
}

/// Name lookups on an owned plane.
pub trait XPlaneExt {
    /// The id of the stat metadata named `name`.
    fn stat_id(&self, name: &str) -> Option<i64>;
    /// The name of event metadata `id`.
    fn event_name(&self, id: i64) -> Option<&str>;
    /// A string stat's text, resolving `ref_value` through the stat metadata.
    fn resolve_str<'s>(&'s self, value: &'s x_stat::Value) -> Option<&'s str>;
    /// The first stat in `stats` whose metadata is named `name`.
    fn find_stat<'s>(&self, stats: &'s [XStat], name: &str) -> Option<&'s XStat>;
    /// The plane's own stat `name` as an integer (uint64 or int64), such as
    /// the epoch-ns times of `Task Environment`.
    fn integer_stat(&self, name: &str) -> Option<i128>;
    /// The id of stat metadata `name`, added with a fresh id (above every
    /// existing one) when the plane has none.
    fn intern_stat(&mut self, name: &str) -> i64;
    /// Set the plane's own stat `name` to `value`, replacing any it had.
    fn set_stat(&mut self, name: &str, value: x_stat::Value);
}

impl XPlaneExt for XPlane {
    fn stat_id(&self, name: &str) -> Option<i64> {
        self.stat_metadata
            .iter()
            .find(|(_, m)| m.name == name)
            .map(|(id, _)| *id)
    }

    fn event_name(&self, id: i64) -> Option<&str> {
        self.event_metadata.get(&id).map(|m| m.name.as_str())
    }

    fn resolve_str<'s>(&'s self, value: &'s x_stat::Value) -> Option<&'s str> {
        match value {
            x_stat::Value::StrValue(s) => Some(s),
            x_stat::Value::RefValue(id) => self
                .stat_metadata
                .get(&(*id as i64))
                .map(|m| m.name.as_str()),
            _ => None,
        }
    }

    fn find_stat<'s>(&self, stats: &'s [XStat], name: &str) -> Option<&'s XStat> {
        let id = self.stat_id(name)?;
        stats.iter().find(|s| s.metadata_id == id)
    }

    fn integer_stat(&self, name: &str) -> Option<i128> {
        match self.find_stat(&self.stats, name)?.value.as_ref()? {
            x_stat::Value::Uint64Value(v) => Some(*v as i128),
            x_stat::Value::Int64Value(v) => Some(*v as i128),
            _ => None,
        }
    }

    fn intern_stat(&mut self, name: &str) -> i64 {
        if let Some(id) = self.stat_id(name) {
            return id;
        }
        let id = self.stat_metadata.keys().next_back().map_or(1, |k| k + 1);
        self.stat_metadata.insert(
            id,
            XStatMetadata {
                id,
                name: name.to_owned(),
                description: String::new(),
            },
        );
        id
    }

    fn set_stat(&mut self, name: &str, value: x_stat::Value) {
        let id = self.intern_stat(name);
        self.stats.retain(|s| s.metadata_id != id);
        self.stats.push(XStat {
            metadata_id: id,
            value: Some(value),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_set_by_name_with_fresh_ids() {
        let mut plane = XPlane::default();
        plane.stat_metadata.insert(
            7,
            XStatMetadata {
                id: 7,
                name: "profile_start_time".into(),
                description: String::new(),
            },
        );
        plane.set_stat("profile_start_time", x_stat::Value::Uint64Value(5));
        plane.set_stat("profile_start_time", x_stat::Value::Uint64Value(6));
        assert_eq!(plane.stats.len(), 1, "replaced, not added");
        assert_eq!(plane.integer_stat("profile_start_time"), Some(6));
        assert_eq!(plane.intern_stat("new"), 8, "above every existing id");
        assert_eq!(plane.intern_stat("new"), 8);
        plane.set_stat("signed", x_stat::Value::Int64Value(-3));
        assert_eq!(plane.integer_stat("signed"), Some(-3));
        plane.set_stat("text", x_stat::Value::StrValue("x".into()));
        assert_eq!(plane.integer_stat("text"), None);
        assert_eq!(plane.integer_stat("missing"), None);
    }
}
