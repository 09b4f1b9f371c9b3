//! Input: bytes (framed as text, JSONL or SSE) and parsed payloads, into the dialect's
//! events; text payloads gathered and given to the rewriter at once.

use serde_json::Value;

use super::{Deferred, ProviderStream};
use crate::provider::error::ProviderError;
use crate::provider::frame::{special_at, FrameDecoder, Framing, Plain};
use crate::provider::json::keys_of;
use crate::provider::read::ProviderEvent;
use crate::provider::reader::{Dialect, Reader};
use crate::provider::text_delta::TextDelta;
use crate::settings::NumberSource;

impl ProviderStream {
    /// Feeds bytes of the stream, cut anywhere.
    ///
    /// # Errors
    /// [`ProviderError`] naming the line: bad framing, a payload that is not JSON or not of
    /// the dialect, an error the provider reported, or the rewriter's error. Events before it
    /// stay available.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.write_inner(bytes);
        self.record(r)
    }

    pub(super) fn write_inner(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if self.frames.framing() == Framing::Text {
            self.text_seen |= !bytes.is_empty();
            self.rw_mut().write(bytes)?;
            self.drain();
            return Ok(());
        }
        if self.frames.framing() == Framing::Jsonl {
            // Each line is read where it lies in `bytes`, without a queue of owned payloads.
            let placeholder = FrameDecoder::new(Framing::Jsonl, 0);
            let mut frames = std::mem::replace(&mut self.frames, placeholder);
            // The rewriter gets the chunk's text payloads in one write (its output does not
            // depend on how its input is cut). Only where no number is ever awaited: then
            // no text payload is held back (`blocked`), and the one error a `&str` write can
            // have (the rewriter was closed) is the same for the first payload as for all.
            self.gather_text = self.settings.number_source() == NumberSource::Local;
            // Gathering, the text of a run of plain string lines goes into the part's text in
            // the decoder's loop, without a call a line (then the part's text is lent to it,
            // and lent back for any other line). Never blocked while gathering (see above).
            let mut lent =
                (self.gather_text && !self.blocked()).then(|| std::mem::take(&mut self.part.text));
            let r = frames.write_jsonl_into(bytes, lent.as_mut(), |text, data, line, plain| {
                match (plain, text) {
                    (Plain::Appended(bytes), _) => {
                        // What `text_appended` does for each line of the run, when gathering.
                        self.line = line;
                        self.text_seen |= bytes > 0;
                        self.gathered = true;
                        Ok(())
                    }
                    (_, Some(text)) => {
                        std::mem::swap(&mut self.part.text, text);
                        let r = self.take_line(data, line, plain);
                        std::mem::swap(&mut self.part.text, text);
                        debug_assert!(!self.blocked(), "blocked while gathering");
                        r
                    }
                    (_, None) => self.take_line(data, line, plain),
                }
            });
            if let Some(text) = lent {
                self.part.text = text;
            }
            self.frames = frames;
            self.gather_text = false;
            // Text gathered before a bad line is given before its error, as line by line.
            self.feed_gathered()?;
            return r;
        }
        let r = self.frames.write(bytes);
        self.take_payloads()?;
        r
    }

    pub(super) fn take_payloads(&mut self) -> Result<(), ProviderError> {
        let sse = self.frames.framing() == Framing::Sse;
        while let Some(p) = self.frames.poll_payload() {
            self.take_payload(&p.data, p.line, sse)?;
        }
        Ok(())
    }

    /// One JSONL payload: the common chunk of text, a JSON string without escapes, read here
    /// (inlined in the line loop); anything else by [`ProviderStream::take_payload`].
    #[inline]
    fn take_line(&mut self, data: &str, line: u64, plain: Plain) -> Result<(), ProviderError> {
        let b = data.as_bytes();
        if let [b'"', body @ .., b'"'] = b {
            if (plain == Plain::String || !has_special(body)) && !self.blocked() {
                let before = self.part.text.len();
                // Both ends are ASCII quotes, so character boundaries.
                self.part.text.push_str(&data[1..data.len() - 1]);
                return self.text_appended(before, line);
            }
        }
        self.take_payload(data, line, false)
    }

    /// One payload: a JSON string is a chunk of text, anything else is the dialect's.
    #[inline(never)]
    pub(super) fn take_payload(
        &mut self,
        data: &str,
        line: u64,
        sse: bool,
    ) -> Result<(), ProviderError> {
        let json_err = |e: serde_json::Error| ProviderError::Json {
            line,
            sse,
            message: e.to_string(),
        };
        if data.as_bytes().first() == Some(&b'"') && !self.blocked() {
            // The common chunk of text: read into the part's text in place, escapes too.
            let before = self.part.text.len();
            if append_json_string(data, &mut self.part.text) {
                return self.text_appended(before, line);
            }
        }
        if let Some(text) = plain_json_string(data) {
            return self.write_text_at(text, line);
        }
        if data.trim_start().starts_with('"') {
            // A chunk of text (JSONL of strings): read in place, without a `Value`.
            return match serde_json::from_str::<&str>(data) {
                Ok(text) => self.write_text_at(text, line),
                Err(_) => {
                    let text: String = serde_json::from_str(data).map_err(json_err)?;
                    self.write_text_at(&text, line)
                }
            };
        }
        // The text gathered so far goes before this payload (and before its error).
        self.feed_gathered()?;
        if self.reader.is_none() {
            // The first payload's dialect, when not given, is detected from its text (a text
            // that does not say, such as one with a repeated key, is detected on its tree).
            let dialect = self
                .dialect
                .or_else(|| Dialect::detect_text(data).flatten());
            if let Some(dialect) = dialect {
                self.dialect = Some(dialect);
                self.reader = Some(Reader::new(dialect));
            }
        }
        // Once the dialect is known, its reader reads the payload's text without a tree.
        if self.reader.is_some() {
            self.line = line;
            let read = self.read_events(|reader, out| reader.read_text(data, line, out))?;
            if read {
                return Ok(());
            }
        }
        let value = serde_json::from_str::<Value>(data).map_err(json_err)?;
        self.write_payload_inner(&value, line)
    }

    /// Feeds a chunk of answer text that the caller has already read from the provider's
    /// payload, as the dialect's reader would have given it (the hold rule applies): an
    /// adapter with a faster reader for the common chunk of text alone gives its text here
    /// and the other payloads to [`ProviderStream::write_payload`].
    ///
    /// # Errors
    /// As [`ProviderStream::write`].
    pub fn write_text(&mut self, text: &str) -> Result<(), ProviderError> {
        self.check()?;
        if self.blocked() {
            let text = text.to_owned();
            let r = self.apply(ProviderEvent::Text { text });
            return self.record(r);
        }
        // As `apply` does, without the event's copy of the text.
        let r = self.take_text(text).map(|()| self.drain());
        self.record(r)
    }

    /// An event [`TextDelta::read`] read: what [`ProviderStream::write_payload`] of the same
    /// event does (a Responses delta of another part ends the one before and starts its
    /// own), from the event's text alone.
    ///
    /// # Errors
    /// As [`ProviderStream::write`].
    pub fn write_text_delta(&mut self, t: &TextDelta<'_>) -> Result<(), ProviderError> {
        self.check()?;
        if let Some((item, index)) = t.part() {
            if self.reader.is_none() {
                let dialect = *self.dialect.get_or_insert(t.dialect());
                self.reader = Some(Reader::new(dialect));
            }
            let r = self.read_events(|reader, out| {
                reader.enter_part(item, index, out);
                Ok(true)
            });
            self.record(r.map(drop))?;
        }
        if t.text().is_empty() {
            return Ok(());
        }
        self.write_text(t.text())
    }

    /// A chunk of answer text (a JSON string payload).
    pub(super) fn write_text_at(&mut self, text: &str, line: u64) -> Result<(), ProviderError> {
        self.line = line;
        if self.blocked() {
            self.deferred
                .push_back(Deferred::Text(text.to_owned(), line));
            return Ok(());
        }
        let before = self.part.text.len();
        self.part.text.push_str(text);
        self.text_appended(before, line)
    }

    /// After a chunk of answer text was appended to the part's text from byte `before` (the
    /// stream not blocked): gathered, or given to the rewriter.
    #[inline]
    fn text_appended(&mut self, before: usize, line: u64) -> Result<(), ProviderError> {
        self.line = line;
        self.text_seen |= self.part.text.len() > before;
        if self.gather_text {
            self.gathered = true;
            return Ok(());
        }
        self.feed_all()
    }

    /// Gives the rewriter the text payloads gathered (see `gather_text`).
    pub(super) fn feed_gathered(&mut self) -> Result<(), ProviderError> {
        if std::mem::take(&mut self.gathered) {
            self.feed_all()?;
        }
        Ok(())
    }

    /// Feeds one payload as its JSON text (`line` names it in errors), as
    /// [`ProviderStream::write_payload`] does for a parsed one: a JSON string is a chunk of
    /// answer text; an object is read by the stream's dialect from the text, into borrowed
    /// structs of the fields it uses, without a `Value` tree (a payload the structs cannot
    /// read, such as one with a duplicate key, is parsed as a tree and read as before). For
    /// adapters that receive each event already framed, as JSON text.
    ///
    /// # Errors
    /// As [`ProviderStream::write`]; [`ProviderError::Json`] for text that is not JSON.
    pub fn write_payload_json(&mut self, json: &str, line: u64) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.take_payload(json, line, false);
        self.record(r)
    }

    /// Feeds one parsed payload (`line` names it in errors). A JSON string is a chunk of
    /// answer text; an object is read by the stream's dialect.
    ///
    /// # Errors
    /// As [`ProviderStream::write`].
    pub fn write_payload(&mut self, payload: &Value, line: u64) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.write_payload_inner(payload, line);
        self.record(r)
    }

    pub(super) fn write_payload_inner(
        &mut self,
        payload: &Value,
        line: u64,
    ) -> Result<(), ProviderError> {
        self.line = line;
        if let Value::String(text) = payload {
            return self.write_text_at(text, line);
        }
        if self.reader.is_none() {
            let dialect = match self.dialect {
                Some(d) => d,
                None => Dialect::detect(payload).ok_or_else(|| ProviderError::UnknownDialect {
                    line,
                    keys: keys_of(payload),
                })?,
            };
            self.dialect = Some(dialect);
            self.reader = Some(Reader::new(dialect));
        }
        self.read_events(|reader, out| reader.read(payload, line, out).map(|()| true))
            .map(drop)
    }

    /// Reads a payload with the stream's reader (made above) and applies its events; what
    /// `read` returns (see [`Reader::read_text`]).
    fn read_events(
        &mut self,
        read: impl FnOnce(&mut Reader, &mut Vec<ProviderEvent>) -> Result<bool, ProviderError>,
    ) -> Result<bool, ProviderError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut result = match self.reader.as_mut() {
            Some(reader) => read(reader, &mut scratch),
            None => Ok(true),
        };
        if matches!(result, Ok(true)) {
            for ev in scratch.drain(..) {
                if let Err(e) = self.apply(ev) {
                    result = Err(e);
                    break;
                }
            }
        }
        self.scratch = scratch;
        result
    }
}

