//! `--output jsonl`: each event as one JSON line; text and citation events (nearly every line,
//! and nearly all of the bytes) written directly, without serde's byte-by-byte string escaping.

use std::io::Write;

use citeflow_core::Event;

/// Writes `event` as JSON and a newline: what `serde_json::to_writer` writes, byte for byte.
pub(crate) fn write_event_line(out: &mut impl Write, event: &Event) -> std::io::Result<()> {
    match event {
        Event::Text { text } => {
            out.write_all(br#"{"type":"text","text":""#)?;
            write_json_str_body(out, text)?;
            out.write_all(b"\"}\n")
        }
        // Nearly every other line (one per number shown).
        Event::Citation {
            number,
            source_id,
            byte_offset,
            input_byte_offset,
            char_offset,
            utf16_offset,
            provider: None,
        } => {
            // The common line, an id without escapes, is put together on the stack and written
            // at once: a `write_all` a piece cost a call of `memcpy` each (a tenth of `citeflow
            // render`'s instructions at 100k tokens).
            let mut line = Line::new();
            let fits = line.citation(
                *number,
                source_id,
                [
                    *byte_offset,
                    *input_byte_offset,
                    *char_offset,
                    *utf16_offset,
                ],
            );
            if fits.is_some() {
                return out.write_all(line.as_bytes());
            }
            // Numbers written without `write!`: its formatting machinery was most of a line's
            // cost.
            out.write_all(br#"{"type":"citation","number":"#)?;
            write_u64(out, u64::from(*number))?;
            out.write_all(br#","source_id":""#)?;
            write_json_str_body(out, source_id)?;
            out.write_all(br#"","byte_offset":"#)?;
            write_u64(out, *byte_offset)?;
            out.write_all(br#","input_byte_offset":"#)?;
            write_u64(out, *input_byte_offset)?;
            out.write_all(br#","char_offset":"#)?;
            write_u64(out, *char_offset)?;
            out.write_all(br#","utf16_offset":"#)?;
            write_u64(out, *utf16_offset)?;
            out.write_all(b"}\n")
        }
        other => {
            serde_json::to_writer(&mut *out, other)?;
            out.write_all(b"\n")
        }
    }
}

/// A citation line put together on the stack: long enough for every field but the id, and
/// an id of up to [`Line::MAX_ID_BYTES`].
struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Line {
    /// The longest id put in a [`Line`] (the other fields take at most 212 bytes).
    const MAX_ID_BYTES: usize = 40;

    fn new() -> Self {
        Line {
            buf: [0; 256],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Appends `bytes`; `None` (nothing appended) when they do not fit.
    #[inline]
    fn put(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.len + bytes.len();
        self.buf.get_mut(self.len..end)?.copy_from_slice(bytes);
        self.len = end;
        Some(())
    }

    /// Appends `n` in decimal, as `Display` (and serde_json) writes it, two digits at a time
    /// in place; `None` (nothing appended) when it does not fit.
    #[inline]
    fn put_u64(&mut self, mut n: u64) -> Option<()> {
        let digits = n.checked_ilog10().unwrap_or(0) as usize + 1;
        let end = self.len + digits;
        let dst = self.buf.get_mut(self.len..end)?;
        let mut at = digits;
        while n >= 100 {
            let pair = usize::try_from(n % 100).ok()? * 2;
            n /= 100;
            at -= 2;
            dst[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        if n >= 10 {
            let pair = usize::try_from(n).ok()? * 2;
            dst[..2].copy_from_slice(&PAIRS[pair..pair + 2]);
        } else {
            dst[0] = b'0' + u8::try_from(n).ok()?;
        }
        self.len = end;
        Some(())
    }

    /// The line of an [`Event::Citation`] without provider details, as serde_json writes it;
    /// `None` when the id is longer than [`Line::MAX_ID_BYTES`] or needs an escape.
    #[inline]
    fn citation(&mut self, number: u32, source_id: &str, offsets: [u64; 4]) -> Option<()> {
        let id = source_id.as_bytes();
        if id.len() > Self::MAX_ID_BYTES || id.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\')
        {
            return None;
        }
        let [byte_offset, input_byte_offset, char_offset, utf16_offset] = offsets;
        self.put(br#"{"type":"citation","number":"#)?;
        self.put_u64(u64::from(number))?;
        self.put(br#","source_id":""#)?;
        self.put(id)?;
        self.put(br#"","byte_offset":"#)?;
        let start = self.len;
        self.put_u64(byte_offset)?;
        let bytes = start..self.len;
        self.put(br#","input_byte_offset":"#)?;
        self.put_u64(input_byte_offset)?;
        // In text without wider characters the three offsets are one number.
        self.put(br#","char_offset":"#)?;
        self.put_same(char_offset, byte_offset, bytes.clone())?;
        self.put(br#","utf16_offset":"#)?;
        self.put_same(utf16_offset, byte_offset, bytes)?;
        self.put(b"}\n")
    }

    /// Appends `n`: when it is `earlier`, a copy of its digits already at `digits`.
    #[inline]
    fn put_same(&mut self, n: u64, earlier: u64, digits: std::ops::Range<usize>) -> Option<()> {
        if n != earlier {
            return self.put_u64(n);
        }
        let end = self.len + digits.len();
        if end > self.buf.len() {
            return None;
        }
        self.buf.copy_within(digits, self.len);
        self.len = end;
        Some(())
    }
}

/// The two digits of each number below 100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// `n` in decimal, as `Display` (and serde_json) writes it: two digits at a time.
fn write_u64(out: &mut impl Write, mut n: u64) -> std::io::Result<()> {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    while n >= 100 {
        let pair = usize::try_from(n % 100).expect("below 100") * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = usize::try_from(n).expect("below 100") * 2;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + u8::try_from(n).expect("below 10");
    }
    out.write_all(&buf[at..])
}

/// `text` escaped as the inside of a JSON string, as serde_json escapes it: `"` and `\`,
/// the short escapes `\b \t \n \f \r`, other control characters as `\u00xx`; everything else
/// (DEL and non-ASCII too) as it is. Runs without escapes are found eight bytes at a time.
fn write_json_str_body(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    let b = text.as_bytes();
    let mut start = 0;
    let mut at = 0;
    while at < b.len() {
        // Skip eight plain bytes at a time.
        while let Some(word) = b.get(at..at + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            match needs_escape(word) {
                0 => at += 8,
                found => {
                    at += (found.trailing_zeros() / 8) as usize;
                    break;
                }
            }
        }
        let Some(&c) = b.get(at) else {
            break;
        };
        let escape: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0..0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(c >> 4)],
                    HEX[usize::from(c & 0xf)],
                ]
            }
            _ => {
                at += 1;
                continue;
            }
        };
        out.write_all(&b[start..at])?;
        out.write_all(escape)?;
        at += 1;
        start = at;
    }
    out.write_all(&b[start..])
}

/// A mask with the high bit set in each byte of `word` that is `"`, `\` or below 0x20, and
/// possibly in bytes after the first such byte (never before it: the lowest set bit is exact).
fn needs_escape(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    below_space
        | zero_byte(word ^ (ONES * u64::from(b'"')))
        | zero_byte(word ^ (ONES * u64::from(b'\\')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: &Event) -> String {
        let mut out = Vec::new();
        write_event_line(&mut out, event).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn serde_line(event: &Event) -> String {
        let mut out = serde_json::to_vec(event).unwrap();
        out.push(b'\n');
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_lines_are_serde_json_byte_for_byte() {
        // Every character up to U+00FF, and a few wider ones, alone and at every position of
        // strings longer than one eight-byte word (the fast skip's edges).
        let mut chars: Vec<char> = (0u32..=0xff).filter_map(char::from_u32).collect();
        chars.extend(['\u{2028}', '€', '【', '😀']);
        let mut texts = vec![String::new()];
        for &c in &chars {
            texts.push(c.to_string());
            for len in [7, 8, 9, 15, 16, 17, 24] {
                for at in 0..len {
                    let mut t: String = "abcdefghijklmnopqrstuvwx"[..len].to_owned();
                    t.insert(at, c);
                    texts.push(t);
                }
            }
        }
        texts.push("\"\\\n\u{1}\u{1f}\u{7f} [1].\r\n\t".repeat(5));
        for text in texts {
            let e = Event::Text { text };
            assert_eq!(line(&e), serde_line(&e));
        }
    }

    #[test]
    fn citation_and_other_lines_are_serde_json_byte_for_byte() {
        let citation = |source_id: &str, provider| Event::Citation {
            number: 2,
            source_id: source_id.into(),
            byte_offset: 10,
            input_byte_offset: 9,
            char_offset: u64::MAX,
            utf16_offset: 0,
            provider,
        };
        let events = [
            citation("doc_7", None),
            citation("doc \"7\"\n é", None),
            citation("doc_7", Some(Box::default())),
            Event::NumberNeeded {
                key: "id:doc_7".into(),
                source_id: "doc_7".into(),
            },
        ];
        for e in &events {
            assert_eq!(line(e), serde_line(e));
        }
        // Every number's digits, at the edges of each decimal length.
        for n in (0..20).flat_map(|k| {
            let p = 10u64.pow(k);
            [p - 1, p, p + 1]
        }) {
            let e = Event::Citation {
                number: u32::try_from(n).unwrap_or(u32::MAX),
                source_id: "doc_7".into(),
                byte_offset: n,
                input_byte_offset: n / 3,
                char_offset: u64::MAX - n,
                utf16_offset: n.saturating_mul(7),
                provider: None,
            };
            assert_eq!(line(&e), serde_line(&e));
        }
        // Ids at and past the longest put together on the stack, with the longest numbers.
        for len in [
            0,
            1,
            Line::MAX_ID_BYTES - 1,
            Line::MAX_ID_BYTES,
            Line::MAX_ID_BYTES + 1,
        ] {
            let e = Event::Citation {
                number: u32::MAX,
                source_id: "é".repeat(len / 2) + &"x".repeat(len % 2),
                byte_offset: u64::MAX,
                input_byte_offset: u64::MAX,
                char_offset: u64::MAX,
                utf16_offset: u64::MAX,
                provider: None,
            };
            assert_eq!(line(&e), serde_line(&e), "id of {len} bytes");
        }
        assert_eq!(
            line(&events[1]),
            concat!(
                r#"{"type":"citation","number":2,"source_id":"doc \"7\"\n é","byte_offset":10,"#,
                r#""input_byte_offset":9,"char_offset":18446744073709551615,"utf16_offset":0}"#,
                "\n"
            )
        );
    }
}
