//! Event ids: every synthetic event carries one as a uint64 stat, and the
//! truth file is keyed by it.

use serde::{Deserialize, Serialize};

/// Name of the uint64 event stat that carries the [`EventId`]. Resolve it by
/// name through the plane's `stat_metadata`: merges renumber metadata ids.
pub const SYNTH_EVENT_ID_STAT: &str = "synth_event_id";

/// Which clock path an event takes through alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Host-plane event on the host REALTIME clock (TraceMe line).
    HostWall,
    /// Host-plane event of the GPU runtime tracer (API callback), on the tracer clock.
    HostRuntime,
    /// Device-plane event (kernel, memcpy, collective), on the tracer clock.
    Device,
}

impl EventKind {
    /// All kinds, in report order.
    pub const ALL: [EventKind; 3] = [
        EventKind::Device,
        EventKind::HostRuntime,
        EventKind::HostWall,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::HostWall => "host_wall",
            EventKind::HostRuntime => "host_runtime",
            EventKind::Device => "device",
        }
    }
}

/// A unique event id: `node << 48 | class << 40 | seq`.
///
/// `class` is 0 for host wall-clock events, 1 for host runtime (tracer)
/// events and `2 + k` for events of `/device:GPU:<k>`; `seq` counts the
/// events of that (node, class) in file order, from 0. Ids therefore rise
/// strictly in the order the generator writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId(pub u64);

impl EventId {
    /// Largest `seq` the layout holds.
    pub const MAX_SEQ: u64 = (1 << 40) - 1;

    /// Build an id; panics if a part is out of range (the config limits prevent it).
    pub fn new(node: u32, class: u8, seq: u64) -> EventId {
        assert!(
            node <= 0xffff && seq <= Self::MAX_SEQ,
            "event id out of range"
        );
        EventId((u64::from(node) << 48) | (u64::from(class) << 40) | seq)
    }

    /// The class of a device event of GPU `k`.
    pub fn device_class(gpu: u32) -> u8 {
        (gpu + 2) as u8
    }

    /// The node.
    pub fn node(self) -> u32 {
        (self.0 >> 48) as u32
    }

    /// The class (see the type's doc).
    pub fn class(self) -> u8 {
        (self.0 >> 40) as u8
    }

    /// The position within the (node, class).
    pub fn seq(self) -> u64 {
        self.0 & Self::MAX_SEQ
    }

    /// The event's kind.
    pub fn kind(self) -> EventKind {
        match self.class() {
            0 => EventKind::HostWall,
            1 => EventKind::HostRuntime,
            _ => EventKind::Device,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_parts_round_trip() {
        let id = EventId::new(7, EventId::device_class(3), 123_456);
        assert_eq!((id.node(), id.class(), id.seq()), (7, 5, 123_456));
        assert_eq!(id.kind(), EventKind::Device);
        assert_eq!(EventId::new(1, 0, 0).kind(), EventKind::HostWall);
        assert!(EventId::new(0, 1, 5) < EventId::new(0, 2, 0));
    }
}
