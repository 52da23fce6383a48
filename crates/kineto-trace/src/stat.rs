//! An event's `args` as XSpace stat values: each JSON value read in place
//! and kept as exactly as an `XStat` can hold it.

use std::path::Path;

use xplane_proto::x_stat::Value;

use crate::error::Result;
use crate::event::{JsonStr, json};
use crate::scan::{skip_value, walk_object};

/// The stat value of one JSON value (its text, whitespace trimmed):
///
/// | JSON | stat |
/// |---|---|
/// | string | `str_value`, escapes decoded |
/// | integer | `int64_value`, else (above `i64::MAX`) `uint64_value`, else `double_value` |
/// | number with a fraction or exponent | `double_value` |
/// | `true` / `false` | `int64_value` 1 / 0 (an `XStat` has no boolean) |
/// | `null`, array, object | `str_value`: the JSON text as written |
pub fn json_stat_value(text: &[u8]) -> Value {
    match text.first() {
        Some(b'"') => Value::StrValue(JsonStr(&text[1..text.len() - 1]).decode().into_owned()),
        Some(b't') => Value::Int64Value(1),
        Some(b'f') => Value::Int64Value(0),
        Some(b'-' | b'0'..=b'9') => number(text),
        _ => Value::StrValue(String::from_utf8_lossy(text).into_owned()),
    }
}

fn number(text: &[u8]) -> Value {
    // The scanner has checked the grammar: the text is ASCII.
    let s = std::str::from_utf8(text).unwrap_or_default();
    if !s.contains(['.', 'e', 'E']) {
        if let Ok(v) = s.parse::<i64>() {
            return Value::Int64Value(v);
        }
        if let Ok(v) = s.parse::<u64>() {
            return Value::Uint64Value(v);
        }
    }
    Value::DoubleValue(s.parse().unwrap_or(f64::NAN))
}

/// Each member of the `args` object `args` (found at byte `offset` of
/// `path`): its key (decoded) and its value's text.
pub(crate) fn for_each_arg<'a>(
    args: &'a [u8],
    offset: usize,
    path: &Path,
    mut f: impl FnMut(JsonStr<'a>, &'a [u8]),
) -> Result<()> {
    let shift = |mut s: crate::scan::Syntax| {
        s.offset += offset;
        json(path, s)
    };
    if args.first() != Some(&b'{') {
        return Err(shift(crate::scan::Syntax {
            offset: 0,
            expected: "an \"args\" object",
        }));
    }
    walk_object(args, 0, |key, v| {
        let end = skip_value(args, v)?;
        f(JsonStr(key), &args[v..end]);
        Ok(end)
    })
    .map_err(shift)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_kind_has_its_stat() {
        let v = |t: &str| json_stat_value(t.as_bytes());
        assert_eq!(v(r#""a\"b""#), Value::StrValue("a\"b".into()));
        assert_eq!(v("-12"), Value::Int64Value(-12));
        assert_eq!(v("18446744073709551615"), Value::Uint64Value(u64::MAX));
        assert_eq!(v("1e3"), Value::DoubleValue(1000.0));
        assert_eq!(v("0.25"), Value::DoubleValue(0.25));
        assert_eq!(v("true"), Value::Int64Value(1));
        assert_eq!(v("false"), Value::Int64Value(0));
        assert_eq!(v("null"), Value::StrValue("null".into()));
        assert_eq!(v("[[16], [1]]"), Value::StrValue("[[16], [1]]".into()));
        assert_eq!(v(r#"{"a": 1}"#), Value::StrValue(r#"{"a": 1}"#.into()));
    }

    #[test]
    fn args_are_walked_in_order_and_a_bad_one_names_its_byte() {
        let text = br#"{"b": [1, {"x": 2}], "a": "s"}"#;
        let mut seen = Vec::new();
        for_each_arg(text, 0, Path::new("t.json"), |k, v| {
            seen.push((k.decode().into_owned(), v.to_vec()))
        })
        .unwrap();
        assert_eq!(seen[0], ("b".into(), br#"[1, {"x": 2}]"#.to_vec()));
        assert_eq!(seen[1], ("a".into(), br#""s""#.to_vec()));
        let err = for_each_arg(br#"{"a" 1}"#, 100, Path::new("t.json"), |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("byte 105"), "{err}");
    }
}
