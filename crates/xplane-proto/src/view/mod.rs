//! Zero-copy, lazy views over an encoded XSpace.
//!
//! A view borrows the encoded bytes (typically a memory-mapped file) and
//! decodes fields only when asked. Repeated children are walked with
//! iterators that yield `Result<View, WireError>`; an iterator stops after
//! its first error. Unknown fields are skipped, as protobuf requires; for a
//! scalar field given twice the last value wins, like a full decode.
//!
//! One file a concept: [`View`] here; the iterators over repeated fields
//! in `repeated`; one file for each message's view (`space`, `plane`,
//! `line`, `event`, `checked` for events read with their stats checked,
//! `stat`, `metadata` for the planes' metadata maps).

mod checked;
mod event;
mod line;
mod metadata;
mod plane;
mod repeated;
mod space;
mod stat;

pub use checked::CheckedEvent;
pub use event::{EventData, EventView};
pub use line::LineView;
pub use metadata::{EventMetadataView, MapEntry, StatMetadataView};
pub use plane::PlaneView;
pub use repeated::{Repeated, Strings, Unparsed};
pub use space::SpaceView;
pub use stat::{StatValue, StatView};

use crate::wire::{Message, WireError};

/// A message type that can be viewed in place.
pub trait View<'a>: Sized {
    /// Which message this is, for error reports.
    const MESSAGE: Message;
    /// Parse the scalar fields of the message at `bytes` (which starts at
    /// absolute offset `base` of the original buffer).
    fn parse(bytes: &'a [u8], base: usize) -> Result<Self, WireError>;
}
