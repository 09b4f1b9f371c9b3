//! Markers found by the scanner resolved to numbers, and rendered: lookup by id, rank or label,
//! numbers handed out or awaited, the first showing of a number, the rendered group.

use super::anchoring::Rendered;
use super::{count_units, Group, Piece, Rewriter, Shown};
use crate::anchor::PendingCite;
use crate::event::{CitationDetail, Event, UnresolvedReason};
use crate::scan::Item;
use crate::settings::{NumberSource, RankMode, UnknownPolicy};
use crate::style::Style;

impl Rewriter {
    /// Scans the buffered text.
    pub(super) fn pump(&mut self, eof: bool) {
        let buf = self.st.scanner.take_buf();
        self.scan(&buf, eof);
        self.st.scanner.put_back(buf);
    }

    /// Scans `text` from the scanner's position, resolving markers, until it needs more input
    /// or an external number.
    pub(super) fn scan(&mut self, text: &str, eof: bool) {
        if self.st.awaiting.is_some() {
            return;
        }
        while let Some(marker) = self
            .st
            .scanner
            .next(text, &self.cfg, &mut self.st.text, eof)
        {
            self.flush_text();
            let group = Group {
                marker,
                next: 0,
                pieces: Vec::new(),
                waiting: None,
                detail: None,
            };
            if !self.resolve(group) {
                break;
            }
        }
    }

    /// Resolves a marker's items from `group.next` on. Returns false when it stopped to wait
    /// for an external number.
    pub(super) fn resolve(&mut self, mut group: Group) -> bool {
        while let Some(item) = group.marker.items.get(group.next) {
            match self.resolve_item(item) {
                Ok(piece) => add_piece(&mut group.pieces, piece),
                Err(waiting) => {
                    group.waiting = Some(waiting);
                    self.st.awaiting = Some(group);
                    return false;
                }
            }
            group.next += 1;
        }
        self.render_group(group);
        true
    }

    /// One item of a marker as a piece of its group: unresolved, or a number shown. `Err` with
    /// the key and source id when the number must come from outside
    /// ([`NumberSource::External`]; the [`Event::NumberNeeded`] is queued).
    fn resolve_item(&mut self, item: &Item) -> Result<Piece, (String, String)> {
        let index = match self.lookup(item) {
            Ok(index) => index,
            Err(reason) => {
                let reference = match item {
                    Item::Id(id) => id.clone(),
                    Item::Rank(n) => n.to_string(),
                };
                return Ok(Piece::Unresolved { reference, reason });
            }
        };
        let keep_rank = match item {
            Item::Rank(n) if self.st.settings.rank() == RankMode::Keep => Some(*n),
            _ => None,
        };
        let number = match keep_rank {
            Some(n) => {
                self.record_kept_rank(n, index);
                n
            }
            None => self.number_of(index)?,
        };
        self.show(number, index, keep_rank);
        Ok(Piece::Number { number, index })
    }

    /// The number of the source at registration index `index`: the table's, or a new one
    /// handed out by the local numbering. `Err` with the key and source id when the number
    /// source is [`NumberSource::External`], after queueing [`Event::NumberNeeded`].
    fn number_of(&mut self, index: usize) -> Result<u32, (String, String)> {
        if let Some(n) = self.st.numbering.get(&self.keys[index]) {
            return Ok(n);
        }
        let key = self.keys[index].clone();
        let source_id = self.source_id_at(index);
        match self.st.settings.number_source() {
            NumberSource::Local => {
                self.st.new_numbers += 1;
                Ok(self.st.numbering.allocate(&key, &source_id).0)
            }
            NumberSource::External => {
                self.st.events.push_back(Event::NumberNeeded {
                    key: key.clone(),
                    source_id: source_id.clone(),
                });
                Err((key, source_id))
            }
        }
    }

    /// The id of the source at registration index `index` (empty if there is none).
    fn source_id_at(&self, index: usize) -> String {
        self.st
            .sources
            .at(index)
            .map_or_else(String::new, |(s, _)| s.id.clone())
    }

    /// The registration index of the source an item names.
    pub(super) fn lookup(&self, item: &Item) -> Result<usize, UnresolvedReason> {
        match item {
            Item::Id(id) => self
                .st
                .sources
                .index_of(id)
                .ok_or(UnresolvedReason::UnknownId),
            Item::Rank(n) => self
                .st
                .sources
                .index_of_rank(*n)
                .ok_or(UnresolvedReason::RankOutOfRange),
        }
    }

    /// Records a rank shown as written ([`RankMode::Keep`]) in the table under the key
    /// `rank:<n>`, so that `is_new` and a session's table know it. A number that the table
    /// already gives another key (an earlier answer of the session numbered differently) is
    /// shown all the same and not recorded.
    pub(super) fn record_kept_rank(&mut self, n: u32, index: usize) {
        let key = format!("rank:{n}");
        if self.st.numbering.get(&key).is_some() || self.st.numbering.entry(n).is_some() {
            return;
        }
        let source_id = self.source_id_at(index);
        if self.st.numbering.insert(n, key, source_id).is_ok() {
            self.st.new_numbers += 1;
        }
    }

