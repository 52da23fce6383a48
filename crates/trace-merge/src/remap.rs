//! Metadata of a merged plane and the id remapping of what is copied into it.
//!
//! Event metadata ids and stat metadata ids are plane-local. Copying a plane
//! into a plane that already has metadata can change ids; then every
//! reference must follow: `XEvent.metadata_id`, every `XStat.metadata_id`,
//! `ref_value` stats (their value is a stat metadata id: the interned string),
//! `XEventMetadata.child_id`, and the stats on event metadata.

use std::collections::{BTreeMap, HashMap};

use xplane_proto::{PlaneView, WireError, XEvent, XEventMetadata, XStat, XStatMetadata, x_stat};

/// How the ids of one source plane map onto the merged plane. Ids the map
/// does not know (dangling references in the source) are left unchanged.
#[derive(Debug, Clone, Default)]
pub struct IdRemap {
    stat: HashMap<i64, i64>,
    event: HashMap<i64, i64>,
    identity: bool,
}

impl IdRemap {
    /// True when no id changes, so events can be copied byte for byte.
    pub fn is_identity(&self) -> bool {
        self.identity
    }

    /// The merged id of stat metadata `id`.
    pub fn stat_id(&self, id: i64) -> i64 {
        self.stat.get(&id).copied().unwrap_or(id)
    }

    /// The merged id of event metadata `id`.
    pub fn event_id(&self, id: i64) -> i64 {
        self.event.get(&id).copied().unwrap_or(id)
    }

    /// Remap a stat's metadata id and, for `ref_value`, the referenced id.
    pub fn remap_stat(&self, stat: &mut XStat) {
        stat.metadata_id = self.stat_id(stat.metadata_id);
        if let Some(x_stat::Value::RefValue(r)) = &mut stat.value {
            *r = self.stat_id(*r as i64) as u64;
        }
    }

    /// Remap an event's metadata id and its stats.
    pub fn remap_event(&self, event: &mut XEvent) {
        event.metadata_id = self.event_id(event.metadata_id);
        event.stats.iter_mut().for_each(|s| self.remap_stat(s));
    }

    fn finish(mut self) -> Self {
        self.identity =
            self.stat.iter().all(|(a, b)| a == b) && self.event.iter().all(|(a, b)| a == b);
        self
    }
}

/// The metadata of one merged plane, filled from one or more source planes.
///
/// Invariants: every map key equals its entry's `id`; stat metadata names
/// are unique (a name absorbed twice maps to the first id).
#[derive(Debug, Clone, Default)]
pub struct PlaneMetadata {
    event_metadata: BTreeMap<i64, XEventMetadata>,
    stat_metadata: BTreeMap<i64, XStatMetadata>,
    stat_by_name: HashMap<String, i64>,
}

impl PlaneMetadata {
    /// Empty metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// The event metadata.
    pub fn event_metadata(&self) -> &BTreeMap<i64, XEventMetadata> {
        &self.event_metadata
    }

    /// The stat metadata.
    pub fn stat_metadata(&self) -> &BTreeMap<i64, XStatMetadata> {
        &self.stat_metadata
    }

    fn next_stat_id(&self) -> i64 {
        self.stat_metadata
            .keys()
            .next_back()
            .map_or(1, |m| m + 1)
            .max(1)
    }

    fn next_event_id(&self) -> i64 {
        self.event_metadata
            .keys()
            .next_back()
            .map_or(1, |m| m + 1)
            .max(1)
    }

    /// The id of stat metadata `name`, added above the largest id if absent.
    pub fn intern_stat(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.stat_by_name.get(name) {
            return id;
        }
        let id = self.next_stat_id();
        self.insert_stat(
            id,
            XStatMetadata {
                id,
                name: name.to_owned(),
                description: String::new(),
            },
        );
        id
    }

    fn insert_stat(&mut self, id: i64, meta: XStatMetadata) {
        self.stat_by_name.entry(meta.name.clone()).or_insert(id);
        self.stat_metadata.insert(id, meta);
    }

    /// Add an owned plane's metadata; see [`PlaneMetadata::absorb`].
    pub fn absorb_owned(
        &mut self,
        event_metadata: &BTreeMap<i64, XEventMetadata>,
        stat_metadata: &BTreeMap<i64, XStatMetadata>,
    ) -> IdRemap {
        let mut remap = IdRemap::default();
        // Stat metadata first: event metadata stats point into it.
        for (&key, meta) in stat_metadata {
            let id = match self.stat_by_name.get(&meta.name) {
                Some(&existing) => existing,
                None => {
                    let id = if self.stat_metadata.contains_key(&key) || key <= 0 {
                        self.next_stat_id()
                    } else {
                        key
                    };
                    let mut meta = meta.clone();
                    meta.id = id;
                    self.insert_stat(id, meta);
                    id
                }
            };
            remap.stat.insert(key, id);
        }
        // Event metadata: ids first (child_id points within the plane), then
        // the entries with their references remapped. Entries are never
        // merged by name: two programs can reuse a name with other stats.
        // An id is taken when it is already present or assigned in this pass;
        // new ids come from above every taken id, so they cannot collide.
        let mut taken: std::collections::HashSet<i64> =
            self.event_metadata.keys().copied().collect();
        let mut next = self
            .next_event_id()
            .max(event_metadata.keys().next_back().map_or(1, |m| m + 1));
        for &key in event_metadata.keys() {
            let id = if key <= 0 || !taken.insert(key) {
                next += 1;
                next - 1
            } else {
                key
            };
            taken.insert(id);
            remap.event.insert(key, id);
        }
        for (key, meta) in event_metadata {
            let mut meta = meta.clone();
            meta.id = remap.event[key];
            meta.stats.iter_mut().for_each(|s| remap.remap_stat(s));
            meta.child_id
                .iter_mut()
                .for_each(|c| *c = remap.event_id(*c));
            self.event_metadata.insert(meta.id, meta);
        }
        remap.finish()
    }

