//! Framing: bytes cut anywhere into JSON payloads, from SSE or one payload per line.

use std::collections::VecDeque;

use super::error::ProviderError;
use crate::sse::SseDecoder;

/// How payloads are framed in the byte stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Framing {
    /// Decided by the first non-blank line: SSE when it is an SSE field (`data:`, `event:`,
    /// `id:`, `retry:`) or comment (`:`), else JSONL.
    #[default]
    Auto,
    /// Server-Sent Events: each event's `data` is a payload; `data: [DONE]` is skipped.
    Sse,
    /// One JSON payload per line (blank lines skipped), as the recorded fixtures and
    /// `--input jsonl`.
    Jsonl,
    /// No payloads: the bytes are the answer text itself.
    Text,
}

impl Framing {
    /// The stable name: `auto`, `sse` or `jsonl`.
    pub fn name(self) -> &'static str {
        match self {
            Framing::Auto => "auto",
            Framing::Sse => "sse",
            Framing::Jsonl => "jsonl",
            Framing::Text => "text",
        }
    }
}

impl std::fmt::Display for Framing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Framing {
    type Err = crate::error::SettingsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Framing::Auto),
            "sse" | "openai-sse" | "openai_sse" => Ok(Framing::Sse),
            "jsonl" => Ok(Framing::Jsonl),
            "text" => Ok(Framing::Text),
            other => Err(crate::error::SettingsError::UnknownName {
                what: "framing",
                value: other.to_owned(),
                expected: &["auto", "sse", "jsonl", "text"],
            }),
        }
    }
}

/// One payload: the JSON text and the line of the stream where it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// The JSON text.
    pub data: String,
    /// 1-based line number where the payload ends.
    pub line: u64,
}

/// Decodes a byte stream cut anywhere (inside JSON, inside a UTF-8 character) into payloads.
///
/// # Call protocol
/// [`FrameDecoder::write`] each chunk, [`FrameDecoder::poll_payload`] until `None`;
/// [`FrameDecoder::end`] at the end.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    framing: Framing,
    max_line_bytes: usize,
    /// Bytes of the current line (JSONL, or Auto before the decision).
    line_buf: Vec<u8>,
    line: u64,
    sse: SseDecoder,
    ready: VecDeque<Payload>,
    /// The texts of a run of plain string lines, gathered by
    /// [`FrameDecoder::append_strings`] (kept for its capacity).
    run: Vec<u8>,
}

impl FrameDecoder {
    /// A decoder for `framing` that rejects lines longer than `max_line_bytes` (1 MiB is the
    /// usual choice: the largest recorded payload is under 64 KiB).
    pub fn new(framing: Framing, max_line_bytes: usize) -> Self {
        FrameDecoder {
            framing,
            max_line_bytes,
            line_buf: Vec::new(),
            line: 0,
            sse: SseDecoder::new(max_line_bytes),
            ready: VecDeque::new(),
            run: Vec::new(),
        }
    }