/// The contents of `data` when it is a JSON string alone without escapes (JSON whitespace
/// around it allowed), borrowed: what `serde_json::from_str::<&str>` returns for it, found
/// without a parser. `None` for anything else (escapes, control characters, other values),
/// which the parser reads.
fn plain_json_string(data: &str) -> Option<&str> {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let b = data.as_bytes();
    // A byte test, not `trim_matches`: its pattern machinery was most of this function's cost.
    let open = b.iter().position(|c| !is_ws(c))?;
    let close = b.iter().rposition(|c| !is_ws(c))?;
    if close <= open || b[open] != b'"' || b[close] != b'"' {
        return None;
    }
    // Both ends are ASCII quotes, so character boundaries.
    let body = data.get(open + 1..close)?;
    is_plain(body.as_bytes()).then_some(body)
}

/// Appends the text of `data` to `out` when `data` is one JSON string (a `"` first, only JSON
/// whitespace after its closing quote) whose escapes are the short ones (`\" \\ \/ \b \f \n
/// \r \t`) or `\u` of a character outside the surrogates: the text `serde_json` reads from it,
/// without a parser or an allocation. `false`, with `out` as it was, for anything else (a
/// surrogate escape, a control character, a bad escape, an unclosed string, more after it),
/// which the parser reads or refuses.
fn append_json_string(data: &str, out: &mut String) -> bool {
    let before = out.len();
    let ok = append_json_string_or_part(data, out);
    if !ok {
        out.truncate(before);
    }
    ok
}

