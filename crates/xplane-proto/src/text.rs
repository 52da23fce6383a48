//! Text from a trace is data: before it reaches a terminal, a CSV cell or
//! a page, the characters that would act instead of showing (control
//! characters, the bidirectional overrides that reorder what follows,
//! spreadsheet formula prefixes) are written as visible escapes.

use std::borrow::Cow;

/// Whether `c` would act rather than show: a C0 or C1 control character,
/// DEL, or a bidirectional formatting character (embeddings, overrides,
/// isolates and marks: U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069).
pub fn is_active(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every [`is_active`] character written as `\u{XXXX}`; the
/// text itself when it has none.
///
/// ```
/// use xplane_proto::text::visible;
/// assert_eq!(visible("step 1"), "step 1");
/// assert_eq!(visible("\x1b]0;x\x07"), "\\u{1B}]0;x\\u{7}");
/// assert_eq!(visible("a\u{202E}b"), "a\\u{202E}b");
/// ```
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_active) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_active(c) {
            out.push_str(&format!("\\u{{{:X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as one CSV cell: [`visible`], a leading `'` when it starts
/// with a character a spreadsheet reads as a formula (`=`, `+`, `-`,
/// `@`), and quoted when it holds a comma, quote or line break.
///
/// ```
/// use xplane_proto::text::csv_cell;
/// assert_eq!(csv_cell("all-reduce.1"), "all-reduce.1");
/// assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
/// assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
/// assert_eq!(csv_cell("a,b"), "\"a,b\"");
/// ```
pub fn csv_cell(text: &str) -> String {
    let text = visible(text);
    let text = if text.starts_with(['=', '+', '-', '@']) {
        Cow::Owned(format!("'{text}"))
    } else {
        text
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.into_owned()
    }
}