    /// The framing in use (`Auto` until the first non-blank line decided it).
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Feeds bytes.
    ///
    /// # Errors
    /// [`ProviderError::LineTooLong`], [`ProviderError::InvalidUtf8`] or
    /// [`ProviderError::Sse`]; payloads before the bad line stay available.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if self.framing == Framing::Text {
            return Ok(());
        }
        if self.framing == Framing::Sse {
            return self.write_sse(bytes);
        }
        let mut rest = bytes;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line_buf.extend_from_slice(&rest[..i]);
            let tail = &rest[i + 1..];
            let line = std::mem::take(&mut self.line_buf);
            self.take_line(line)?;
            if self.framing == Framing::Sse {
                return self.write_sse(tail);
            }
            rest = tail;
        }
        self.line_buf.extend_from_slice(rest);
        if self.line_buf.len() > self.max_line_bytes {
            return Err(ProviderError::LineTooLong {
                line: self.line + 1,
                max_line_bytes: self.max_line_bytes,
            });
        }
        Ok(())
    }

    fn write_sse(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.sse.write(bytes)?;
        self.take_sse();
        Ok(())
    }

    fn take_sse(&mut self) {
        while let Some((ev, line)) = self.sse.poll_event_at() {
            if ev.data.trim() == "[DONE]" || ev.data.trim().is_empty() {
                continue;
            }
            self.ready.push_back(Payload {
                data: ev.data,
                line,
            });
        }
    }

    /// A complete line while the framing is JSONL or undecided.
    fn take_line(&mut self, line: Vec<u8>) -> Result<(), ProviderError> {
        self.line += 1;
        if line.len() > self.max_line_bytes {
            return Err(ProviderError::LineTooLong {
                line: self.line,
                max_line_bytes: self.max_line_bytes,
            });
        }
        let trimmed = line.strip_suffix(b"\r").unwrap_or(&line);
        if trimmed.iter().all(u8::is_ascii_whitespace) {
            if self.framing == Framing::Auto {
                // Blank lines before the first payload decide nothing; keep them for SSE.
                return Ok(());
            }
            return Ok(());
        }
        if self.framing == Framing::Auto {
            let sse_field = [&b"data:"[..], b"event:", b"id:", b"retry:", b":"]
                .iter()
                .any(|p| trimmed.starts_with(p));
            if sse_field {
                self.framing = Framing::Sse;
                let mut l = line;
                l.push(b'\n');
                // The SSE decoder counts lines itself; start it where we are.
                self.sse = SseDecoder::new(self.max_line_bytes);
                for _ in 1..self.line {
                    self.sse.write(b"\n")?;
                }
                self.sse.write(&l)?;
                self.take_sse();
                return Ok(());
            }
            self.framing = Framing::Jsonl;
        }
        let data = std::str::from_utf8(trimmed)
            .map_err(|_| ProviderError::InvalidUtf8 { line: self.line })?;
        self.ready.push_back(Payload {
            data: data.to_owned(),
            line: self.line,
        });
        Ok(())
    }

    /// [`FrameDecoder::write_jsonl_into`] without `strings`: every line given to `each`.
    #[cfg(test)]
    pub(crate) fn write_jsonl_with(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(&str, u64, Plain) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        self.write_jsonl_into(bytes, None, |_, data, line, plain| each(data, line, plain))
    }

    /// Feeds bytes of a stream whose framing is decided as JSONL, calling `each` with every
    /// complete non-blank line in order (its text without the `\r`, its 1-based number, and
    /// whether it is [plain](Plain)) instead of queueing it as a [`Payload`]: the lines are
    /// borrowed from `bytes` (a line cut by a chunk boundary from the held partial line), and
    /// the UTF-8 of a run of whole lines is checked once. Lines, numbers and errors are those
    /// of [`FrameDecoder::write`] then [`FrameDecoder::poll_payload`]; the first error (of
    /// framing, or of `each`) stops.
    ///
    /// With `strings` given, the text of each run of consecutive [plain](Plain::String)
    /// string lines (the common line: a chunk of text) is appended to it here, in one loop,
    /// and `each` is called once for the run with [`Plain::Appended`] (no text, the number of
    /// the run's last line, the bytes appended) instead of once a line; `each` gets `strings`
    /// for every call, to use it for the other lines.
    pub(crate) fn write_jsonl_into(
        &mut self,
        bytes: &[u8],
        mut strings: Option<&mut String>,
        mut each: impl FnMut(Option<&mut String>, &str, u64, Plain) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        debug_assert_eq!(self.framing, Framing::Jsonl);
        let mut rest = bytes;
        if !self.line_buf.is_empty() {
            let Some(i) = memchr::memchr(b'\n', rest) else {
                return self.hold_partial(rest);
            };
            self.line_buf.extend_from_slice(&rest[..i]);
            rest = &rest[i + 1..];
            let line = std::mem::take(&mut self.line_buf);
            let r = self.jsonl_line(&line, &mut |data, n| {
                each(strings.as_deref_mut(), data, n, Plain::Unknown)
            });
            // The buffer is kept for the next partial line.
            self.line_buf = line;
            self.line_buf.clear();
            r?;
        }
        let whole = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
        let (lines, tail) = rest.split_at(whole);
        match std::str::from_utf8(lines) {
            Ok(text) => {
                let mut at = 0;
                loop {
                    // The common line, a JSON string without escapes (a chunk of text): its
                    // end found with its closing quote, in one pass.
                    if lines.get(at) == Some(&b'"') {
                        if let Some(q) = special_at(lines, at + 1) {
                            if lines[q] == b'"' && lines.get(q + 1) == Some(&b'\n') {
                                if let Some(out) = strings.as_deref_mut() {
                                    let (from, before) = (at, out.len());
                                    let r = self.append_strings(lines, &mut at, q, out);
                                    if at > from {
                                        // The run's last line (before a line too long).
                                        let last = self.line - u64::from(r.is_err());
                                        let appended = Plain::Appended(out.len() - before);
                                        each(Some(&mut *out), "", last, appended)?;
                                    }
                                    r?;
                                    continue;
                                }
                                self.line += 1;
                                if q + 1 - at > self.max_line_bytes {
                                    return Err(self.too_long());
                                }
                                // `at` and `q + 1` are at ASCII bytes.
                                each(None, &text[at..=q], self.line, Plain::String)?;
                                at = q + 2;
                                continue;
                            }
                        }
                    }
                    let Some(nl) = next_newline(lines, at) else {
                        break;
                    };
                    self.line += 1;
                    if nl - at > self.max_line_bytes {
                        return Err(self.too_long());
                    }
                    // Without its `\r` (a byte test: `strip_suffix`'s pattern cost more).
                    let end = if nl > at && lines[nl - 1] == b'\r' {
                        nl - 1
                    } else {
                        nl
                    };
                    // `at` and `end` are at ASCII bytes, so at character boundaries.
                    let line = &text[at..end];
                    at = nl + 1;
                    // A payload's first byte is not blank: the test ends there.
                    if !line.bytes().all(|b| b.is_ascii_whitespace()) {
                        each(strings.as_deref_mut(), line, self.line, Plain::Unknown)?;
                    }
                }
            }
            // Some line is not UTF-8: line by line, to name it after the lines before it.
            Err(_) => {
                for line in lines[..lines.len().saturating_sub(1)].split(|b| *b == b'\n') {
                    self.jsonl_line(line, &mut |data, n| {
                        each(strings.as_deref_mut(), data, n, Plain::Unknown)
                    })?;
                }
            }
        }
        self.hold_partial(tail)
    }

    /// Appends to `out` the text of the plain string line at `*at` (its closing quote at
    /// `q`, a `\n` after it) and of the plain string lines right after it, counting them and
    /// moving `*at` past each; stops at a line too long (counted, not appended, its error).
    ///
    /// The texts are gathered in `self.run` (bytes) and appended to `out` a few KiB at a time
    /// (checked as UTF-8 there, once). A line's text is found and copied in one pass, eight
    /// bytes at a time ([`copy_to_special`]): each word is copied whole, and the vector cut
    /// back where the text ends; a line that turns out not to be a plain string is cut off
    /// again. The first line's text (already found) is copied as the [`WIDE_COPY`] bytes from
    /// its start when it is that short.
    fn append_strings(
        &mut self,
        lines: &[u8],
        at: &mut usize,
        q: usize,
        out: &mut String,
    ) -> Result<(), ProviderError> {
        let mut run = std::mem::take(&mut self.run);
        run.clear();
        // Counted here, stored once.
        let mut line = self.line;
        // The line's opening quote and its text's length; its text is in `run` from `before`.
        let mut open = *at;
        let mut len = q - open - 1;
        let mut before = 0;
        let body = &lines[open + 1..];
        match body.get(..WIDE_COPY) {
            Some(wide) if len <= WIDE_COPY => {
                run.extend_from_slice(wide);
                run.truncate(len);
            }
            _ => run.extend_from_slice(&body[..len]),
        }
        let r = loop {
            line += 1;
            if len + 2 > self.max_line_bytes {
                run.truncate(before);
                break Err(());
            }
            if run.len() >= RUN_FLUSH_BYTES {
                push_run(&mut run, out, line)?;
            }
            // The next line, after `"\n`: a plain string line too?
            let next = open + len + 3;
            if lines.get(next) != Some(&b'"') {
                break Ok(());
            }
            before = run.len();
            let end = match copy_to_special(lines, next + 1, &mut run) {
                Some(end) => end,
                None => {
                    // Less than a word before the block's end: byte by byte.
                    run.truncate(before);
                    match special_at(lines, next + 1) {
                        Some(end) => {
                            run.extend_from_slice(&lines[next + 1..end]);
                            end
                        }
                        None => break Ok(()),
                    }
                }
            };
            if lines[end] != b'"' || lines.get(end + 1) != Some(&b'\n') {
                run.truncate(before);
                break Ok(());
            }
            open = next;
            len = end - next - 1;
        };
        self.line = line;
        // Past the last line appended, or at the line too long.
        *at = if r.is_ok() { open + len + 3 } else { open };
        let pushed = push_run(&mut run, out, line);
        self.run = run;
        pushed?;
        r.map_err(|()| self.too_long())
    }

    /// A complete JSONL line (without its `\n`), checked as [`FrameDecoder::take_line`] does.
    fn jsonl_line(
        &mut self,
        line: &[u8],
        each: &mut dyn FnMut(&str, u64) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        self.line += 1;
        if line.len() > self.max_line_bytes {
            return Err(self.too_long());
        }
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        if trimmed.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let data = std::str::from_utf8(trimmed)
            .map_err(|_| ProviderError::InvalidUtf8 { line: self.line })?;
        each(data, self.line)
    }

    /// Keeps the start of a line whose end has not come, refusing it when it is too long.
    fn hold_partial(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.line_buf.extend_from_slice(bytes);
        if self.line_buf.len() > self.max_line_bytes {
            return Err(ProviderError::LineTooLong {
                line: self.line + 1,
                max_line_bytes: self.max_line_bytes,
            });
        }
        Ok(())
    }

    fn too_long(&self) -> ProviderError {
        ProviderError::LineTooLong {
            line: self.line,
            max_line_bytes: self.max_line_bytes,
        }
    }

    /// Ends the stream: a last line without its newline is taken.
    ///
    /// # Errors
    /// As [`FrameDecoder::write`].
    pub fn end(&mut self) -> Result<(), ProviderError> {
        if self.framing == Framing::Sse {
            self.sse.end()?;
            self.take_sse();
            return Ok(());
        }
        if !self.line_buf.is_empty() {
            let line = std::mem::take(&mut self.line_buf);
            self.take_line(line)?;
            if self.framing == Framing::Sse {
                self.sse.end()?;
                self.take_sse();
            }
        }
        Ok(())
    }

    /// The next complete payload.
    pub fn poll_payload(&mut self) -> Option<Payload> {
        self.ready.pop_front()
    }
}

