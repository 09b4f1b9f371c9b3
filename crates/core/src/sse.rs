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
    buf: Vec<u8>,
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
            buf: Vec::new(),
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
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.buf.extend_from_slice(&rest[..i]);
            rest = &rest[i + 1..];
            let line = std::mem::take(&mut self.buf);
            self.take_line(&line)?;
        }
        self.buf.extend_from_slice(rest);
        if self.buf.len() > self.max_line_bytes {
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
        let line =
            std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8 { line: self.line })?;
        if line.is_empty() {
            if self.has_data || self.current.event.is_some() {
                self.ready
                    .push_back((std::mem::take(&mut self.current), self.field_line));
            }
            self.current = SseEvent::default();
            self.has_data = false;
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        self.field_line = self.line;
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "id" => self.current.id = Some(value.to_owned()),
            "event" => self.current.event = Some(value.to_owned()),
            _ => {}
        }
        Ok(())
    }

    /// Ends the stream: a last event without its blank line is dispatched.
    ///
    /// # Errors
    /// As [`SseDecoder::write`].
    pub fn end(&mut self) -> Result<(), SseError> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
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
    fn long_lines_are_rejected_with_their_number() {
        let mut d = SseDecoder::new(8);
        let e = d.write(b"data: 1\n\ndata: 123456789").unwrap_err();
        assert_eq!(e.to_string(), "sse line 3 is longer than 8 bytes");
    }
}
