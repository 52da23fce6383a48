//! Stats of an event as named arguments, the form both writers need.

use std::borrow::Cow;
use std::io::Read;

use xplane_proto::{PlaneIndex, StatValue, StatView};

/// One stat of an event, its name and value resolved through the plane's
/// stat metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg<'a> {
    /// The stat metadata id (plane-local; the key writers intern names by).
    pub name_id: i64,
    /// The stat's name (`#<id>` when the plane has no metadata for it).
    pub name: Cow<'a, str>,
    /// The value.
    pub value: ArgValue<'a>,
}

/// A stat's value.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue<'a> {
    /// `int64_value`.
    Int(i64),
    /// `uint64_value`.
    Uint(u64),
    /// `double_value`.
    Double(f64),
    /// `str_value`, or a `compressed_str_value` decompressed.
    Str(Cow<'a, str>),
    /// `ref_value`: an interned string of the plane (`id` is its stat
    /// metadata id, the key writers intern it by).
    Ref {
        /// The stat metadata id holding the string.
        id: u64,
        /// The string (`#<id>` when the plane has no such metadata).
        text: Cow<'a, str>,
    },
    /// `bytes_value`, written as lowercase hex.
    Bytes(&'a [u8]),
    /// A stat with no value.
    Empty,
}

/// Why a stat could not be turned into an [`Arg`].
#[derive(Debug)]
pub(crate) struct BadCompressed {
    pub stat: String,
}

/// Resolve one stat.
pub(crate) fn arg<'a>(
    stat: &StatView<'a>,
    index: &PlaneIndex<'a>,
) -> Result<Arg<'a>, BadCompressed> {
    let name = match index.stat_name(stat.metadata_id) {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(format!("#{}", stat.metadata_id)),
    };
    let value = match stat.value {
        None => ArgValue::Empty,
        Some(StatValue::Int64(v)) => ArgValue::Int(v),
        Some(StatValue::Uint64(v)) => ArgValue::Uint(v),
        Some(StatValue::Double(v)) => ArgValue::Double(v),
        Some(StatValue::Str(s)) => ArgValue::Str(Cow::Borrowed(s)),
        Some(StatValue::Bytes(b)) => ArgValue::Bytes(b),
        Some(StatValue::Ref(id)) => ArgValue::Ref {
            id,
            text: match index.stat_name(id as i64) {
                Some(t) => Cow::Borrowed(t),
                None => Cow::Owned(format!("#{id}")),
            },
        },
        Some(StatValue::CompressedStr(gz)) => {
            let mut text = String::new();
            flate2::read::MultiGzDecoder::new(gz)
                .read_to_string(&mut text)
                .map_err(|_| BadCompressed {
                    stat: name.to_string(),
                })?;
            ArgValue::Str(Cow::Owned(text))
        }
    };
    Ok(Arg {
        name_id: stat.metadata_id,
        name,
        value,
    })
}

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl ArgValue<'_> {
    /// The value as an integer, for ids stored as int64 or uint64 (bits kept).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            ArgValue::Int(v) => Some(v as u64),
            ArgValue::Uint(v) => Some(v),
            _ => None,
        }
    }

    /// The value as text, for string stats (plain or interned).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ArgValue::Str(s) => Some(s),
            ArgValue::Ref { text, .. } => Some(text),
            _ => None,
        }
    }
}