/// What [`FrameDecoder::write_jsonl_with`] knows of a line it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plain {
    /// The line is one JSON string whose body has no quote, backslash or control character
    /// (its text is the line without its first and last byte).
    String,
    /// Not looked at.
    Unknown,
    /// A run of plain string lines whose text [`FrameDecoder::write_jsonl_into`] appended
    /// itself: this many bytes (none for lines of `""`).
    Appended(usize),
}

/// The index of the first byte of `b` from `from` that is a quote, a backslash or a control
/// character (what ends a JSON string's plain run), eight bytes at a time.
pub(crate) fn special_at(b: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(word) = b.get(at..at + 8) {
        let found = special_mask(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b.get(at..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| at + p)
}

/// A mask with the high bit set in the byte of `w` (little-endian) that is the first quote,
/// backslash or control character, and possibly in bytes after it (the lowest set bit is
/// exact: a borrow runs only upwards).
#[inline]
fn special_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    (w.wrapping_sub(ONES * 0x20) & !w & HIGH)
        | zero_byte(w ^ (ONES * u64::from(b'"')))
        | zero_byte(w ^ (ONES * u64::from(b'\\')))
}

/// Copies to `run` the bytes of `b` from `from` up to the first quote, backslash or control
/// character, eight at a time (each word copied whole, then `run` cut back), and returns that
/// character's index; `None` when fewer than eight bytes are left before it is found (the
/// words copied stay in `run`).
#[inline]
fn copy_to_special(b: &[u8], from: usize, run: &mut Vec<u8>) -> Option<usize> {
    let mut at = from;
    while let Some(word) = b.get(at..at + 8) {
        run.extend_from_slice(word);
        let found = special_mask(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        if found != 0 {
            let k = (found.trailing_zeros() / 8) as usize;
            run.truncate(run.len() - 8 + k);
            return Some(at + k);
        }
        at += 8;
    }
    None
}

/// Moves the texts gathered in `run` to `out`. They are whole UTF-8 texts (each between two
/// ASCII quotes of a checked line), so the check cannot fail; were it to, the error names the
/// line rather than a panic.
fn push_run(run: &mut Vec<u8>, out: &mut String, line: u64) -> Result<(), ProviderError> {
    let text = std::str::from_utf8(run).map_err(|_| ProviderError::InvalidUtf8 { line })?;
    out.push_str(text);
    run.clear();
    Ok(())
}

/// The bytes [`FrameDecoder::append_strings`] copies at once for a short text.
const WIDE_COPY: usize = 16;

/// The bytes of texts [`FrameDecoder::append_strings`] gathers before appending them.
const RUN_FLUSH_BYTES: usize = 4096;

/// The index of the first `\n` in `bytes` from `from`: the first sixteen bytes a word at a
/// time (a line of text chunks is short: memchr's setup would cost more), then memchr.
fn next_newline(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = from;
    for _ in 0..2 {
        let Some(word) = bytes.get(at..at + 8) else {
            break;
        };
        let w =
            u64::from_le_bytes(word.try_into().expect("eight bytes")) ^ (ONES * u64::from(b'\n'));
        // The high bit of each zero byte of `w` (exact for the lowest one).
        let zero = w.wrapping_sub(ONES) & !w & HIGH;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr::memchr(b'\n', bytes.get(at..)?).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(framing: Framing, bytes: &[u8], cut: usize) -> Vec<Payload> {
        let mut d = FrameDecoder::new(framing, 1 << 20);
        d.write(&bytes[..cut]).unwrap();
        d.write(&bytes[cut..]).unwrap();
        d.end().unwrap();
        std::iter::from_fn(|| d.poll_payload()).collect()
    }

    #[test]
    fn auto_detects_sse_and_jsonl_cut_anywhere() {
        let sse = "event: x\ndata: {\"a\":\"é\"}\n\n: ping\n\ndata: [DONE]\n\n".as_bytes();
        let jsonl = "{\"a\":\"é\"}\n\n{\"b\":2}".as_bytes();
        for cut in 0..sse.len() {
            let p = all(Framing::Auto, sse, cut);
            assert_eq!(p.len(), 1, "cut {cut}");
            assert_eq!(p[0].data, "{\"a\":\"é\"}");
            assert_eq!(p[0].line, 2, "cut {cut}");
        }
        // Each SSE payload is numbered by its own last data line, however the stream is cut
        // (found by the provider fuzz target: a whole stream numbered every payload by its end).
        let two = b"data: 1\n\ndata: 2\n\n";
        for cut in 0..two.len() {
            let p = all(Framing::Sse, two, cut);
            let lines: Vec<u64> = p.iter().map(|p| p.line).collect();
            assert_eq!(lines, [1, 3], "cut {cut}");
        }
        for cut in 0..jsonl.len() {
            let p = all(Framing::Auto, jsonl, cut);
            assert_eq!(p.len(), 2, "cut {cut}");
            assert_eq!((p[1].data.as_str(), p[1].line), ("{\"b\":2}", 3));
        }
    }

    #[test]
    fn long_lines_are_refused_with_their_number() {
        let mut d = FrameDecoder::new(Framing::Jsonl, 4);
        let e = d.write(b"{}\n123456").unwrap_err();
        assert_eq!(e.to_string(), "line 2 is longer than 4 bytes");
    }
}
