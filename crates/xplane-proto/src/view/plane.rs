//! The view of a plane.

use super::{EventMetadataView, LineView, MapEntry, Repeated, StatMetadataView, StatView, View};
use crate::generated as pb;
use crate::wire::{Fields, Message, WireError, for_each_field};

/// A plane: its id and name are decoded; lines, metadata and stats on demand.
#[derive(Clone, Copy, Debug)]
pub struct PlaneView<'a> {
    bytes: &'a [u8],
    base: usize,
    /// `XPlane.id`.
    pub id: i64,
    /// `XPlane.name`.
    pub name: &'a str,
}

impl<'a> View<'a> for PlaneView<'a> {
    const MESSAGE: Message = Message::Plane;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut plane = PlaneView {
            bytes,
            base,
            id: 0,
            name: "",
        };
        for_each_field(Fields::new(bytes, base, Message::Plane), |t| {
            match t.field {
                1 => plane.id = t.i64()?,
                2 => plane.name = t.str()?,
                3..=6 => {
                    t.bytes()?;
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(plane)
    }
}

impl<'a> PlaneView<'a> {
    /// The lines, in file order.
    pub fn lines(&self) -> Repeated<'a, LineView<'a>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 3)
    }

    /// The event metadata entries `(key, metadata)`, in file order.
    pub fn event_metadata(&self) -> Repeated<'a, MapEntry<EventMetadataView<'a>>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 4)
    }

    /// The stat metadata entries `(key, metadata)`, in file order.
    pub fn stat_metadata(&self) -> Repeated<'a, MapEntry<StatMetadataView<'a>>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 5)
    }

    /// The plane's own stats.
    pub fn stats(&self) -> Repeated<'a, StatView<'a>> {
        Repeated::new(self.bytes, self.base, Message::Plane, 6)
    }

    /// The encoded bytes of this plane (to copy it unchanged).
    pub fn encoded(&self) -> &'a [u8] {
        self.bytes
    }

    /// Decode everything into the generated owned type.
    pub fn to_owned(&self) -> Result<pb::XPlane, WireError> {
        Ok(pb::XPlane {
            id: self.id,
            name: self.name.to_owned(),
            lines: self
                .lines()
                .map(|l| l.and_then(|l| l.to_owned()))
                .collect::<Result<_, _>>()?,
            event_metadata: self
                .event_metadata()
                .map(|e| e.and_then(|e| Ok((e.key, e.value.to_owned()?))))
                .collect::<Result<_, _>>()?,
            stat_metadata: self
                .stat_metadata()
                .map(|e| e.map(|e| (e.key, e.value.to_owned())))
                .collect::<Result<_, _>>()?,
            stats: self
                .stats()
                .map(|s| s.map(|s| s.to_owned()))
                .collect::<Result<_, _>>()?,
        })
    }
}
