//! A stream's event read against the last one: [`LikeLast`].
//!
//! A server writes the events of one stream alike: the same members in the same order, and
//! only one string differs (a chat chunk's content, an Anthropic text delta's text). When an
//! event's text before that string's literal, and its text after it, are the bytes of the last
//! event read whole, the two parse alike but for that literal: what a JSON parser makes of the
//! text before a string token does not depend on the token, and what it makes of the text
//! after it does not depend on the string's value. So such an event is read by checking that
//! one literal ([`LikeLast::read`]); whatever else the last one held is found at the same
//! places ([`Same::moved`]). A stream whose events differ elsewhere each time (OpenAI's
//! per-chunk `obfuscation`) stops being compared after [`Misses::GIVE_UP`] in a row.

use std::borrow::Cow;
use std::ops::Range;

use super::json::Str;

/// The text of the last event read whole, and where its string literal is.
#[derive(Debug, Clone)]
pub(super) struct LikeLast {
    /// Its text.
    data: String,
    /// Byte range of the literal (quotes included).
    literal: Range<usize>,
}

/// An event read by [`LikeLast::read`].
#[derive(Debug)]
pub(super) struct Same<'a> {
    /// Byte range of its literal (quotes included).
    pub(super) literal: Range<usize>,
    /// The literal's string.
    pub(super) value: Cow<'a, str>,
    /// Where the last event's literal ended.
    last_end: usize,
}

impl Same<'_> {
    /// Where a byte offset of the last event is in this one (after the literal, it moves with
    /// the literal's end).
    pub(super) fn moved(&self, at: usize) -> usize {
        if at >= self.last_end {
            at - self.last_end + self.literal.end
        } else {
            at
        }
    }
}

impl LikeLast {
    /// Keeps `data`, whose string literal is at `literal`, in `slot` (in the allocation of
    /// the one it held).
    pub(super) fn keep(slot: &mut Option<LikeLast>, data: &str, literal: Range<usize>) {
        let mut text = slot.take().map(|l| l.data).unwrap_or_default();
        text.clear();
        text.push_str(data);
        *slot = Some(LikeLast {
            data: text,
            literal,
        });
    }

    /// The text kept.
    #[cfg(test)]
    pub(super) fn data(&self) -> &str {
        &self.data
    }

    /// `data` as the kept event with another literal, when its text before and after the
    /// literal is the kept event's and the literal is one JSON string; else `None`.
    pub(super) fn read<'a>(&self, data: &'a str) -> Option<Same<'a>> {
        let before = self.data.get(..self.literal.start)?;
        let after = self.data.get(self.literal.end..)?;
        if data.len() < before.len() + after.len() + 2
            || !data.starts_with(before)
            || !data.ends_with(after)
        {
            return None;
        }
        let end = data.len() - after.len();
        let value = string_literal(data.get(before.len()..end)?)?;
        Some(Same {
            literal: before.len()..end,
            value,
            last_end: self.literal.end,
        })
    }
}

/// The value of `literal` when it is exactly one JSON string token, else `None`. Without an
/// escape it is the text between the quotes, borrowed (as a whole read gives it); with one
/// it is decoded as a whole read decodes it.
fn string_literal(literal: &str) -> Option<Cow<'_, str>> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        return Some(Cow::Borrowed(inner));
    }
    match serde_json::from_str::<Str<'_>>(literal).ok()? {
        Str::Is(s) => Some(s),
        _ => None,
    }
}

/// Events in a row not written like the last one.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Misses(u8);

impl Misses {
    /// Events in a row not written like the last one after which a stream is read whole.
    pub(super) const GIVE_UP: u8 = 3;

    /// Whether the stream is read whole from now on.
    pub(super) fn given_up(self) -> bool {
        self.0 >= Self::GIVE_UP
    }

    /// An event was written like the last one.
    pub(super) fn hit(&mut self) {
        self.0 = 0;
    }

    /// An event was not; whether that gives up.
    pub(super) fn miss(&mut self) -> bool {
        self.0 = self.0.saturating_add(1);
        self.given_up()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_is_one_json_string_or_nothing() {
        for (literal, want) in [
            (r#""Paris""#, Some("Paris")),
            (r#""""#, Some("")),
            (r#""caf\u00e9 \"q\" \n""#, Some("café \"q\" \n")),
            (r#""草枕【1】""#, Some("草枕【1】")),
            (r#""a","content":"b""#, None),
            (r#""a" "#, None),
            ("\"a\u{1}\"", None),
            (r#""a\""#, None),
            (r#""\x""#, None),
            ("\"", None),
            ("7", None),
            ("", None),
        ] {
            assert_eq!(string_literal(literal).as_deref(), want, "{literal}");
        }
    }

    #[test]
    fn an_event_is_read_against_the_last_and_its_places_move_with_the_literal() {
        let mut slot = None;
        let last = r#"{"a":"x","t":"Par","b":"y"}"#;
        let at = last.find("\"Par\"").expect("literal");
        LikeLast::keep(&mut slot, last, at..at + 5);
        let l = slot.as_ref().expect("kept");
        let data = r#"{"a":"x","t":"is \"1\"","b":"y"}"#;
        let same = l.read(data).expect("like the last");
        assert_eq!(same.value, "is \"1\"");
        assert_eq!(&data[same.literal.clone()], r#""is \"1\"""#);
        let b = last.find("\"y\"").expect("b");
        assert_eq!(&data[same.moved(b)..same.moved(b + 3)], "\"y\"");
        assert_eq!(same.moved(1), 1);
        for other in [
            r#"{"a":"z","t":"Par","b":"y"}"#,
            r#"{"a":"x","t":"Par","b":"z"}"#,
            r#"{"a":"x","t":"P","x":"Q","b":"y"}"#,
            r#"{"a":"x","t":,"b":"y"}"#,
        ] {
            assert!(l.read(other).is_none(), "{other}");
        }
    }
}
