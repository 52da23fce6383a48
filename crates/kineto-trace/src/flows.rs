//! Flows drawn across ranks in a merged trace: one arrow through the events
//! of one collective instance, found by rank and `External id`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::event::{Event, Id, Phase};
use crate::time::write_micros;

/// The events of one collective instance, to be joined by a flow in the
/// merged trace: each by its rank and its `External id` arg.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrossRankFlow {
    /// The flow's name (shown by the viewer), e.g. the collective's op.
    pub name: String,
    /// `(rank, External id)` of each event, in any order.
    pub events: Vec<(u32, u64)>,
}

/// The flow category in the merged trace.
pub const COLLECTIVE_FLOW_CAT: &str = "collective";

/// Where a wanted event landed in the merged trace.
struct Place {
    pid: u64,
    tid: Vec<u8>,
    ts: i64,
}

/// The wanted events and, once the merge has passed them, their places.
pub(crate) struct FlowPoints {
    wanted: HashSet<(u32, u64)>,
    found: HashMap<(u32, u64), Place>,
}

impl FlowPoints {
    pub fn new(flows: &[CrossRankFlow]) -> Self {
        FlowPoints {
            wanted: flows
                .iter()
                .flat_map(|f| f.events.iter().copied())
                .collect(),
            found: HashMap::new(),
        }
    }

    /// Note `e` of `rank` if a flow wants it; `pid` is its merged pid, `ts`
    /// its merged `ts` in ns.
    pub fn see(&mut self, rank: u32, e: &Event<'_>, pid: Option<u64>, ts: Option<i64>) {
        if self.wanted.is_empty() || e.phase != Phase::Complete {
            return;
        }
        let (Some(args), Some(pid), Some(ts)) = (e.args, pid, ts) else {
            return;
        };
        let Some(x) = external_id(args) else { return };
        if self.wanted.contains(&(rank, x)) {
            let tid = match e.tid {
                Some(Id::Int(n)) => n.to_string().into_bytes(),
                Some(Id::Str(s)) => [b"\"", s.0, b"\""].concat(),
                Some(Id::Other(raw)) => raw.to_vec(),
                None => b"0".to_vec(),
            };
            self.found.insert((rank, x), Place { pid, tid, ts });
        }
    }

    /// Append the flow events (`s`, `t`…, `f`, bound to the enclosing
    /// slices) of every flow with at least two events found; ids from
    /// `first_id` on. Returns how many flows were drawn.
    pub fn write(
        &self,
        flows: &[CrossRankFlow],
        first_id: u64,
        first: &mut bool,
        buf: &mut Vec<u8>,
    ) -> u64 {
        let mut drawn = 0;
        for flow in flows {
            let mut places: Vec<&Place> = flow
                .events
                .iter()
                .filter_map(|k| self.found.get(k))
                .collect();
            if places.len() < 2 {
                continue;
            }
            places.sort_by_key(|p| p.ts);
            let id = first_id + drawn;
            let name = serde_json::to_string(&flow.name).expect("a string serialises");
            for (i, p) in places.iter().enumerate() {
                let ph = match i {
                    0 => "s",
                    i if i + 1 == places.len() => "f",
                    _ => "t",
                };
                if !*first {
                    buf.extend_from_slice(b",\n");
                }
                *first = false;
                buf.extend_from_slice(
                    format!("  {{\"ph\": \"{ph}\", \"cat\": \"{COLLECTIVE_FLOW_CAT}\", \"name\": {name}, \"id\": {id}, \"pid\": {}, \"tid\": ", p.pid).as_bytes(),
                );
                buf.extend_from_slice(&p.tid);
                buf.extend_from_slice(b", \"ts\": ");
                write_micros(buf, p.ts, 3);
                buf.extend_from_slice(b", \"bp\": \"e\"}");
            }
            drawn += 1;
        }
        drawn
    }
}

/// The `External id` in an event's `args` text, if any.
fn external_id(args: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"External id\"";
    let at = args.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &args[at..];
    let colon = rest.iter().position(|c| !c.is_ascii_whitespace())?;
    if rest[colon] != b':' {
        return None;
    }
    let digits: Vec<u8> = rest[colon + 1..]
        .iter()
        .skip_while(|c| c.is_ascii_whitespace())
        .take_while(|c| c.is_ascii_digit())
        .copied()
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_id_from_args_text() {
        assert_eq!(
            external_id(br#"{"External id": 1025,"Record function id": 0}"#),
            Some(1025)
        );
        assert_eq!(external_id(br#"{"a": 1, "External id" :7}"#), Some(7));
        assert_eq!(external_id(br#"{"External id": "x"}"#), None);
        assert_eq!(external_id(br#"{"Ev Idx": 3}"#), None);
    }
}
