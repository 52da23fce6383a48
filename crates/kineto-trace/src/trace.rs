//! The top level of a trace: every key in order (kept verbatim), the
//! `traceEvents` array, the time base, and what identifies the rank.

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::event::{Events, JsonStr, json};
use crate::rank::{Rank, RankSource, rank_from_file_name};
use crate::scan::{Syntax, expect, skip_balanced, skip_value, skip_ws, walk_object};
use crate::time::{EpochNs, TimeBase};

/// The key of the events array.
pub const TRACE_EVENTS: &str = "traceEvents";
/// The key of the time base.
pub const BASE_TIME: &str = "baseTimeNanoseconds";
/// The key of the distributed-run description.
pub const DISTRIBUTED_INFO: &str = "distributedInfo";
/// The key the retiming writer adds.
pub const TRACE_ALIGN: &str = "traceAlign";

/// One top-level member, located in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The key, decoded.
    pub key: String,
    /// Everything between the separators around the member (`{`/`,` before,
    /// `,`/`}` after), whitespace included.
    pub text: Range<usize>,
    /// The value.
    pub value: Range<usize>,
}

/// A scanned trace: the top level located, the events not yet read.
pub struct Trace<'a> {
    bytes: &'a [u8],
    path: &'a Path,
    members: Vec<Member>,
    events: usize,
    base: TimeBase,
}

/// `distributedInfo` as torch writes it (fields that may be absent are optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct DistributedInfo {
    /// `backend` (`nccl`, `gloo`, …).
    #[serde(default)]
    pub backend: Option<String>,
    /// This file's global rank.
    #[serde(default)]
    pub rank: Option<u32>,
    /// Ranks in the run.
    #[serde(default)]
    pub world_size: Option<u32>,
    /// Process groups.
    #[serde(default)]
    pub pg_config: Vec<ProcessGroup>,
}

/// One entry of `distributedInfo.pg_config`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ProcessGroup {
    /// `pg_name` (what collectives' `Process Group Name` refers to).
    #[serde(default)]
    pub pg_name: String,
    /// `pg_desc`.
    #[serde(default)]
    pub pg_desc: String,
    /// `backend_config` (`cpu:gloo,cuda:nccl`, …).
    #[serde(default)]
    pub backend_config: String,
    /// `pg_size`.
    #[serde(default)]
    pub pg_size: Option<u32>,
    /// Global ranks of the group.
    #[serde(default)]
    pub ranks: Vec<u32>,
}

