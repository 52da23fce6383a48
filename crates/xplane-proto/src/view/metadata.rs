//! The views of a plane's metadata: the map entries, event metadata and
//! stat metadata.

use super::{Repeated, StatView, View};
use crate::generated as pb;
use crate::wire::{Fields, Message, Value, WireError, WireErrorKind, for_each_field};

/// A map entry of `event_metadata` or `stat_metadata`.
#[derive(Clone, Copy, Debug)]
pub struct MapEntry<T> {
    /// The map key.
    pub key: i64,
    /// The value (an empty message when absent).
    pub value: T,
}

impl<'a, T: View<'a>> View<'a> for MapEntry<T> {
    const MESSAGE: Message = Message::MapEntry;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut key = 0;
        let mut value = None;
        for_each_field(Fields::new(bytes, base, Message::MapEntry), |t| {
            match t.field {
                1 => key = t.i64()?,
                // A full decode would merge two values field by field; a
                // view of one payload cannot, so refuse rather than differ.
                2 if value.is_some() => {
                    return Err(t.fields.error(t.at, WireErrorKind::RepeatedMapValue));
                }
                2 => value = Some((t.bytes()?, t.payload_offset())),
                _ => {}
            }
            Ok(())
        })?;
        let value = match value {
            Some((bytes, at)) => T::parse(bytes, at)?,
            None => T::parse(&[], base + bytes.len())?,
        };
        Ok(MapEntry { key, value })
    }
}

/// Event metadata: names decoded; stats and children on demand.
#[derive(Clone, Copy, Debug)]
pub struct EventMetadataView<'a> {
    bytes: &'a [u8],
    base: usize,
    /// `XEventMetadata.id`.
    pub id: i64,
    /// `XEventMetadata.name`.
    pub name: &'a str,
    /// `XEventMetadata.display_name`.
    pub display_name: &'a str,
    /// `XEventMetadata.metadata`.
    pub metadata: &'a [u8],
}

impl<'a> View<'a> for EventMetadataView<'a> {
    const MESSAGE: Message = Message::EventMetadata;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut m = EventMetadataView {
            bytes,
            base,
            id: 0,
            name: "",
            display_name: "",
            metadata: &[],
        };
        for_each_field(Fields::new(bytes, base, Message::EventMetadata), |t| {
            match t.field {
                1 => m.id = t.i64()?,
                2 => m.name = t.str()?,
                4 => m.display_name = t.str()?,
                3 => m.metadata = t.bytes()?,
                5 => {
                    t.bytes()?;
                }
                6 => match t.value {
                    Value::Varint(_) | Value::Bytes(_) => {}
                    _ => {
                        t.u64()?;
                    }
                },
                _ => {}
            }
            Ok(())
        })?;
        // Validate packed child ids now so `child_ids` cannot fail later.
        m.child_ids_checked()?;
        Ok(m)
    }
}

impl<'a> EventMetadataView<'a> {
    /// Stats attached to the metadata.
    pub fn stats(&self) -> Repeated<'a, StatView<'a>> {
        Repeated::new(self.bytes, self.base, Message::EventMetadata, 5)
    }

    fn child_ids_checked(&self) -> Result<Vec<i64>, WireError> {
        let mut ids = Vec::new();
        for_each_field(
            Fields::new(self.bytes, self.base, Message::EventMetadata),
            |t| {
                if t.field == 6 {
                    match t.value {
                        Value::Varint(v) => ids.push(v as i64),
                        Value::Bytes(packed) => {
                            let mut inner =
                                Fields::new(packed, t.payload_offset(), Message::EventMetadata);
                            while !inner.is_empty() {
                                ids.push(inner.varint()? as i64);
                            }
                        }
                        _ => {}
                    }
                }
                Ok(())
            },
        )?;
        Ok(ids)
    }

    /// `child_id`, packed or not.
    pub fn child_ids(&self) -> Vec<i64> {
        self.child_ids_checked()
            .expect("child ids were validated when the view was made")
    }

    /// Decode everything into the generated owned type.
    pub fn to_owned(&self) -> Result<pb::XEventMetadata, WireError> {
        Ok(pb::XEventMetadata {
            id: self.id,
            name: self.name.to_owned(),
            display_name: self.display_name.to_owned(),
            metadata: self.metadata.to_vec(),
            stats: self
                .stats()
                .map(|s| s.map(|s| s.to_owned()))
                .collect::<Result<_, _>>()?,
            child_id: self.child_ids(),
        })
    }
}

/// Stat metadata.
#[derive(Clone, Copy, Debug)]
pub struct StatMetadataView<'a> {
    /// `XStatMetadata.id`.
    pub id: i64,
    /// `XStatMetadata.name` (for interned strings, the string itself).
    pub name: &'a str,
    /// `XStatMetadata.description`.
    pub description: &'a str,
}

impl<'a> View<'a> for StatMetadataView<'a> {
    const MESSAGE: Message = Message::StatMetadata;

    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError> {
        let mut m = StatMetadataView {
            id: 0,
            name: "",
            description: "",
        };
        for_each_field(Fields::new(bytes, base, Message::StatMetadata), |t| {
            match t.field {
                1 => m.id = t.i64()?,
                2 => m.name = t.str()?,
                3 => m.description = t.str()?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(m)
    }
}

impl StatMetadataView<'_> {
    /// Decode into the generated owned type.
    pub fn to_owned(&self) -> pb::XStatMetadata {
        pb::XStatMetadata {
            id: self.id,
            name: self.name.to_owned(),
            description: self.description.to_owned(),
        }
    }
}
