//! An I/O-free Server-Sent Events decoder and the OpenAI chat-completion chunk fields that
//! carry the answer text. Shared by the CLI, the server and the bindings so that none of them
//! parses streams on its own.

/// One SSE event (`data:` lines joined with `\n`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The data.
    pub data: String,
}

/// A malformed SSE stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line longer than the limit.
    #[error("sse line {line} is longer than {max_line_bytes} bytes")]
    LineTooLong {
        /// 1-based line number.
        line: u64,
        /// The limit.
        max_line_bytes: usize,
    },
    /// A line that is not UTF-8.
    #[error("sse line {line} is not valid utf-8")]
    InvalidUtf8 {
        /// 1-based line number.
        line: u64,
    },
}

/// Decodes an SSE byte stream cut anywhere into events.
///
/// # Call protocol
/// [`SseDecoder::write`] each chunk, then [`SseDecoder::poll_event`] until `None`;
/// [`SseDecoder::end`] at the end of the stream dispatches a last unterminated event.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    /// The bytes of a line that a write left unfinished. Its allocation is kept from line to
    /// line; a line that comes whole within one write is read where it lies, never copied here.
    partial: Vec<u8>,
    line: u64,
    max_line_bytes: usize,
    current: SseEvent,
    has_data: bool,
    /// The line of the current event's last field.
    field_line: u64,
    /// Complete events with the line of their last field.
    ready: std::collections::VecDeque<(SseEvent, u64)>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new(1 << 20)
    }
}

impl SseDecoder {
    /// A decoder that rejects lines longer than `max_line_bytes`.
    ///
    /// ### Default
    /// 1 MiB.
    pub fn new(max_line_bytes: usize) -> Self {
        SseDecoder {
            partial: Vec::new(),
            line: 0,
            max_line_bytes,
            current: SseEvent::default(),
            has_data: false,
            field_line: 0,
            ready: Default::default(),
        }
    }

    /// Lines read so far.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Feeds bytes.
    ///
    /// # Errors
    /// [`SseError`] for an over-long or non-UTF-8 line; events before it stay available.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        let mut rest = bytes;
        if !self.partial.is_empty() {
            let Some(i) = line_end(rest) else {
                return self.keep_partial(rest);
            };
            // The line began in an earlier write: finished in the buffer, whose allocation
            // stays for the next unfinished line.
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..i]);
            let taken = self.take_line(&line);
            line.clear();
            self.partial = line;
            taken?;
            rest = &rest[i + 1..];
        }
        while let Some(i) = line_end(rest) {
            self.take_line(&rest[..i])?;
            rest = &rest[i + 1..];
        }
        self.keep_partial(rest)
    }

    /// Keeps the unfinished end of a line for the next write, within the line limit.
    fn keep_partial(&mut self, rest: &[u8]) -> Result<(), SseError> {
        self.partial.extend_from_slice(rest);
        if self.partial.len() > self.max_line_bytes {
            return Err(SseError::LineTooLong {
                line: self.line + 1,
                max_line_bytes: self.max_line_bytes,
            });
        }
        Ok(())
    }

    fn take_line(&mut self, line: &[u8]) -> Result<(), SseError> {
        self.line += 1;
        if line.len() > self.max_line_bytes {
            return Err(SseError::LineTooLong {
                line: self.line,
                max_line_bytes: self.max_line_bytes,
            });
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = utf8(line).ok_or(SseError::InvalidUtf8 { line: self.line })?;
        if line.is_empty() {
            if self.has_data || self.current.event.is_some() {
                self.ready
                    .push_back((std::mem::take(&mut self.current), self.field_line));
            } else {
                self.current = SseEvent::default();
            }
            self.has_data = false;
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        self.field_line = self.line;
        // Nearly every line is a `data:` one; its field ends at that first `:`.
        if let Some(value) = line.strip_prefix("data:") {
            self.push_data(value.strip_prefix(' ').unwrap_or(value));
            return Ok(());
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "data" => self.push_data(value),
            "id" => self.current.id = Some(value.to_owned()),
            "event" => self.current.event = Some(value.to_owned()),
            _ => {}
        }
        Ok(())
    }

    /// Adds a `data` line's value to the current event: its first is copied into a string of
    /// its own size, later ones follow a `\n`.
    fn push_data(&mut self, value: &str) {
        if self.has_data {
            self.current.data.push('\n');
            self.current.data.push_str(value);
        } else {
            self.current.data = value.to_owned();
            self.has_data = true;
        }
    }

    /// Ends the stream: a last event without its blank line is dispatched.
    ///
    /// # Errors
    /// As [`SseDecoder::write`].
    pub fn end(&mut self) -> Result<(), SseError> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.take_line(&line)?;
        }
        if self.has_data {
            self.ready
                .push_back((std::mem::take(&mut self.current), self.field_line));
            self.has_data = false;
        }
        Ok(())
    }

    /// The next complete event.
    pub fn poll_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front().map(|(e, _)| e)
    }

    /// The next complete event with the 1-based line of its last field (its last `data:` line,
    /// usually), the same however the stream was cut.
    pub fn poll_event_at(&mut self) -> Option<(SseEvent, u64)> {
        self.ready.pop_front()
    }
}

