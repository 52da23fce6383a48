//! Stats of an event as named arguments, the form both writers need.

use std::borrow::Cow;

use xplane_proto::{PlaneIndex, StatValue, StatView};

/// One stat of an event. Names are looked up only when a writer needs them
/// ([`stat_name`], [`ref_text`]): the Perfetto writer interns by id.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg<'a> {
    /// The stat metadata id (plane-local; its name is the stat's name).
    pub name_id: i64,
    /// The value.
    pub value: ArgValue<'a>,
}

/// The name of stat metadata `id` of a plane (`#<id>` when it has none).
pub fn stat_name<'a>(index: &PlaneIndex<'a>, id: i64) -> Cow<'a, str> {
    match index.stat_name(id) {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(format!("#{id}")),
    }
}

/// The text of interned string `id` (a `ref_value`) of a plane.
pub fn ref_text<'a>(index: &PlaneIndex<'a>, id: u64) -> Cow<'a, str> {
    stat_name(index, id as i64)
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
    /// `ref_value`: an interned string of the plane, the name of stat
    /// metadata `id` ([`ref_text`]).
    Ref(u64),
    /// `bytes_value`, written as lowercase hex.
    Bytes(&'a [u8]),
    /// A stat with no value.
    Empty,
}

/// Why a stat could not be turned into an [`Arg`].
#[derive(Debug)]
pub(crate) struct BadCompressed {
    pub stat: String,
    pub why: String,
}

/// One stat as an argument (a compressed string is decompressed).
#[inline]
pub(crate) fn arg<'a>(
    stat: &StatView<'a>,
    index: &PlaneIndex<'a>,
) -> Result<Arg<'a>, BadCompressed> {
    let value = match stat.value {
        None => ArgValue::Empty,
        Some(StatValue::Int64(v)) => ArgValue::Int(v),
        Some(StatValue::Uint64(v)) => ArgValue::Uint(v),
        Some(StatValue::Double(v)) => ArgValue::Double(v),
        Some(StatValue::Str(s)) => ArgValue::Str(Cow::Borrowed(s)),
        Some(StatValue::Bytes(b)) => ArgValue::Bytes(b),
        Some(StatValue::Ref(id)) => ArgValue::Ref(id),
        Some(StatValue::CompressedStr(gz)) => {
            let bad = |why: String| BadCompressed {
                stat: stat_name(index, stat.metadata_id).into_owned(),
                why,
            };
            let not_text = || "is not gzip-compressed UTF-8 text".to_owned();
            // Bounded: no more than the limit for its compressed size.
            let limit = xplane_proto::source::inflate_limit(gz.len() as u64);
            let text = match xplane_proto::source::inflate(gz, std::path::Path::new(""), "stat") {
                Ok(text) => String::from_utf8(text).map_err(|_| bad(not_text()))?,
                Err(xplane_proto::Error::InflateLimit { compressed, .. }) => {
                    return Err(bad(format!(
                        "decompresses to more than {limit} bytes, the limit for {compressed} compressed bytes; raise it with --max-decompressed BYTES"
                    )));
                }
                Err(_) => return Err(bad(not_text())),
            };
            ArgValue::Str(Cow::Owned(text))
        }
    };
    Ok(Arg {
        name_id: stat.metadata_id,
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
    pub fn as_str<'s>(&'s self, index: &PlaneIndex<'s>) -> Option<Cow<'s, str>> {
        match self {
            ArgValue::Str(s) => Some(Cow::Borrowed(s)),
            ArgValue::Ref(id) => Some(ref_text(index, *id)),
            _ => None,
        }
    }
}