impl<'a> Trace<'a> {
    /// Scan `bytes` (the whole file); `path` names it in errors. The whole
    /// text is checked to be UTF-8 ([`Error::InvalidUtf8`]) and everything
    /// but the events to be valid JSON here; the events as they are read.
    pub fn parse(bytes: &'a [u8], path: &'a Path) -> Result<Self> {
        if let Err(e) = std::str::from_utf8(bytes) {
            return Err(Error::InvalidUtf8 {
                path: path.to_path_buf(),
                offset: e.valid_up_to(),
            });
        }
        let open = expect(bytes, 0, b'{', "'{' opening the top-level object")
            .map_err(|s| json(path, s))?
            - 1;
        let mut found: Vec<(String, usize, Range<usize>)> = Vec::new();
        let close = walk_object(bytes, open, |key, v| {
            // The events are validated as they are read ([`Trace::events`]).
            // `v` is the end of the bytes when the file stops after the key.
            let end = if key == TRACE_EVENTS.as_bytes() && bytes.get(v) == Some(&b'[') {
                skip_balanced(bytes, v)?
            } else {
                skip_value(bytes, v)?
            };
            found.push((JsonStr(key).decode().into_owned(), v, v..end));
            Ok(end)
        })
        .map_err(|s| json(path, s))?;
        let tail = skip_ws(bytes, close);
        if tail != bytes.len() {
            let s = Syntax {
                offset: tail,
                expected: "the end of the file after the top-level object",
            };
            return Err(json(path, s));
        }
        let mut seen: std::collections::HashMap<&str, usize> = Default::default();
        for (key, v, _) in &found {
            if let Some(first) = seen.insert(key.as_str(), *v) {
                return Err(Error::DuplicateHeaderKey {
                    path: path.to_path_buf(),
                    offset: *v,
                    first,
                    key: key.clone(),
                });
            }
        }
        let mut members = Vec::with_capacity(found.len());
        let mut sep = open;
        for (key, _, value) in found {
            let next = skip_ws(bytes, value.end);
            members.push(Member {
                key,
                text: sep + 1..next,
                value,
            });
            sep = next;
        }
        let events = members
            .iter()
            .position(|m| m.key == TRACE_EVENTS)
            .ok_or_else(|| Error::MissingTraceEvents {
                path: path.to_path_buf(),
            })?;
        let value = &members[events].value;
        if bytes[value.start] != b'[' {
            return Err(Error::TraceEventsNotArray {
                path: path.to_path_buf(),
                offset: value.start,
            });
        }
        let base = match members.iter().find(|m| m.key == BASE_TIME) {
            None => TimeBase::Absolute,
            Some(m) => TimeBase::Base(parse_base(&bytes[m.value.clone()], m.value.start, path)?),
        };
        Ok(Trace {
            bytes,
            path,
            members,
            events,
            base,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// The file's (uncompressed) bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The top-level members in file order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The raw value of a top-level key.
    pub fn member(&self, key: &str) -> Option<&'a [u8]> {
        self.members
            .iter()
            .find(|m| m.key == key)
            .map(|m| &self.bytes[m.value.clone()])
    }

    /// The `traceEvents` member.
    pub fn events_member(&self) -> &Member {
        &self.members[self.events]
    }

    /// The events, in file order, read one at a time.
    pub fn events(&self) -> Events<'a> {
        Events::new(
            self.bytes,
            self.path,
            self.members[self.events].value.start,
            self.base,
        )
    }

    /// How `ts` relates to the epoch.
    pub fn base(&self) -> TimeBase {
        self.base
    }

    /// `distributedInfo`, when present.
    pub fn distributed_info(&self) -> Result<Option<DistributedInfo>> {
        let Some(m) = self.members.iter().find(|m| m.key == DISTRIBUTED_INFO) else {
            return Ok(None);
        };
        serde_json::from_slice(&self.bytes[m.value.clone()])
            .map(Some)
            .map_err(|source| Error::DistributedInfo {
                path: self.path.to_path_buf(),
                offset: m.value.start,
                source,
            })
    }

    /// The `host_name` key, when present.
    pub fn host_name(&self) -> Option<String> {
        serde_json::from_slice(self.member("host_name")?).ok()
    }

    /// The rank: `distributedInfo.rank`, else a `rank<N>` in the file name;
    /// both, disagreeing, are [`Error::RankContradictsName`] (every reader
    /// of the rank refuses the file alike).
    pub fn rank(&self) -> Result<Option<Rank>> {
        if let Some(rank) = self.distributed_info()?.and_then(|d| d.rank) {
            if let Some(named) = rank_from_file_name(self.path).filter(|&n| n != rank) {
                return Err(Error::RankContradictsName {
                    path: self.path.to_path_buf(),
                    rank,
                    named,
                });
            }
            return Ok(Some(Rank {
                rank,
                source: RankSource::DistributedInfo,
            }));
        }
        Ok(rank_from_file_name(self.path).map(|rank| Rank {
            rank,
            source: RankSource::FileName,
        }))
    }
}

fn parse_base(text: &[u8], offset: usize, path: &Path) -> Result<EpochNs> {
    let path = path.to_path_buf();
    if !matches!(text.first(), Some(b'-' | b'0'..=b'9')) {
        return Err(Error::TimeNotNumber {
            path,
            offset,
            field: BASE_TIME,
        });
    }
    let value: i64 = std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(Error::TimeOutOfRange {
            path: path.clone(),
            offset,
            field: BASE_TIME,
        })?;
    if value < 0 {
        return Err(Error::NegativeBaseTime {
            path,
            offset,
            value,
        });
    }
    Ok(EpochNs(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Trace<'_>> {
        Trace::parse(s.as_bytes(), Path::new("x/rank3.json"))
    }

    #[test]
    fn keys_in_any_order_with_their_text() {
        let s = r#" {"a": 1 , "traceEvents": [ {"ph": "i", "ts": 5} ],
            "baseTimeNanoseconds": 1790857026000000000, "distributedInfo": {"rank": 3}} "#;
        let t = parse(s).unwrap();
        let keys: Vec<&str> = t.members().iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            ["a", "traceEvents", "baseTimeNanoseconds", "distributedInfo"]
        );
        assert_eq!(&s[t.members()[0].text.clone()], r#""a": 1 "#);
        assert_eq!(t.base(), TimeBase::Base(EpochNs(1_790_857_026_000_000_000)));
        assert_eq!(
            t.rank().unwrap().unwrap(),
            Rank {
                rank: 3,
                source: RankSource::DistributedInfo
            }
        );
        assert_eq!(t.events().count(), 1);
    }

    /// A file named `rank3` whose `distributedInfo.rank` is 2 was read as
    /// rank 2 by some commands and rank 3 by others: refused.
    #[test]
    fn regression_a_rank_that_contradicts_the_file_name_is_refused() {
        let t = parse(r#"{"traceEvents": [], "distributedInfo": {"rank": 2}}"#).unwrap();
        let err = t.rank().unwrap_err();
        assert!(
            matches!(
                err,
                Error::RankContradictsName {
                    rank: 2,
                    named: 3,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().starts_with("x/rank3.json: "), "{err}");
    }

    /// A name with bytes that are not UTF-8 once passed `align`, which
    /// wrote a `.json.gz` that JSON readers refuse: the trace is refused
    /// when read, naming the first such byte.
    #[test]
    fn regression_a_name_that_is_not_utf8_is_refused() {
        let mut s = br#"{"traceEvents": [{"ph": "X", "name": "ab"#.to_vec();
        let at = s.len();
        s.extend_from_slice(b"\xff\"}]}");
        match Trace::parse(&s, Path::new("rank0.json")) {
            Err(Error::InvalidUtf8 { offset, .. }) => assert_eq!(offset, at),
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn rank_from_the_file_name_without_distributed_info() {
        let t = parse(r#"{"traceEvents": []}"#).unwrap();
        assert_eq!(t.base(), TimeBase::Absolute);
        assert_eq!(
            t.rank().unwrap().unwrap(),
            Rank {
                rank: 3,
                source: RankSource::FileName
            }
        );
        assert_eq!(t.events().count(), 0);
    }

    /// A `ts` that fits alone but not once the base is added was accepted
    /// by `validate` and `report` and refused by the others: the events
    /// refuse it as they are read, naming the number's byte.
    #[test]
    fn regression_a_ts_out_of_range_once_the_base_is_added_is_refused_as_read() {
        let text = r#"{"baseTimeNanoseconds": 1790857026000000000, "traceEvents": [{"ph": "i", "ts": 9200000000000000}]}"#;
        let t = parse(text).unwrap();
        let offset = text.find("9200").unwrap();
        match t.events().next() {
            Some(Err(Error::TimeOutOfRange {
                offset: o,
                field: "ts",
                ..
            })) => {
                assert_eq!(o, offset)
            }
            other => panic!("{other:?}"),
        }
        let t = parse(
            r#"{"baseTimeNanoseconds": 1, "traceEvents": [{"ph": "i", "ts": 9200000000000000}]}"#,
        )
        .unwrap();
        assert!(t.events().next().unwrap().is_ok());
    }

    #[test]
    fn bad_events_are_found_as_they_are_read() {
        let t = parse(r#"{"traceEvents": [{"ph": "i"} {"ph": "i"}]}"#).unwrap();
        let errors: Vec<_> = t.events().filter_map(Result::err).collect();
        assert!(
            matches!(errors[..], [Error::Json { offset: 29, .. }]),
            "{errors:?}"
        );
        let t = parse(r#"{"traceEvents": [{"ph": "X", "ts": 1,}]}"#).unwrap();
        assert!(matches!(
            t.events().next(),
            Some(Err(Error::Json { offset: 37, .. }))
        ));
        assert!(matches!(
            parse(r#"{"traceEvents": [{"a": "]"}"#),
            Err(Error::Json { offset: 27, .. })
        ));
    }

    #[test]
    fn bad_top_levels() {
        assert!(matches!(
            parse(r#"{"traceEvent": []}"#),
            Err(Error::MissingTraceEvents { .. })
        ));
        assert!(matches!(
            parse(r#"{"traceEvents": {}}"#),
            Err(Error::TraceEventsNotArray { offset: 16, .. })
        ));
        assert!(matches!(parse(r#"[]"#), Err(Error::Json { offset: 0, .. })));
        assert!(matches!(
            parse(r#"{"traceEvents": []} x"#),
            Err(Error::Json { offset: 20, .. })
        ));
        assert!(matches!(
            parse(r#"{"traceEvents": [], "baseTimeNanoseconds": "1"}"#),
            Err(Error::TimeNotNumber {
                offset: 43,
                field: BASE_TIME,
                ..
            })
        ));
        assert!(matches!(
            parse(r#"{"traceEvents": [], "baseTimeNanoseconds": 1.5}"#),
            Err(Error::TimeOutOfRange { .. })
        ));
    }

    /// `baseTimeNanoseconds: -1` moved a rank by 56 years, exit 0.
    #[test]
    fn a_negative_base_time_is_refused() {
        let err = parse(r#"{"traceEvents": [], "baseTimeNanoseconds": -1}"#)
            .err()
            .unwrap();
        assert!(
            matches!(err, Error::NegativeBaseTime { value: -1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("rank3.json"), "{err}");
    }

    /// A header key given twice: JSON readers differ on which one counts
    /// (the base time, the rank), so the commands did too.
    #[test]
    fn a_top_level_key_given_twice_is_refused() {
        let err =
            parse(r#"{"baseTimeNanoseconds": 1, "traceEvents": [], "baseTimeNanoseconds": 2}"#)
                .err()
                .unwrap();
        assert!(
            matches!(&err, Error::DuplicateHeaderKey { key, first: 24, .. } if key == "baseTimeNanoseconds"),
            "{err}"
        );
    }
}
