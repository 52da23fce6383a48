//! Whole-file checks on an encoded XSpace: is it an XSpace at all, and is
//! every nested message well-formed.

use crate::view::{EventMetadataView, PlaneView, SpaceView, StatView};
use crate::wire::{Fields, Message, WireError, WireErrorKind};

/// How many of each message an XSpace holds, as counted by [`SpaceView::walk_all`].
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
            if (1..=4).contains(&field) && wire_type == 2 {
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
        let mut totals = Totals::default();
        for s in self.hostnames().chain(self.errors()).chain(self.warnings()) {
            s?;
        }
        for plane in self.planes() {
            walk_plane(&plane?, &mut totals)?;
        }
        Ok(totals)
    }
}

fn walk_plane(plane: &PlaneView<'_>, totals: &mut Totals) -> Result<(), WireError> {
    totals.planes += 1;
    for line in plane.lines() {
        let line = line?;
        totals.lines += 1;
        for event in line.events() {
            let event = event?;
            totals.events += 1;
            count_stats(event.stats(), totals)?;
        }
    }
    for entry in plane.event_metadata() {
        let entry = entry?;
        totals.event_metadata += 1;
        walk_event_metadata(&entry.value, totals)?;
    }
    for entry in plane.stat_metadata() {
        entry?;
        totals.stat_metadata += 1;
    }
    count_stats(plane.stats(), totals)
}

fn walk_event_metadata(m: &EventMetadataView<'_>, totals: &mut Totals) -> Result<(), WireError> {
    count_stats(m.stats(), totals)
}

fn count_stats<'a>(
    stats: impl Iterator<Item = Result<StatView<'a>, WireError>>,
    totals: &mut Totals,
) -> Result<(), WireError> {
    for stat in stats {
        stat?;
        totals.stats += 1;
    }
    Ok(())
}
