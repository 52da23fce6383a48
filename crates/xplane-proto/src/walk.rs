//! Whole-file checks on an encoded XSpace: is it an XSpace at all, and is
//! every nested message well-formed. This is the one checker every reader
//! of the project answers to: a reader that meets malformed bytes while it
//! works (copying stats, extracting collectives) reports them through
//! [`SpaceView::locate`], so every command gives the same message.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::quick::stats_well_formed;
use crate::view::{EventView, PlaneView, SpaceView, StatView};
use crate::wire::{Fields, Message, WireError, WireErrorKind, WireType};

/// How many of each message an XSpace holds, as counted by [`SpaceView::walk_all`].
///
/// A metadata entry whose key repeats an earlier one of its plane's map
/// replaces it, as a decoder keeps the last: it is counted once, with
/// the last entry's stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Totals {
    /// Planes.
    pub planes: u64,
    /// Lines, over all planes.
    pub lines: u64,
    /// Events, over all lines.
    pub events: u64,
    /// Stats: on events, on planes and on event metadata.
    pub stats: u64,
    /// Event metadata entries.
    pub event_metadata: u64,
    /// Stat metadata entries.
    pub stat_metadata: u64,
}

/// Where in an XSpace a malformed message lies, by position in file order
/// (indices count from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// The XSpace's own fields (its string lists, or a plane's header).
    Space,
    /// Inside plane number `plane` (named `name`; empty when its header
    /// could not be read).
    Plane {
        /// Position of the plane.
        plane: usize,
        /// The plane's name.
        name: String,
        /// Where in the plane.
        part: PlanePart,
    },
    /// Not found by the checker (a reader and the checker disagree).
    Unknown,
}

/// Where inside a plane a malformed message lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanePart {
    /// The plane's own fields.
    Header,
    /// A line's header.
    Line {
        /// Position of the line in the plane.
        line: usize,
    },
    /// An event or one of its stats.
    Event {
        /// Position of the line in the plane.
        line: usize,
        /// Position of the event in the line.
        event: usize,
    },
    /// An `event_metadata` entry or its stats.
    EventMetadata {
        /// Position of the entry in the plane.
        entry: usize,
    },
    /// A `stat_metadata` entry.
    StatMetadata {
        /// Position of the entry in the plane.
        entry: usize,
    },
    /// One of the plane's own stats.
    PlaneStat {
        /// Position of the stat in the plane.
        stat: usize,
    },
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (plane, name, part) = match self {
            Place::Space => return f.write_str("XSpace fields"),
            Place::Unknown => return f.write_str("place unknown"),
            Place::Plane { plane, name, part } => (plane, name, part),
        };
        write!(f, "plane {plane} {name:?}")?;
        match *part {
            PlanePart::Header => Ok(()),
            PlanePart::Line { line } => write!(f, " line {line}"),
            PlanePart::Event { line, event } => write!(f, " line {line} event {event}"),
            PlanePart::EventMetadata { entry } => write!(f, " event metadata entry {entry}"),
            PlanePart::StatMetadata { entry } => write!(f, " stat metadata entry {entry}"),
            PlanePart::PlaneStat { stat } => write!(f, " plane stat {stat}"),
        }
    }
}

/// Malformed bytes and where they lie: what [`SpaceView::check`] and
/// [`SpaceView::locate`] report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// Plane, line, event or metadata entry.
    pub place: Place,
    /// What, and the byte offset.
    pub source: WireError,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.source)
    }
}

impl std::error::Error for Malformed {}

impl<'a> SpaceView<'a> {
    /// Check that the bytes are an XSpace at the top level: not empty, and
    /// made only of XSpace's own fields (1–4, all length-delimited) whose
    /// lengths fit the data. Text, another protobuf message or random bytes
    /// fail here with [`WireErrorKind::NotXSpace`], even where a lenient
    /// protobuf decoder would skip them as unknown fields. Nested messages
    /// are not looked at (see [`SpaceView::walk_all`]).
    pub fn check_top_level(&self) -> Result<(), WireError> {
        let bytes = self.bytes();
        if bytes.is_empty() {
            return Err(WireError {
                offset: 0,
                message: Message::Space,
                kind: WireErrorKind::Empty,
            });
        }
        let mut fields = Fields::new(bytes, 0, Message::Space);
        while !fields.is_empty() {
            let at = fields.offset();
            // Look at the key before reading the value, so that a key no
            // XSpace has is reported as such, whatever else is wrong with it.
            let mut probe = fields;
            let key = probe.varint()?;
            let (field, wire_type) = ((key >> 3).min(u32::MAX as u64) as u32, (key & 7) as u8);
            if (1..=4).contains(&field) && wire_type == WireType::LengthDelimited as u8 {
                if let Some(next) = fields.next_field() {
                    next?;
                }
            } else {
                return Err(WireError {
                    offset: at,
                    message: Message::Space,
                    kind: WireErrorKind::NotXSpace { field, wire_type },
                });
            }
        }
        Ok(())
    }

