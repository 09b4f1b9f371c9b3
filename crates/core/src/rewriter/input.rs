//! The call protocol: text and bytes in ([`Rewriter::write`], [`Rewriter::write_str`], sequenced
//! and positioned writes), [`Rewriter::end`], and events out ([`Rewriter::poll_event`]).

use super::{count_units, Accepted, Phase, Rewriter};
use crate::error::RewriteError;
use crate::event::Event;
use crate::style::Style;

impl Rewriter {
    /// Feeds the next chunk of the answer. Bytes may cut a UTF-8 character or a marker anywhere.
    ///
    /// # Errors
    /// [`RewriteError::InvalidUtf8`] under [`InvalidUtf8::Error`](crate::InvalidUtf8::Error)
    /// (the valid text before it is still processed), [`RewriteError::Ended`] after
    /// [`Rewriter::end`], [`RewriteError::Failed`] after a fatal error.
    pub fn write(&mut self, chunk: impl AsRef<[u8]>) -> Result<(), RewriteError> {
        self.check_open()?;
        let bytes = chunk.as_ref();
        if self.is_idle() {
            if let Ok(text) = std::str::from_utf8(bytes) {
                self.write_idle(text);
                return Ok(());
            }
        }
        self.write_bytes(bytes)
    }

    /// Feeds the next chunk of the answer as text: [`Rewriter::write`] without checking
    /// UTF-8 again (a `&str` is valid). A character cut at the end of an earlier byte chunk
    /// is completed by it as by `write`.
    ///
    /// # Errors
    /// As [`Rewriter::write`].
    pub fn write_str(&mut self, text: &str) -> Result<(), RewriteError> {
        self.check_open()?;
        if self.is_idle() {
            self.write_idle(text);
            return Ok(());
        }
        if self.st.decoder.held_bytes() == 0 {
            // No character waits for its end: the text goes onto the scanner's buffer as it
            // is (what the decoder does with valid UTF-8, without checking it again).
            let st = &mut self.st;
            st.scanner.buf_mut().push_str(text);
            st.input_bytes += text.len() as u64;
            st.text.reserve(text.len());
            self.pump(false);
            return Ok(());
        }
        self.write_bytes(text.as_bytes())
    }

    /// [`Rewriter::write_str`] that hands back a chunk that comes out unchanged at once
    /// instead of queueing it: the fast path of a binding that returns the text of each
    /// chunk (and can return the chunk it was given).
    ///
    /// Returns `Ok(true)` when the chunk is short plain text (not empty, no byte that could
    /// start a marker), nothing is held back or waiting to be polled, and the style leaves
    /// text as it is: the output continues with exactly `text`, which counts as polled (the offsets of
    /// later events include it), and nothing is queued. Returns `Ok(false)` when the chunk
    /// was written as by `write_str`; poll its events as usual.
    ///
    /// ```
    /// use citeflow_core::{Numbering, Rewriter, Settings, Source, Sources};
    /// let sources = Sources::from_vec(vec![Source::new("source_3")]).unwrap();
    /// let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
    /// let mut text = String::new();
    /// for chunk in ["Paris", " is", " [[source_3]]", "."] {
    ///     if rw.write_through(chunk)? {
    ///         text.push_str(chunk);
    ///     } else {
    ///         while rw.poll_event_into(&mut text).is_some() {}
    ///     }
    /// }
    /// assert_eq!(text, "Paris is [1].");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Rewriter::write`].
    #[inline]
    pub fn write_through(&mut self, text: &str) -> Result<bool, RewriteError> {
        self.check_open()?;
        let st = &mut self.st;
        if !text.is_empty()
            && st.text.is_empty()
            && st.events.is_empty()
            && st.awaiting.is_none()
            && st.decoder.held_bytes() == 0
            && !matches!(st.settings.style(), Style::Remove)
            && st.claims.is_none()
            && st.scanner.skip_plain(text, &self.cfg)
        {
            // What `write` and `poll_event_into` together count for this text.
            let n = text.len() as u64;
            st.input_bytes += n;
            st.flushed_bytes += n;
            let (chars, utf16) = count_units(text);
            st.flushed_chars += chars;
            st.flushed_utf16 += utf16;
            return Ok(true);
        }
        self.write_str(text).map(|()| false)
    }

