//! A validating JSON scanner over bytes: it finds where values start and end
//! without building them, so a trace of any size is walked in place.

/// A syntax error: where, and what the grammar wanted there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Syntax {
    pub offset: usize,
    pub expected: &'static str,
}

pub(crate) type Scan<T> = Result<T, Syntax>;

/// Nesting deeper than this is rejected (it also bounds the recursion).
const MAX_DEPTH: u32 = 256;

fn err<T>(offset: usize, expected: &'static str) -> Scan<T> {
    Err(Syntax { offset, expected })
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// True when some byte of `w` is zero.
fn has_zero(w: u64) -> bool {
    w.wrapping_sub(ONES) & !w & HIGHS != 0
}

/// True when some byte of `w` ends a run of plain string bytes: `"`, `\\`
/// or a control character (below 0x20).
fn has_string_special(w: u64) -> bool {
    has_zero(w ^ (ONES * u64::from(b'"')))
        || has_zero(w ^ (ONES * u64::from(b'\\')))
        || w.wrapping_sub(ONES * 0x20) & !w & HIGHS != 0
}

/// Eight bytes at `i` as a word, if there are eight.
fn word(b: &[u8], i: usize) -> Option<u64> {
    b.get(i..i + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("eight bytes")))
}

/// The first position at or after `i` that is not JSON whitespace.
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    // Indentation: eight spaces at a time.
    while word(b, i) == Some(ONES * u64::from(b' ')) {
        i += 8;
    }
    while let Some(c) = b.get(i) {
        if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            break;
        }
        i += 1;
    }
    i
}

/// Expect byte `c` at `i` (after whitespace); the position after it.
pub(crate) fn expect(b: &[u8], i: usize, c: u8, expected: &'static str) -> Scan<usize> {
    let i = skip_ws(b, i);
    if b.get(i) == Some(&c) {
        Ok(i + 1)
    } else {
        err(i, expected)
    }
}

/// Skip the value starting at `i` (no leading whitespace); its end.
pub(crate) fn skip_value(b: &[u8], i: usize) -> Scan<usize> {
    skip_nested(b, i, 0)
}

fn skip_nested(b: &[u8], i: usize, depth: u32) -> Scan<usize> {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{') => {
            if depth >= MAX_DEPTH {
                return err(i, "nesting less deep than 256 levels");
            }
            walk_object(b, i, |_, v| skip_nested(b, v, depth + 1))
        }
        Some(b'[') => {
            if depth >= MAX_DEPTH {
                return err(i, "nesting less deep than 256 levels");
            }
            walk_array(b, i, |v| skip_nested(b, v, depth + 1))
        }
        Some(b'-' | b'0'..=b'9') => skip_number(b, i),
        Some(b't') => literal(b, i, b"true"),
        Some(b'f') => literal(b, i, b"false"),
        Some(b'n') => literal(b, i, b"null"),
        _ => err(i, "a JSON value"),
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Scan<usize> {
    if b[i..].starts_with(word) {
        Ok(i + word.len())
    } else {
        err(i, "true, false or null")
    }
}

/// Skip the string starting at `i` (`"`); its end (after the closing quote).
pub(crate) fn skip_string(b: &[u8], i: usize) -> Scan<usize> {
    let mut j = i + 1;
    loop {
        while let Some(w) = word(b, j) {
            if has_string_special(w) {
                break;
            }
            j += 8;
        }
        let Some(&c) = b.get(j) else {
            return err(j, "the end of a string");
        };
        match c {
            b'"' => return Ok(j + 1),
            b'\\' => match b.get(j + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                Some(b'u') => {
                    let hex = b.get(j + 2..j + 6);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return err(j, "four hex digits after \\u");
                    }
                    j += 6;
                }
                _ => return err(j, "a valid escape"),
            },
            0..=0x1f => return err(j, "no control character inside a string"),
            _ => j += 1,
        }
    }
}

/// Skip the number starting at `i`; its end.
pub(crate) fn skip_number(b: &[u8], i: usize) -> Scan<usize> {
    let digits = |mut j: usize| {
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let mut j = i;
    if b.get(j) == Some(&b'-') {
        j += 1;
    }
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => j = digits(j),
        _ => return err(j, "a digit"),
    }
    if b.get(j) == Some(&b'.') {
        let k = digits(j + 1);
        if k == j + 1 {
            return err(k, "a digit after the decimal point");
        }
        j = k;
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let k = digits(j);
        if k == j {
            return err(k, "a digit in the exponent");
        }
        j = k;
    }
    Ok(j)
}

