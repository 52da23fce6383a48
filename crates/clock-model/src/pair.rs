//! One clock snapshot pair: the tracer clock and the host clock read one
//! after the other.

use crate::time::{HostTime, TracerTime};

/// A tracer-clock reading and the host (REALTIME, "sys") reading taken
/// right after it. The two fields have different clock-domain types, so a
/// pair cannot be built with its clocks swapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnapshotPair {
    /// The tracer clock reading (`R_i`).
    pub tracer: TracerTime,
    /// The host clock reading (`H_i`).
    pub host: HostTime,
}

impl SnapshotPair {
    /// The tracer reading, whole ns (rounded down).
    pub const fn tracer_ns(&self) -> i128 {
        self.tracer.as_ns_floor()
    }

    /// The host reading, whole ns (rounded down).
    pub const fn sys_ns(&self) -> i128 {
        self.host.as_ns_floor()
    }

    /// `host − tracer`, ps: the offset the pair samples.
    pub(crate) fn offset_ps(&self) -> i128 {
        self.host.as_ps() - self.tracer.as_ps()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_round_trip() {
        let p = SnapshotPair {
            tracer: TracerTime::from_unsigned_ns(7),
            host: HostTime::from_unsigned_ns(1_000_000_009),
        };
        assert_eq!((p.tracer_ns(), p.sys_ns()), (7, 1_000_000_009));
        assert_eq!(p.offset_ps(), 1_000_000_002_000);
    }
}