/// Where the line at the start of `rest` ends (the index of its `\n`): a blank line is seen at
/// once, any other is searched for.
fn line_end(rest: &[u8]) -> Option<usize> {
    match rest {
        [] => None,
        [b'\n', ..] => Some(0),
        [b'\r', b'\n', ..] => Some(1),
        _ => memchr::memchr(b'\n', rest),
    }
}

/// `bytes` as text if they are UTF-8. simdutf8 checks with the CPU's vector instructions where
/// it finds them at run time (and with the standard check elsewhere, wasm32 included): about a
/// third of the standard check's instructions on a 250-byte line.
fn utf8(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

/// The answer text of an OpenAI-style streamed chunk: `choices[0].delta.content` (chat) or
/// `choices[0].text` (completions). `None` when the chunk carries no text.
#[cfg(feature = "serde")]
pub fn chunk_text(payload: &serde_json::Value) -> Option<&str> {
    let choice = payload.get("choices")?.get(0)?;
    choice
        .get("delta")
        .and_then(|d| d.get("content"))
        .and_then(|c| c.as_str())
        .or_else(|| choice.get("text").and_then(|t| t.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_cut_anywhere_decode_the_same() {
        let stream = b"data: {\"a\":1}\r\n\r\n: ping\n\nid: 7\nevent: x\ndata: l1\ndata: l2\n\ndata: [DONE]\n\n";
        for cut in 0..stream.len() {
            let mut d = SseDecoder::default();
            d.write(&stream[..cut]).unwrap();
            d.write(&stream[cut..]).unwrap();
            d.end().unwrap();
            let evs: Vec<_> = std::iter::from_fn(|| d.poll_event()).collect();
            assert_eq!(evs.len(), 3, "cut {cut}");
            assert_eq!(evs[0].data, "{\"a\":1}");
            assert_eq!(evs[1].id.as_deref(), Some("7"));
            assert_eq!(evs[1].data, "l1\nl2");
            assert_eq!(evs[2].data, "[DONE]");
        }
    }

    #[test]
    fn a_line_longer_than_the_limit_is_rejected_however_it_is_cut() {
        let stream = b"data: 1\n\ndata: 123456789\n";
        for cut in 0..stream.len() {
            let mut d = SseDecoder::new(8);
            let e = d
                .write(&stream[..cut])
                .and_then(|()| d.write(&stream[cut..]))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "sse line 3 is longer than 8 bytes",
                "cut {cut}"
            );
            assert_eq!(d.poll_event().map(|e| e.data).as_deref(), Some("1"));
        }
    }

    #[test]
    fn the_buffer_of_a_line_cut_across_writes_is_reused() {
        let mut d = SseDecoder::default();
        d.write(b"data: first half").unwrap();
        d.write(b" and the rest\n\ndata: next").unwrap();
        assert_eq!(d.partial, b"data: next");
        // The allocation that held the whole first line, not a new one for these 10 bytes.
        assert!(d.partial.capacity() >= b"data: first half and the rest".len());
        assert_eq!(
            d.poll_event().map(|e| e.data).as_deref(),
            Some("first half and the rest")
        );
    }

    #[test]
    fn long_lines_are_rejected_with_their_number() {
        let mut d = SseDecoder::new(8);
        let e = d.write(b"data: 1\n\ndata: 123456789").unwrap_err();
        assert_eq!(e.to_string(), "sse line 3 is longer than 8 bytes");
    }

    /// The SSE rules read line by line over the whole input, apart from the decoder: its events
    /// with the line of their last field, and the error that stopped it.
    fn oracle(input: &[u8], max_line_bytes: usize) -> (Vec<(SseEvent, u64)>, Option<SseError>) {
        let mut out = Vec::new();
        let mut current = SseEvent::default();
        let (mut has_data, mut field_line) = (false, 0);
        let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        let unterminated = lines.pop().filter(|l| !l.is_empty());
        for (i, raw) in lines.iter().chain(&unterminated).enumerate() {
            let number = i as u64 + 1;
            if raw.len() > max_line_bytes {
                let e = SseError::LineTooLong {
                    line: number,
                    max_line_bytes,
                };
                return (out, Some(e));
            }
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let Ok(line) = std::str::from_utf8(raw) else {
                return (out, Some(SseError::InvalidUtf8 { line: number }));
            };
            if line.is_empty() {
                if has_data || current.event.is_some() {
                    out.push((std::mem::take(&mut current), field_line));
                }
                current = SseEvent::default();
                has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            field_line = number;
            match field {
                "data" if has_data => current.data = format!("{}\n{value}", current.data),
                "data" => (current.data, has_data) = (value.to_owned(), true),
                "id" => current.id = Some(value.to_owned()),
                "event" => current.event = Some(value.to_owned()),
                _ => {}
            }
        }
        if has_data {
            out.push((current, field_line));
        }
        (out, None)
    }

    /// Feeds `pieces` then ends, stopping at the first error; what came out.
    fn decode<'a>(
        pieces: impl IntoIterator<Item = &'a [u8]>,
        max_line_bytes: usize,
    ) -> (Vec<(SseEvent, u64)>, Option<SseError>) {
        let mut d = SseDecoder::new(max_line_bytes);
        let mut error = None;
        for piece in pieces {
            if let Err(e) = d.write(piece) {
                error = Some(e);
                break;
            }
        }
        if error.is_none() {
            error = d.end().err();
        }
        (std::iter::from_fn(|| d.poll_event_at()).collect(), error)
    }

    /// Lines of a stream: fields known and unknown, comments, blank lines, `\r\n` and `\n`,
    /// multi-byte characters, a byte that is not UTF-8.
    const LINES: &[&[u8]] = &[
        b"data: {\"a\":1}",
        b"data:x",
        b"data",
        b"data:  two spaces",
        b"data: h\xc3\xa9 \xe5\x90\x8d\xe5\x89\x8d \xf0\x9f\x98\x80",
        b"id: 7",
        b"id",
        b"event: delta",
        b"event:",
        b": ping",
        b":",
        b"retry: 10",
        b"no colon",
        b"",
        b"",
        b"data: bad \xff byte",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512, ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any stream cut anywhere (inside `\r\n`, inside a UTF-8 character, several times in
        /// one line) gives the events, lines and error of the stream read whole, and both those
        /// of the rules read line by line.
        #[test]
        fn prop_any_chunking_decodes_as_the_whole_stream(
            lines in proptest::collection::vec(
                (0..LINES.len(), proptest::bool::ANY), 0..24),
            unterminated in proptest::bool::ANY,
            cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..12),
            max_line_bytes in proptest::prop_oneof![8usize..40, proptest::strategy::Just(1 << 20)],
        ) {
            let mut stream = Vec::new();
            for (i, crlf) in &lines {
                stream.extend_from_slice(LINES[*i]);
                stream.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
            }
            if unterminated && !stream.is_empty() {
                stream.pop();
            }
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
            at.sort_unstable();
            let pieces = std::iter::once(0)
                .chain(at.iter().copied())
                .zip(at.iter().copied().chain(std::iter::once(stream.len())))
                .map(|(a, b)| &stream[a..b]);
            let whole = decode([stream.as_slice()], max_line_bytes);
            proptest::prop_assert_eq!(&decode(pieces, max_line_bytes), &whole, "cuts {:?}", at);
            let bytes = decode(stream.chunks(1), max_line_bytes);
            proptest::prop_assert_eq!(&bytes, &whole);
            proptest::prop_assert_eq!(&oracle(&stream, max_line_bytes), &whole);
        }
    }
}