/// As [`append_json_string`], leaving part of the text in `out` when it returns `false`.
fn append_json_string_or_part(data: &str, out: &mut String) -> bool {
    let b = data.as_bytes();
    if b.first() != Some(&b'"') {
        return false;
    }
    // The start of the run of plain bytes not yet appended.
    let mut run = 1;
    let mut at = 1;
    loop {
        let Some(i) = special_at(b, at) else {
            return false;
        };
        // `i` and `run` are at ASCII bytes, so at character boundaries.
        out.push_str(&data[run..i]);
        match b[i] {
            b'"' => {
                return b[i + 1..]
                    .iter()
                    .all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'));
            }
            b'\\' => {
                let c = match b.get(i + 1) {
                    Some(b'"') => '"',
                    Some(b'\\') => '\\',
                    Some(b'/') => '/',
                    Some(b'b') => '\u{8}',
                    Some(b'f') => '\u{c}',
                    Some(b'n') => '\n',
                    Some(b'r') => '\r',
                    Some(b't') => '\t',
                    Some(b'u') => {
                        let Some(c) = b.get(i + 2..i + 6).and_then(hex4) else {
                            return false;
                        };
                        // A surrogate (half of a pair, or alone) is left to the parser.
                        let Some(c) = char::from_u32(c) else {
                            return false;
                        };
                        out.push(c);
                        at = i + 6;
                        run = at;
                        continue;
                    }
                    _ => return false,
                };
                out.push(c);
                at = i + 2;
                run = at;
            }
            // A control character, which JSON refuses unescaped.
            _ => return false,
        }
    }
}

