//! The iterators over a message's repeated fields: messages
//! ([`Repeated`], [`Unparsed`]) and strings ([`Strings`]).

use std::marker::PhantomData;

use super::View;
use crate::wire::{Fields, Message, Typed, WireError, WireErrorKind};

/// Iterator over a repeated message field of a message.
pub struct Repeated<'a, T> {
    fields: Fields<'a>,
    field: u32,
    done: bool,
    _t: PhantomData<T>,
}

impl<'a, T> Repeated<'a, T> {
    pub(super) fn new(bytes: &'a [u8], base: usize, message: Message, field: u32) -> Self {
        Repeated {
            fields: Fields::new(bytes, base, message),
            field,
            done: false,
            _t: PhantomData,
        }
    }

    /// The next payload of the repeated field, with its absolute offset.
    #[inline]
    pub(super) fn next_payload(&mut self) -> Option<Result<(&'a [u8], usize), WireError>> {
        if self.done {
            return None;
        }
        if let Some(quick) = self.fields.quick_bytes_field(self.field) {
            return Some(Ok(quick));
        }
        loop {
            let next = match self.fields.next_field()? {
                Ok(next) => next,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let (field, at, value) = next;
            if field != self.field {
                continue;
            }
            let typed = Typed {
                fields: &self.fields,
                field,
                at,
                value,
                key_offset: 0,
            };
            let result = typed.bytes().map(|b| (b, typed.payload_offset()));
            if result.is_err() {
                self.done = true;
            }
            return Some(result);
        }
    }
}

impl<'a, T: View<'a>> Repeated<'a, T> {
    /// The messages found but not parsed, for parsing elsewhere (on other
    /// threads): finding a message steps over it, parsing it reads it.
    pub fn unparsed(mut self) -> impl Iterator<Item = Result<Unparsed<'a, T>, WireError>> {
        // `next_payload` ends the walk at its first error.
        std::iter::from_fn(move || {
            Some(self.next_payload()?.map(|(bytes, base)| Unparsed {
                bytes,
                base,
                _t: PhantomData,
            }))
        })
    }
}

/// A message of a repeated field, found by [`Repeated::unparsed`] and
/// not yet parsed.
pub struct Unparsed<'a, T> {
    bytes: &'a [u8],
    base: usize,
    _t: PhantomData<T>,
}

impl<T> Clone for Unparsed<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Unparsed<'_, T> {}

impl<'a, T: View<'a>> Unparsed<'a, T> {
    /// Parse it: what [`Repeated`] yields for it.
    pub fn parse(self) -> Result<T, WireError> {
        T::parse(self.bytes, self.base)
    }
}

impl<'a, T: View<'a>> Iterator for Repeated<'a, T> {
    type Item = Result<T, WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let result = self
            .next_payload()?
            .and_then(|(bytes, base)| T::parse(bytes, base));
        if result.is_err() {
            self.done = true;
        }
        Some(result)
    }
}

/// Iterator over a repeated string field.
pub struct Strings<'a>(pub(super) Repeated<'a, ()>);

impl<'a> Iterator for Strings<'a> {
    type Item = Result<&'a str, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        let field = self.0.field;
        let result = self.0.next_payload()?.and_then(|(bytes, offset)| {
            std::str::from_utf8(bytes).map_err(|_| WireError {
                offset,
                message: Message::Space,
                kind: WireErrorKind::InvalidUtf8 { field },
            })
        });
        if result.is_err() {
            self.0.done = true;
        }
        Some(result)
    }
}

impl View<'_> for () {
    const MESSAGE: Message = Message::Space;
    fn parse(_: &[u8], _: usize) -> Result<Self, WireError> {
        Ok(())
    }
}