    /// Add the metadata of `plane`, keeping its ids where they are free and
    /// allocating new ids above the largest where not. Stat metadata of a
    /// name already present maps onto the present id. Returns how the
    /// plane's ids map onto this metadata.
    pub fn absorb(&mut self, plane: &PlaneView<'_>) -> Result<IdRemap, WireError> {
        let mut events = BTreeMap::new();
        for entry in plane.event_metadata() {
            let entry = entry?;
            events.insert(entry.key, entry.value.to_owned()?);
        }
        let mut stats = BTreeMap::new();
        for entry in plane.stat_metadata() {
            let entry = entry?;
            stats.insert(entry.key, entry.value.to_owned());
        }
        Ok(self.absorb_owned(&events, &stats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smeta(id: i64, name: &str) -> (i64, XStatMetadata) {
        (
            id,
            XStatMetadata {
                id,
                name: name.into(),
                description: String::new(),
            },
        )
    }

    #[test]
    fn first_plane_is_identity_and_intern_allocates_above_max() {
        let mut m = PlaneMetadata::new();
        let stats = BTreeMap::from([smeta(1, "hlo_op"), smeta(7, "fusion.1")]);
        let remap = m.absorb_owned(&BTreeMap::new(), &stats);
        assert!(remap.is_identity());
        assert_eq!(m.intern_stat("node_id"), 8);
        assert_eq!(m.intern_stat("hlo_op"), 1);
        assert_eq!(m.intern_stat("node_id"), 8);
    }

    #[test]
    fn second_plane_ids_move_and_references_follow() {
        let mut m = PlaneMetadata::new();
        let a_stats = BTreeMap::from([smeta(1, "hlo_op"), smeta(2, "fusion.1")]);
        let a_events = BTreeMap::from([(
            1,
            XEventMetadata {
                id: 1,
                name: "a".into(),
                ..Default::default()
            },
        )]);
        assert!(m.absorb_owned(&a_events, &a_stats).is_identity());

        let b_stats =
            BTreeMap::from([smeta(1, "run_id"), smeta(2, "hlo_op"), smeta(3, "fusion.2")]);
        let b_events = BTreeMap::from([
            (
                1,
                XEventMetadata {
                    id: 1,
                    name: "parent".into(),
                    child_id: vec![2],
                    stats: vec![XStat {
                        metadata_id: 2,
                        value: Some(x_stat::Value::RefValue(3)),
                    }],
                    ..Default::default()
                },
            ),
            (
                2,
                XEventMetadata {
                    id: 2,
                    name: "child".into(),
                    ..Default::default()
                },
            ),
        ]);
        let remap = m.absorb_owned(&b_events, &b_stats);
        assert!(!remap.is_identity());
        // run_id collides with hlo_op's id 1: new id above the max (3);
        // hlo_op maps onto the existing 1; fusion.2 takes the next free id.
        assert_eq!(remap.stat_id(1), 3);
        assert_eq!(remap.stat_id(2), 1);
        assert_eq!(remap.stat_id(3), 4);
        let parent = &m.event_metadata()[&remap.event_id(1)];
        assert_eq!(parent.name, "parent");
        assert_eq!(parent.child_id, vec![remap.event_id(2)]);
        assert_eq!(m.event_metadata()[&parent.child_id[0]].name, "child");
        let s = &parent.stats[0];
        assert_eq!(m.stat_metadata()[&s.metadata_id].name, "hlo_op");
        let Some(x_stat::Value::RefValue(r)) = s.value else {
            panic!("ref value lost")
        };
        assert_eq!(m.stat_metadata()[&(r as i64)].name, "fusion.2");
        for (k, v) in m.stat_metadata() {
            assert_eq!(*k, v.id);
        }
        for (k, v) in m.event_metadata() {
            assert_eq!(*k, v.id);
        }

        let mut ev = XEvent {
            metadata_id: 2,
            stats: vec![
                XStat {
                    metadata_id: 2,
                    value: Some(x_stat::Value::RefValue(3)),
                },
                XStat {
                    metadata_id: 1,
                    value: Some(x_stat::Value::Int64Value(-4)),
                },
            ],
            ..Default::default()
        };
        remap.remap_event(&mut ev);
        assert_eq!(m.event_metadata()[&ev.metadata_id].name, "child");
        assert_eq!(m.stat_metadata()[&ev.stats[0].metadata_id].name, "hlo_op");
        assert_eq!(
            ev.stats[0].value,
            Some(x_stat::Value::RefValue(remap.stat_id(3) as u64))
        );
        assert_eq!(m.stat_metadata()[&ev.stats[1].metadata_id].name, "run_id");
    }
}