/// Whether some byte of `b` is a quote, a backslash or a control character: whole words
/// (overlapping at the end), or for fewer than eight bytes two overlapping halves or three
/// single bytes, without a loop over the bytes or a copy (a token's text is a few bytes).
fn has_special(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    // Exact for "some byte" (what is asked), in the low `k` bytes of a word.
    let special = |w: u64| {
        let found = (w.wrapping_sub(ONES * 0x20) & !w & HIGH)
            | zero_byte(w ^ (ONES * u64::from(b'"')))
            | zero_byte(w ^ (ONES * u64::from(b'\\')));
        found != 0
    };
    let n = b.len();
    if n >= 8 {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let mut at = 0;
        while at + 8 < n {
            if special(word(at)) {
                return true;
            }
            at += 8;
        }
        return special(word(n - 8));
    }
    if n >= 4 {
        let half = |at: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[at..at + 4]);
            // The high half a plain byte, so that only these four bytes count.
            u64::from(u32::from_le_bytes(w)) | (ONES * u64::from(b'a')) << 32
        };
        return special(half(0)) || special(half(n - 4));
    }
    let bad = |c: u8| c == b'"' || c == b'\\' || c < 0x20;
    n > 0 && (bad(b[0]) || bad(b[n / 2]) || bad(b[n - 1]))
}

/// The value of four hexadecimal digits (either case).
fn hex4(d: &[u8]) -> Option<u32> {
    d.iter().try_fold(0u32, |n, &c| {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        Some(n << 4 | u32::from(v))
    })
}

/// Whether no byte of `b` is a control character, a quote or a backslash (what a JSON
/// string's body holds without escapes), tested eight bytes at a time: a token's text is a
/// word or two, and a test per byte was a tenth of `citeflow render`'s CPU time.
fn is_plain(b: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Some byte of `w` is zero / below 0x20 (exact for "some", which is all that is asked).
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH != 0;
    let has_below_space = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
    let bad =
        |w: u64| has_below_space(w) | has_zero(w ^ (ONES * 0x22)) | has_zero(w ^ (ONES * 0x5c));
    let mut chunks = b.chunks_exact(8);
    let mut plain = true;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        plain &= !bad(u64::from_ne_bytes(w));
    }
    // The rest padded with a plain byte.
    let mut w = [b'a'; 8];
    w[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    plain & !bad(u64::from_ne_bytes(w))
}

#[cfg(test)]
mod tests {
    use super::{append_json_string, has_special, plain_json_string};
    use proptest::prelude::*;

    /// What `append_json_string` appends, checked against serde_json: when it reads `data`,
    /// the text is serde_json's, and the text before it is kept; when it does not, nothing
    /// is appended.
    fn read(data: &str) -> Option<String> {
        let mut out = String::from("before|");
        let ok = append_json_string(data, &mut out);
        if !ok {
            assert_eq!(out, "before|", "{data:?}");
            return None;
        }
        let text = out.strip_prefix("before|").expect("kept").to_owned();
        assert_eq!(
            Some(&text),
            serde_json::from_str::<String>(data).ok().as_ref(),
            "{data:?}"
        );
        Some(text)
    }

