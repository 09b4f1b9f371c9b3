//! Offsets in bytes, code points and UTF-16 code units.

use super::read::Unit;
use crate::event::Position;

/// The byte index in `text` of `offset` counted in `unit`, clamped to the text and floored to
/// a character boundary.
pub(crate) fn byte_index(text: &str, offset: u64, unit: Unit) -> usize {
    match unit {
        Unit::Bytes => {
            let mut i = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(text.len());
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        }
        Unit::Chars => {
            let Ok(n) = usize::try_from(offset) else {
                return text.len();
            };
            if let Some(i) = ascii_prefix(text, n) {
                return i;
            }
            // Character `n` starts at the `n + 1`th byte that does not continue a character.
            let mut seen = 0;
            for (i, &b) in text.as_bytes().iter().enumerate() {
                if !is_continuation(b) {
                    if seen == n {
                        return i;
                    }
                    seen += 1;
                }
            }
            text.len()
        }
        Unit::Utf16 => {
            if let Some(i) = usize::try_from(offset)
                .ok()
                .and_then(|n| ascii_prefix(text, n))
            {
                return i;
            }
            let mut units = 0u64;
            for (i, c) in text.char_indices() {
                if units >= offset {
                    return i;
                }
                units += c.len_utf16() as u64;
            }
            text.len()
        }
    }
}

/// `n` when the first `n` bytes of `text` are ASCII (or `text` is shorter and all ASCII): then
/// offset `n` in any unit is byte `n` (or the end), found without walking characters.
fn ascii_prefix(text: &str, n: usize) -> Option<usize> {
    let b = text.as_bytes();
    match b.get(..n) {
        Some(head) => head.is_ascii().then_some(n),
        None => b.is_ascii().then_some(b.len()),
    }
}

/// Whether `b` continues a UTF-8 character (`0b10xx_xxxx`).
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The position of byte index `byte` of `text` (a character boundary) in the three units.
pub(crate) fn position(text: &str, byte: usize) -> Position {
    let head = &text[..byte.min(text.len())];
    let (chars, utf16) = crate::units::count_units(head);
    Position {
        bytes: head.len() as u64,
        chars,
        utf16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_agree_on_non_ascii_text() {
        let t = "a€😀b";
        assert_eq!(byte_index(t, 2, Unit::Chars), 4);
        assert_eq!(byte_index(t, 4, Unit::Utf16), 8);
        assert_eq!(byte_index(t, 5, Unit::Bytes), 4);
        assert_eq!(byte_index(t, 99, Unit::Chars), t.len());
        assert_eq!(byte_index(t, 99, Unit::Utf16), t.len());
        assert_eq!(byte_index("abc", 2, Unit::Chars), 2);
        assert_eq!(byte_index("abc", 9, Unit::Utf16), 3);
        assert_eq!(byte_index("abc", 0, Unit::Utf16), 0);
        // Every offset of mixed text in both units, as walking the characters gives it.
        let mixed = "ab é😀 c’d €x";
        for n in 0..20u64 {
            let by_chars = mixed
                .char_indices()
                .nth(n as usize)
                .map_or(mixed.len(), |(i, _)| i);
            assert_eq!(byte_index(mixed, n, Unit::Chars), by_chars, "chars {n}");
            let mut units = 0;
            let by_utf16 = mixed
                .char_indices()
                .find(|(_, c)| {
                    let here = units >= n;
                    units += c.len_utf16() as u64;
                    here
                })
                .map_or(mixed.len(), |(i, _)| i);
            assert_eq!(byte_index(mixed, n, Unit::Utf16), by_utf16, "utf16 {n}");
        }
        let p = position(t, 8);
        assert_eq!((p.bytes, p.chars, p.utf16), (8, 3, 4));
    }
}