/// Find the end of the array or object at `i` by its brackets alone,
/// stepping over strings, without checking the grammar in between (for a
/// part that is validated later, as it is read). Cheaper than
/// [`skip_value`].
pub(crate) fn skip_balanced(b: &[u8], i: usize) -> Scan<usize> {
    let mut depth = 0usize;
    let mut j = i;
    while let Some(&c) = b.get(j) {
        match c {
            b'"' => {
                j = skip_string(b, j)?;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    err(j, "the closing bracket")
}

/// Walk the object at `i` (`{`): for each member, `f(key, value_start)` gets
/// the key's raw bytes (between the quotes) and must return the value's end.
/// Returns the end of the object.
pub(crate) fn walk_object<'a>(
    b: &'a [u8],
    i: usize,
    mut f: impl FnMut(&'a [u8], usize) -> Scan<usize>,
) -> Scan<usize> {
    let mut j = skip_ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Ok(j + 1);
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return err(j, "a string key");
        }
        let key_end = skip_string(b, j)?;
        let key = &b[j + 1..key_end - 1];
        let v = skip_ws(b, expect(b, key_end, b':', "':' after a key")?);
        let end = f(key, v)?;
        j = skip_ws(b, end);
        match b.get(j) {
            Some(b',') => j = skip_ws(b, j + 1),
            Some(b'}') => return Ok(j + 1),
            _ => return err(j, "',' or '}' in an object"),
        }
    }
}

/// Walk the array at `i` (`[`): `f(element_start)` must return each
/// element's end. Returns the end of the array.
pub(crate) fn walk_array(
    b: &[u8],
    i: usize,
    mut f: impl FnMut(usize) -> Scan<usize>,
) -> Scan<usize> {
    let mut j = skip_ws(b, i + 1);
    if b.get(j) == Some(&b']') {
        return Ok(j + 1);
    }
    loop {
        let end = f(j)?;
        j = skip_ws(b, end);
        match b.get(j) {
            Some(b',') => j = skip_ws(b, j + 1),
            Some(b']') => return Ok(j + 1),
            _ => return err(j, "',' or ']' in an array"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(s: &str) -> Scan<usize> {
        skip_value(s.as_bytes(), 0)
    }

    #[test]
    fn skips_every_kind_of_value() {
        for s in [
            r#"{"a": [1, -2.5e3, "x\"y\u00e9", true, false, null, {}], "b": []}"#,
            "0",
            "-0.125",
            r#""\\\/\b\f\n\r\t""#,
        ] {
            assert_eq!(skip(s), Ok(s.len()), "{s}");
        }
    }

    #[test]
    fn reports_the_offset_of_bad_syntax() {
        assert_eq!(skip(r#"{"a" 1}"#).unwrap_err().offset, 5);
        assert_eq!(skip(r#"[1, 2,]"#).unwrap_err().offset, 6);
        assert_eq!(skip(r#"[1 2]"#).unwrap_err().offset, 3);
        assert_eq!(skip(r#""abc"#).unwrap_err().offset, 4);
        assert_eq!(skip("01").unwrap(), 1);
        assert_eq!(skip("1.").unwrap_err().offset, 2);
        assert_eq!(skip("tru").unwrap_err().offset, 0);
        assert_eq!(skip(r#""\x""#).unwrap_err().offset, 1);
        assert_eq!(skip("\"a\nb\"").unwrap_err().offset, 2);
    }

    #[test]
    fn balanced_skip_finds_the_closing_bracket() {
        let s = br#"[{"a": "]}", "b": [1, {"c": "\"]"}]}, 2] tail"#;
        assert_eq!(skip_balanced(s, 0), Ok(s.len() - 5));
        assert_eq!(skip_balanced(b"[[1, 2]", 0).unwrap_err().offset, 7);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let s = "[".repeat(100_000);
        assert_eq!(
            skip(&s).unwrap_err().expected,
            "nesting less deep than 256 levels"
        );
    }
}
