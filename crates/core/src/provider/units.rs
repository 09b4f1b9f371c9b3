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
            text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
        }
        Unit::Utf16 => {
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
        let p = position(t, 8);
        assert_eq!((p.bytes, p.chars, p.utf16), (8, 3, 4));
    }
}
