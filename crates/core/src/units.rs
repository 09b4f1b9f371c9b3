//! Lengths of a text in the units users index strings with.

/// Code points and UTF-16 code units in `text`.
#[inline]
pub(crate) fn count_units(text: &str) -> (u64, u64) {
    if text.is_ascii() {
        return (text.len() as u64, text.len() as u64);
    }
    let (mut chars, mut astral) = (0u64, 0u64);
    for &b in text.as_bytes() {
        chars += u64::from(b & 0xC0 != 0x80);
        astral += u64::from(b >= 0xF0);
    }
    (chars, chars + astral)
}
