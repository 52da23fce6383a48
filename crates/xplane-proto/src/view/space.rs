//! The view of a whole XSpace.

use super::{PlaneView, Repeated, Strings};
use crate::generated as pb;
use crate::wire::{Message, WireError};

/// An encoded XSpace.
#[derive(Clone, Copy, Debug)]
pub struct SpaceView<'a> {
    bytes: &'a [u8],
}

impl<'a> SpaceView<'a> {
    /// A view over the bytes of a whole XSpace message. Nothing is decoded yet.
    pub fn new(bytes: &'a [u8]) -> Self {
        SpaceView { bytes }
    }

    /// The encoded bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The planes, in file order.
    pub fn planes(&self) -> Repeated<'a, PlaneView<'a>> {
        Repeated::new(self.bytes, 0, Message::Space, 1)
    }

    /// True when some plane has a plane-level stat named `name` (e.g.
    /// [`crate::NODE_ID_STAT`], which a merged trace gives every node's
    /// planes).
    pub fn has_plane_stat(&self, name: &str) -> Result<bool, WireError> {
        for plane in self.planes() {
            let plane = plane?;
            let Some(id) = crate::PlaneIndex::new(&plane)?.stat_id(name) else {
                continue;
            };
            for stat in plane.stats() {
                if stat?.metadata_id == id {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The `hostnames` field.
    pub fn hostnames(&self) -> Strings<'a> {
        Strings(Repeated::new(self.bytes, 0, Message::Space, 4))
    }

    /// The `errors` field.
    pub fn errors(&self) -> Strings<'a> {
        Strings(Repeated::new(self.bytes, 0, Message::Space, 2))
    }

    /// The `warnings` field.
    pub fn warnings(&self) -> Strings<'a> {
        Strings(Repeated::new(self.bytes, 0, Message::Space, 3))
    }

    /// Decode everything into the generated owned types.
    pub fn to_owned(&self) -> Result<pb::XSpace, WireError> {
        Ok(pb::XSpace {
            planes: self
                .planes()
                .map(|p| p.and_then(|p| p.to_owned()))
                .collect::<Result<_, _>>()?,
            errors: self
                .errors()
                .map(|s| s.map(str::to_owned))
                .collect::<Result<_, _>>()?,
            warnings: self
                .warnings()
                .map(|s| s.map(str::to_owned))
                .collect::<Result<_, _>>()?,
            hostnames: self
                .hostnames()
                .map(|s| s.map(str::to_owned))
                .collect::<Result<_, _>>()?,
        })
    }
}