    /// Whether new text can be scanned where it is: nothing buffered or held, no number
    /// awaited.
    #[inline]
    pub(super) fn is_idle(&self) -> bool {
        let st = &self.st;
        !st.scanner.has_buffered() && st.decoder.held_bytes() == 0 && st.awaiting.is_none()
    }

    /// The fast path of `write`: scans the chunk where it is; only a held-back tail is copied.
    #[inline]
    pub(super) fn write_idle(&mut self, text: &str) {
        let st = &mut self.st;
        st.input_bytes += text.len() as u64;
        if st.scanner.pass_plain(text, &self.cfg, &mut st.text) {
            return;
        }
        st.text.reserve(text.len());
        self.scan(text, false);
        self.st.scanner.retain(text);
    }

    /// The general path of `write`: decodes onto the scanner's buffer and scans it.
    pub(super) fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), RewriteError> {
        let st = &mut self.st;
        let r = st.decoder.decode(
            bytes,
            st.input_bytes,
            st.settings.invalid_utf8(),
            st.scanner.buf_mut(),
        );
        st.input_bytes += bytes.len() as u64;
        st.text.reserve(bytes.len());
        self.pump(false);
        match r {
            Ok(()) => Ok(()),
            Err(at) => Err(self.fail(RewriteError::InvalidUtf8 { byte_offset: at })),
        }
    }

    /// Feeds chunk number `seq` (from 0). A chunk already seen is ignored.
    ///
    /// # Errors
    /// [`RewriteError::Gap`] when `seq` skips a chunk (nothing changes; send the missing one),
    /// else as [`Rewriter::write`].
    pub fn write_seq(
        &mut self,
        seq: u64,
        chunk: impl AsRef<[u8]>,
    ) -> Result<Accepted, RewriteError> {
        self.check_open()?;
        if seq < self.st.next_seq {
            return Ok(Accepted::Duplicate);
        }
        if seq > self.st.next_seq {
            return Err(RewriteError::Gap {
                unit: "sequence",
                expected: self.st.next_seq,
                got: seq,
            });
        }
        self.write(chunk)?;
        self.st.next_seq += 1;
        Ok(Accepted::New)
    }

    /// Feeds a chunk that starts at raw input byte `byte_offset`. Bytes already seen are
    /// ignored; only the new tail of an overlapping chunk is processed.
    ///
    /// # Errors
    /// [`RewriteError::Gap`] when the chunk starts after the input so far (nothing changes),
    /// else as [`Rewriter::write`].
    pub fn write_at(
        &mut self,
        byte_offset: u64,
        chunk: impl AsRef<[u8]>,
    ) -> Result<Accepted, RewriteError> {
        self.check_open()?;
        let bytes = chunk.as_ref();
        let have = self.st.input_bytes;
        if byte_offset > have {
            return Err(RewriteError::Gap {
                unit: "byte offset",
                expected: have,
                got: byte_offset,
            });
        }
        let end = byte_offset + bytes.len() as u64;
        if end <= have {
            return Ok(Accepted::Duplicate);
        }
        self.write(&bytes[(have - byte_offset) as usize..])?;
        Ok(Accepted::New)
    }

    /// Ends the input: the held-back tail is decided and [`Event::Done`] is queued (after the
    /// awaited number, if one is awaited).
    ///
    /// # Errors
    /// [`RewriteError::InvalidUtf8`] for a truncated character under the error policy,
    /// [`RewriteError::Verification`] if the final check fails (the `Done` event is still
    /// queued, with `verified: false`), [`RewriteError::Ended`] when called twice.
    pub fn end(&mut self) -> Result<(), RewriteError> {
        self.check_open()?;
        self.st.phase = Phase::Ending;
        let st = &mut self.st;
        if let Err(at) = st.decoder.finish(
            st.input_bytes,
            st.settings.invalid_utf8(),
            st.scanner.buf_mut(),
        ) {
            self.pump(true);
            return Err(self.fail(RewriteError::InvalidUtf8 { byte_offset: at }));
        }
        self.pump(true);
        if self.st.awaiting.is_some() {
            return Ok(());
        }
        self.finish_stream()
    }

    /// The next event, or `None` when the rewriter needs more input (or an awaited number).
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        if !self.st.events.is_empty() {
            return self.st.events.pop_front();
        }
        if self.st.text.is_empty() {
            return None;
        }
        let text = self.take_text();
        if text.is_empty() {
            return None;
        }
        self.note_output(&text);
        Some(Event::Text { text })
    }

    /// The next event that is not text, with the rendered text before it appended to `text`
    /// instead of returned as [`Event::Text`]: the text path then allocates nothing (as
    /// quinn-proto's `poll_transmit` writes into the caller's buffer). `None` when nothing
    /// else is ready; text may still have been appended. Everything appended before an event
    /// comes before it in the stream, so a caller that writes `text` out before handling the
    /// event sees exactly what [`Rewriter::poll_event`] gives.
    ///
    /// ```
    /// use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
    /// let sources = Sources::from_vec(vec![Source::new("source_3")]).unwrap();
    /// let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
    /// let mut text = String::new();
    /// rw.write("Paris [[source_3]].").unwrap();
    /// rw.end().unwrap();
    /// let mut events = 0;
    /// while let Some(event) = rw.poll_event_into(&mut text) {
    ///     events += usize::from(!matches!(event, Event::Done { .. }));
    /// }
    /// assert_eq!(text, "Paris [1].");
    /// assert_eq!(events, 2); // Source, Citation
    /// ```
    #[inline]
    pub fn poll_event_into(&mut self, text: &mut String) -> Option<Event> {
        while let Some(event) = self.st.events.pop_front() {
            match event {
                Event::Text { text: t } => text.push_str(&t),
                other => return Some(other),
            }
        }
        if !self.st.text.is_empty() {
            if self.is_remove() || self.st.claims.is_some() {
                let t = self.take_text();
                text.push_str(&t);
                self.note_output(&t);
                return self.st.events.pop_front();
            } else {
                let t = &self.st.text;
                self.st.flushed_bytes += t.len() as u64;
                let (chars, utf16) = count_units(t);
                self.st.flushed_chars += chars;
                self.st.flushed_utf16 += utf16;
                text.push_str(t);
                if self.st.text.capacity() > 8192 {
                    // A large chunk went through: give the memory back (an idle stream keeps
                    // little), a small buffer is kept for the next chunk.
                    self.st.text = String::new();
                } else {
                    self.st.text.clear();
                }
            }
        }
        None
    }

    pub(super) fn flush_text(&mut self) {
        if !self.st.text.is_empty() {
            let text = self.take_text();
            if !text.is_empty() {
                // Anchors of the sentences this text closes come after it.
                let at = self.st.events.len();
                self.note_output(&text);
                if at == self.st.events.len() {
                    // No anchor came (the common case): at the end, without `insert`'s moves.
                    self.st.events.push_back(Event::Text { text });
                } else {
                    self.st.events.insert(at, Event::Text { text });
                }
            }
        }
    }

    pub(super) fn is_remove(&self) -> bool {
        matches!(self.st.settings.style(), Style::Remove)
    }

    /// [`Style::Remove`]: passes outgoing text through the whitespace repair, and moves the
    /// offset map where the repair took spaces after a removed marker.
    pub(super) fn repair_text(&mut self, text: String) -> String {
        let (text, shift) = self.st.repair.take(text);
        if let (Some(sh), Some(&(inp, out))) = (shift, self.st.anchors.last()) {
            let anchor = (inp + sh.input_skip, out + sh.output_prefix);
            if anchor != (inp, out) {
                self.st.anchors.push(anchor);
            }
        }
        text
    }

    /// Takes the pending output: small texts are copied so that the buffer keeps its capacity.
    pub(super) fn take_text(&mut self) -> String {
        let text = if self.st.text.len() > 512 || self.st.text.capacity() > 1024 {
            std::mem::take(&mut self.st.text)
        } else {
            let t = self.st.text.as_str().to_owned();
            self.st.text.clear();
            t
        };
        let text = if self.is_remove() {
            self.repair_text(text)
        } else {
            text
        };
        self.st.flushed_bytes += text.len() as u64;
        let (chars, utf16) = count_units(&text);
        self.st.flushed_chars += chars;
        self.st.flushed_utf16 += utf16;
        text
    }
}