    /// Emits the source the first time its number is shown in this stream.
    pub(super) fn show(&mut self, number: u32, index: usize, keep_rank: Option<u32>) {
        if let Some(s) = self.st.shown.iter_mut().find(|s| s.number == number) {
            s.citations += 1;
            return;
        }
        let is_new = self
            .st
            .numbering
            .entries()
            .iter()
            .position(|e| e.number == number)
            .is_some_and(|i| i >= self.st.initial_numbers);
        // A number keeps its first record: the source that took it (an earlier answer's,
        // when the session's sources are registered), not a later id with the same key.
        let first = self
            .st
            .numbering
            .entry(number)
            .filter(|_| keep_rank.is_none())
            .and_then(|e| self.st.sources.index_of(&e.source_id));
        let Some((source, round)) = self.st.sources.at(first.unwrap_or(index)) else {
            return;
        };
        let source = Box::new(source.clone());
        let key = match keep_rank {
            Some(n) => format!("rank:{n}"),
            None => self.keys[index].clone(),
        };
        self.st.shown.push(Shown {
            number,
            key,
            source_id: source.id.clone(),
            citations: 1,
        });
        self.st.events.push_back(Event::Source {
            number,
            round,
            source,
            is_new,
        });
    }

    pub(super) fn render_group(&mut self, group: Group) {
        let st = &mut self.st;
        let start = st.text.len();
        let base = st.flushed_bytes;
        let input_byte_offset = group.marker.input_offset;
        let all_unresolved = group
            .pieces
            .iter()
            .all(|p| matches!(p, Piece::Unresolved { .. }));
        let remove = matches!(st.settings.style(), Style::Remove);
        let anchoring = st.claims.is_some();
        let mut rendered: Vec<Rendered> = Vec::new();
        // As written: a marker with a resolved citation is shown as the model wrote it, once.
        let as_written = matches!(st.settings.style(), Style::AsWritten)
            && !all_unresolved
            && !group.marker.raw.is_empty();
        if as_written {
            st.text.push_str(&group.marker.raw);
        }
        for piece in group.pieces {
            let byte_offset = base + if as_written { start } else { st.text.len() } as u64;
            match piece {
                Piece::Number { number, index } => {
                    st.citations += 1;
                    let Some((source, _)) = st.sources.at(index) else {
                        continue;
                    };
                    let (byte_offset, char_offset, utf16_offset) = match group.detail.as_deref() {
                        Some(CitationDetail {
                            late: true,
                            span: Some(span),
                            ..
                        }) => (span.end.bytes, span.end.chars, span.end.utf16),
                        _ => {
                            let before = if as_written {
                                &st.text[..start]
                            } else {
                                st.text.as_str()
                            };
                            let (chars, utf16) = count_units(before);
                            let at = (
                                byte_offset,
                                st.flushed_chars + chars,
                                st.flushed_utf16 + utf16,
                            );
                            if !as_written {
                                st.settings
                                    .style()
                                    .render_number(number, source, &mut st.text);
                            }
                            at
                        }
                    };
                    if anchoring {
                        let late = group.detail.as_deref().filter(|d| d.late);
                        let cite = PendingCite {
                            number,
                            index,
                            source_id: source.id.clone(),
                            at: byte_offset,
                            quote: group.detail.as_deref().and_then(|d| d.quote.clone()),
                        };
                        let end = late.is_none().then(|| base + st.text.len() as u64);
                        rendered.push((cite, end));
                    }
                    st.events.push_back(Event::Citation {
                        number,
                        source_id: source.id.clone(),
                        byte_offset,
                        input_byte_offset,
                        char_offset,
                        utf16_offset,
                        provider: group.detail.clone(),
                    });
                }
                Piece::Unresolved { reference, reason } => {
                    st.unresolved += 1;
                    match st.settings.unknown() {
                        _ if as_written => {}
                        UnknownPolicy::Mark => st.settings.style().render_unresolved(&mut st.text),
                        UnknownPolicy::Keep if all_unresolved && st.text.len() == start => {
                            if remove {
                                st.repair.release(&mut st.text);
                            }
                            st.text.push_str(&group.marker.raw);
                        }
                        UnknownPolicy::Keep if all_unresolved => {}
                        UnknownPolicy::Keep => {
                            if remove && st.text.len() == start {
                                st.repair.release(&mut st.text);
                            }
                            st.text.push('[');
                            st.text.push_str(&reference);
                            st.text.push(']');
                        }
                        _ => {}
                    }
                    st.events.push_back(Event::Unresolved {
                        raw: group.marker.raw.clone(),
                        reference,
                        reason,
                        byte_offset,
                        input_byte_offset,
                    });
                }
            }
        }
        let late = group.detail.as_deref().is_some_and(|d| d.late);
        if remove && !late && st.text.len() == start {
            st.repair.marker_removed();
        }
        if !late {
            let input_end = input_byte_offset + group.marker.raw.len() as u64;
            let output_end = st.flushed_bytes + st.text.len() as u64;
            if st.anchors.last() != Some(&(input_end, output_end)) {
                st.anchors.push((input_end, output_end));
            }
        }
        if !rendered.is_empty() {
            self.note_citations(rendered);
        }
    }
}

/// Adds `piece` to a group's pieces unless it repeats a number the group already shows.
fn add_piece(pieces: &mut Vec<Piece>, piece: Piece) {
    let shown = |n: u32| {
        pieces
            .iter()
            .any(|p| matches!(p, Piece::Number { number, .. } if *number == n))
    };
    if !matches!(piece, Piece::Number { number, .. } if shown(number)) {
        pieces.push(piece);
    }
}