    /// Visit every message of the XSpace (planes, lines, events, stats,
    /// metadata and their stats and child ids, the string lists) and count
    /// them; the first malformed byte gives its [`WireError`]. After `Ok`,
    /// [`SpaceView::to_owned`] cannot fail.
    pub fn walk_all(&self) -> Result<Totals, WireError> {
        self.check().map_err(|m| m.source)
    }

    /// [`SpaceView::walk_all`], with the place of the first malformed
    /// message (plane, line, event or metadata entry, in file order).
    pub fn check(&self) -> Result<Totals, Malformed> {
        let mut totals = Totals::default();
        let space = |source| Malformed {
            place: Place::Space,
            source,
        };
        for s in self.hostnames().chain(self.errors()).chain(self.warnings()) {
            s.map_err(space)?;
        }
        for (index, plane) in self.planes().enumerate() {
            let plane = plane.map_err(|source| match source.message {
                Message::Space => space(source),
                _ => Malformed {
                    place: Place::Plane {
                        plane: index,
                        name: String::new(),
                        part: PlanePart::Header,
                    },
                    source,
                },
            })?;
            walk_plane(&plane, &mut totals).map_err(|(part, source)| Malformed {
                place: Place::Plane {
                    plane: index,
                    name: plane.name.to_owned(),
                    part,
                },
                source,
            })?;
        }
        Ok(totals)
    }

    /// Describe malformed bytes that a reader met in this XSpace: the first
    /// malformed message in file order as the checker ([`SpaceView::check`],
    /// after [`SpaceView::check_top_level`]) finds it, so that every reader
    /// reports the same place and message whatever it was reading. Costs a
    /// walk of the file, paid only on error.
    pub fn locate(&self, found: WireError) -> Malformed {
        let checked = self
            .check_top_level()
            .map_err(|source| Malformed {
                place: Place::Space,
                source,
            })
            .and_then(|()| self.check());
        match checked {
            Err(first) => first,
            Ok(_) => Malformed {
                place: Place::Unknown,
                source: found,
            },
        }
    }
}

impl EventView<'_> {
    /// Check every stat of the event (as its bytes are copied unread):
    /// the first malformed one gives its [`WireError`]. Returns how many.
    /// Stats of the usual shape pass a quick check; anything else is read
    /// in full.
    #[inline]
    pub fn check_stats(&self) -> Result<u64, WireError> {
        if let Some(count) = self.non_timing_fields().and_then(stats_well_formed) {
            return Ok(count);
        }
        count_stats_slowly(self)
    }
}

/// Every stat of `event` through the full reader.
pub(crate) fn count_stats_slowly(event: &EventView<'_>) -> Result<u64, WireError> {
    count_stats(event.stats())
}

type Located = (PlanePart, WireError);

fn walk_plane(plane: &PlaneView<'_>, totals: &mut Totals) -> Result<(), Located> {
    totals.planes += 1;
    for (l, line) in plane.lines().enumerate() {
        let line = line.map_err(|e| (PlanePart::Line { line: l }, e))?;
        totals.lines += 1;
        for (e, event) in line.events().enumerate() {
            let at = |source| (PlanePart::Event { line: l, event: e }, source);
            let event = event.map_err(at)?;
            totals.events += 1;
            totals.stats += event.check_stats().map_err(at)?;
        }
    }
    // Per key, the stats of its last entry.
    let mut event_metadata = HashMap::new();
    for (i, entry) in plane.event_metadata().enumerate() {
        let at = |source| (PlanePart::EventMetadata { entry: i }, source);
        let entry = entry.map_err(at)?;
        let stats = count_stats(entry.value.stats()).map_err(at)?;
        event_metadata.insert(entry.key, stats);
    }
    totals.event_metadata += event_metadata.len() as u64;
    totals.stats += event_metadata.values().sum::<u64>();
    let mut stat_metadata = HashSet::new();
    for (i, entry) in plane.stat_metadata().enumerate() {
        let entry = entry.map_err(|e| (PlanePart::StatMetadata { entry: i }, e))?;
        stat_metadata.insert(entry.key);
    }
    totals.stat_metadata += stat_metadata.len() as u64;
    for (i, stat) in plane.stats().enumerate() {
        stat.map_err(|e| (PlanePart::PlaneStat { stat: i }, e))?;
        totals.stats += 1;
    }
    Ok(())
}

fn count_stats<'a>(
    stats: impl Iterator<Item = Result<StatView<'a>, WireError>>,
) -> Result<u64, WireError> {
    let mut n = 0;
    for stat in stats {
        stat?;
        n += 1;
    }
    Ok(n)
}