    #[test]
    fn json_strings_read_in_place_as_serde_json_reads_them() {
        let read_here = [
            r#""""#,
            r#"" the""#,
            "\"a b\" \t\r\n",
            r#""é 😀 【1】""#,
            r#""a\"b""#,
            r#""a\\""#,
            r#""\/\b\f\n\r\t""#,
            r#""\u00e9\u00E9\u0000\u001f\uffff\u20ac""#,
            r#""x\u0041y\n""#,
            r#"".\n\n""#,
            "\"\u{7f}\"",
        ];
        for data in read_here {
            assert!(read(data).is_some(), "{data:?}");
        }
        // Left to the parser (which reads or refuses them): surrogates, bad escapes, control
        // characters, an unclosed string, more after it, leading blanks, not a string.
        let left = [
            r#""\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\u12""#,
            r#""\u12g4""#,
            r#""\x""#,
            r#""\""#,
            "\"a\u{1}\"",
            "\"a\nb\"",
            r#""abc"#,
            r#"""#,
            r#""a" "b""#,
            r#""a"x"#,
            r#" "a""#,
            r#"{"a":"b"}"#,
            "1",
            "",
        ];
        for data in left {
            assert_eq!(read(data), None, "{data:?}");
        }
    }

    #[test]
    fn special_bytes_are_found_at_every_place() {
        for len in 0..40 {
            for at in 0..len {
                for bad in [b'"', b'\\', 0, 0x1f, b'\n'] {
                    let mut b = vec![b'x'; len];
                    b[at] = bad;
                    assert!(has_special(&b), "{b:?}");
                }
                for fine in [b' ', b'~', 0x7f, 0x80, 0xff, b'a'] {
                    let mut b = vec![b'x'; len];
                    b[at] = fine;
                    assert!(!has_special(&b), "{b:?}");
                }
            }
        }
        assert!(!has_special(b""));
    }

    proptest! {
        /// Any text, written as serde_json writes it or with every character a `\u` escape,
        /// reads back as itself (or is left to the parser: astral characters as surrogates).
        #[test]
        fn prop_json_strings_read_back(text in any::<String>(), spaces in "[ \t\r\n]{0,3}") {
            let written = serde_json::to_string(&text).unwrap() + &spaces;
            prop_assert_eq!(read(&written), Some(text.clone()));
            let mut escaped = String::from("\"");
            for u in text.encode_utf16() {
                escaped.push_str(&format!("\\u{u:04x}"));
            }
            escaped.push('"');
            let astral = text.chars().any(|c| c.len_utf16() == 2);
            prop_assert_eq!(read(&escaped), (!astral).then_some(text));
        }
    }

    #[test]
    fn plain_json_strings_read_as_serde_json_reads_them() {
        let cases = [
            r#""""#,
            r#"" the""#,
            r#"  "a b" "#,
            "\t\"x\"\r\n",
            r#""é 😀 【1】""#,
            "\"\u{7f}\"",
            // Left to the parser: escapes, control characters, not one string, not JSON.
            r#""a\"b""#,
            r#""a\\""#,
            r#""\u00e9""#,
            "\"a\u{1}\"",
            "\"a\nb\"",
            r#""a" "b""#,
            r#""a"x"#,
            r#"x"a""#,
            r#"""#,
            r#""abc"#,
            "",
            "  ",
            "1",
            r#"{"a":"b"}"#,
            "\u{a0}\"a\"",
            r#""a"""#,
        ];
        // Each byte that needs the parser, at every place of bodies around eight bytes long.
        let mut cut: Vec<String> = Vec::new();
        for bad in ['\u{0}', '\u{1f}', '"', '\\', '\n'] {
            for len in [1, 7, 8, 9, 15, 16, 17, 24] {
                for at in 0..len {
                    let body: String = (0..len).map(|i| if i == at { bad } else { 'x' }).collect();
                    cut.push(format!("\"{body}\""));
                }
            }
        }
        let plain: Vec<String> = (0..20)
            .map(|len| format!("\"{}\"", "é x~\u{7f}".repeat(len)))
            .collect();
        for data in cases
            .iter()
            .copied()
            .chain(cut.iter().map(String::as_str))
            .chain(plain.iter().map(String::as_str))
        {
            let fast = plain_json_string(data);
            let serde = serde_json::from_str::<&str>(data).ok();
            if let Some(text) = fast {
                assert_eq!(Some(text), serde, "{data:?}");
            }
            let plain = serde.is_some() && !data.contains('\\');
            assert_eq!(fast.is_some(), plain, "{data:?}");
        }
    }
}
