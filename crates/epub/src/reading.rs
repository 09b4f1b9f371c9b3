//! [`Book::reading`]: the chapter around a CFI as paragraphs of reading text, with the place
//! the CFI names marked, so a reader can open a book at a cited passage.

use crate::cfi::Cfi;
use crate::document::{Document, Location};
use crate::passage::{is_collapsible, Section};
use crate::text::Point;
use crate::xml::{utf16_len, NodeId};
use crate::{Book, ResolveError};

/// The chapter that holds a CFI, as a reader shows it: see [`Book::reading`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reading {
    /// The spine document the CFI points into.
    pub spine_index: usize,
    /// That document's manifest `href`.
    pub href: String,
    /// The chapter ([`Book::chapters`] index).
    pub chapter_index: usize,
    /// The chapter's title (`None` for untitled leading content).
    pub chapter_title: Option<String>,
    /// The chapter's paragraphs in that document, in reading order.
    pub paragraphs: Vec<ReadingParagraph>,
    /// What the CFI covers: a range's text, or an empty span at a point. `None` when the
    /// place has no reading text after it in the chapter (such as an image at its end).
    pub mark: Option<Span>,
    /// The chapter before, for a reader's "previous chapter" ([`Book::chapter_cfi`] opens
    /// it); `None` in the first one. Table-of-contents entries that share their start with
    /// the next entry are passed over: they have no text of their own.
    pub previous_chapter: Option<usize>,
    /// The chapter after, as `previous_chapter`; `None` in the last one.
    pub next_chapter: Option<usize>,
}

/// One paragraph of a [`Reading`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadingParagraph {
    /// The text, runs of whitespace collapsed to one space (as in a passage).
    pub text: String,
    /// CFI of the paragraph's first character.
    pub cfi: Cfi,
    /// The readings of its ruby (`<rt>`, the small kana printed beside kanji), in text order,
    /// when they are not part of the text (`ruby_text` false); empty otherwise.
    pub ruby: Vec<Ruby>,
}

/// A ruby annotation of a [`ReadingParagraph`]: `text` is printed beside the base characters
/// `start..end` (character offsets in the paragraph's text), as `<ruby>` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ruby {
    /// The base's first character.
    pub start: usize,
    /// Just after the base's last character.
    pub end: usize,
    /// The reading, whitespace collapsed.
    pub text: String,
}

/// A place in a [`Reading`]: a paragraph and a character (Unicode scalar value) offset in
/// its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub struct TextPosition {
    /// Index into [`Reading::paragraphs`].
    pub paragraph: usize,
    /// Characters from the paragraph's start (at most its length).
    pub char_offset: usize,
}

/// The marked part of a [`Reading`], from `start` up to (not including) `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Span {
    /// The first marked character.
    pub start: TextPosition,
    /// Just after the last marked character (`start` for a point).
    pub end: TextPosition,
}

impl Reading {
    /// The marked part of paragraph `paragraph` as a character range `(start, end)`, or `None`
    /// when nothing of it is marked (a point marks nothing).
    pub fn marked_range(&self, paragraph: usize) -> Option<(usize, usize)> {
        let span = self.mark?;
        let text = &self.paragraphs.get(paragraph)?.text;
        if paragraph < span.start.paragraph || paragraph > span.end.paragraph {
            return None;
        }
        let from = if paragraph == span.start.paragraph {
            span.start.char_offset
        } else {
            0
        };
        let to = if paragraph == span.end.paragraph {
            span.end.char_offset
        } else {
            text.chars().count()
        };
        (from < to).then_some((from, to))
    }

    /// The marked text, paragraphs joined by a blank line (for a passage's range CFI, the
    /// passage text).
    pub fn marked_text(&self) -> String {
        let Some(span) = self.mark else {
            return String::new();
        };
        let mut out = String::new();
        for p in span.start.paragraph..=span.end.paragraph {
            if p > span.start.paragraph {
                out.push_str("\n\n");
            }
            if let Some((from, to)) = self.marked_range(p) {
                out.extend(self.paragraphs[p].text.chars().skip(from).take(to - from));
            }
        }
        out
    }
}

impl Book {
    /// The chapter that holds `cfi`, as paragraphs of reading text, with what the CFI covers
    /// marked: how a reader opens the book at a cited passage. Only the part of the chapter
    /// in the CFI's spine document is given (passages never cross documents). The text is
    /// the text [`Book::passages`] cuts with the same `ruby_text` choice, so the mark of a
    /// passage's range CFI is exactly that passage's text.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] when the CFI does not resolve in this book (see [`Book::resolve`]).
    pub fn reading(&self, cfi: &Cfi, ruby_text: bool) -> Result<Reading, ResolveError> {
        let resolved = self.resolve(cfi)?;
        let spine_index = resolved.start.spine_index;
        let doc = self
            .document(spine_index)
            .ok_or_else(|| ResolveError::MissingDocument {
                cfi: cfi.to_string(),
                spine_index,
            })?;
        let anchor = match resolved.start.location {
            Some(Location::Element(n)) | Some(Location::Text { node: n, .. }) => Some(n),
            Some(Location::EmptyChunk { parent, .. }) => Some(parent),
            None => doc.body(),
        };
        let chapter_index = match anchor {
            Some(n) => self.chapter_index_at(spine_index, n),
            None => self.chapter_index_at(spine_index, NodeId(0)),
        };
        let mut found = None;
        self.sections(spine_index, ruby_text, Some(chapter_index), |_, sec| {
            let ends = (resolved.start, resolved.end);
            found = Some(self.read_section(doc, sec, spine_index, ends, ruby_text));
        });
        let (paragraphs, mark) = found.unwrap_or_default();
        let item = &self.spine[spine_index];
        Ok(Reading {
            spine_index,
            href: item.href.clone(),
            chapter_index,
            chapter_title: self
                .chapters
                .get(chapter_index)
                .and_then(|c| c.title.clone()),
            paragraphs,
            mark,
            previous_chapter: (0..chapter_index)
                .rev()
                .find(|&j| self.chapter_start(j).is_some()),
            next_chapter: (chapter_index + 1..self.chapters.len())
                .find(|&j| self.chapter_start(j).is_some()),
        })
    }

    /// Where chapter `index` begins, as a CFI that [`Book::reading`] opens at that chapter:
    /// its start element, or its document's `<body>`. `None` for a chapter that has no place of
    /// its own (a table-of-contents entry that starts where the next one does) or whose
    /// document could not be read.
    pub fn chapter_cfi(&self, index: usize) -> Option<Cfi> {
        let (spine_index, node) = self.chapter_start(index)?;
        self.cfi_at(spine_index, node, None)
    }

    /// The spine index and element where chapter `index` begins (see [`Book::chapter_cfi`]).
    fn chapter_start(&self, index: usize) -> Option<(usize, NodeId)> {
        let &(spine_index, node) = self.chapter_starts.get(index)?;
        if self.chapter_index_at(spine_index, node) != index {
            return None;
        }
        let node = match node {
            NodeId(0) => self.document(spine_index)?.body()?,
            n => n,
        };
        Some((spine_index, node))
    }

    /// The paragraphs of one chapter's section and the span from `start` to `end`.
    fn read_section(
        &self,
        doc: &Document,
        sec: &Section,
        spine_index: usize,
        (start, end): (Point, Option<Point>),
        ruby_text: bool,
    ) -> (Vec<ReadingParagraph>, Option<Span>) {
        let bounds = paragraph_bounds(sec);
        let mut ruby = vec![Vec::new(); bounds.len()];
        if !ruby_text {
            annotate_ruby(doc, sec, &bounds, &mut ruby);
        }
        let position = |p: &Point| {
            let key = p.location.map_or((0, 0), |loc| order_key(doc, loc));
            first_at_or_after(sec, key)
        };
        let mark = position(&start).map(|s| {
            let start = text_position(&bounds, s, false);
            let end = match end {
                Some(e) => {
                    let e = position(&e).unwrap_or(sec.chars.len());
                    text_position(&bounds, e, true).max(start)
                }
                None => start,
            };
            Span { start, end }
        });
        let paragraphs = bounds
            .iter()
            .zip(ruby)
            .filter_map(|(&(a, b), ruby)| {
                let (node, u) = sec.lookup(a)?;
                let path = self.path_at(spine_index, node, Some(u))?;
                Some(ReadingParagraph {
                    text: sec.chars[a..b].iter().collect(),
                    cfi: Cfi::point(path),
                    ruby,
                })
            })
            .collect();
        (paragraphs, mark)
    }
}

/// Collects the [`Ruby`] readings of each paragraph (`bounds`) from the `<ruby>` elements
/// whose base text is in the section. A `<ruby>` may pair several bases with readings
/// (`<ruby>漢<rt>かん</rt>字<rt>じ</rt></ruby>`): each `<rt>` reads the base text since the
/// previous one. `<rp>` fallback parentheses and `<rtc>` containers are skipped.
fn annotate_ruby(doc: &Document, sec: &Section, bounds: &[(usize, usize)], out: &mut [Vec<Ruby>]) {
    let (Some(first), Some(last)) = (sec.map.first(), sec.map.last()) else {
        return;
    };
    // A section that starts inside a ruby base starts after its `<ruby>` element.
    let from = std::iter::successors(Some(first.1), |&n| doc.parent(n))
        .filter(|&n| doc.element_name(n) == Some("ruby"))
        .last()
        .unwrap_or(first.1);
    let rubies = (from.0..=last.1 .0)
        .map(NodeId)
        .filter(|&n| doc.element_name(n) == Some("ruby"));
    for ruby in rubies {
        let mut base: Option<(usize, usize)> = None;
        for child in doc.child_nodes(ruby) {
            match doc.element_name(child) {
                Some("rt") => {
                    let reading = collapse(&doc.text_content(child));
                    if let (Some((s, e)), false) = (base.take(), reading.is_empty()) {
                        add_ruby(sec, bounds, out, (s, e), reading);
                    }
                }
                Some("rp" | "rtc") => {}
                _ => {
                    let texts = std::iter::once(child)
                        .chain(doc.descendants(child))
                        .filter(|&t| !doc.is_non_reading(t));
                    for t in texts {
                        if let Some(range) = text_chars(sec, t, doc.text(t)) {
                            base = Some(match base {
                                Some((s, e)) => (s.min(range.0), e.max(range.1)),
                                None => range,
                            });
                        }
                    }
                }
            }
        }
    }
}

/// Records a reading of section characters `s..e` in the paragraph that holds them (a base
/// across paragraphs, or of whitespace only, gets none).
fn add_ruby(
    sec: &Section,
    bounds: &[(usize, usize)],
    out: &mut [Vec<Ruby>],
    (mut s, mut e): (usize, usize),
    text: String,
) {
    while s < e && is_collapsible(sec.chars[s]) {
        s += 1;
    }
    while e > s && is_collapsible(sec.chars[e - 1]) {
        e -= 1;
    }
    let p = bounds.partition_point(|&(_, b)| b <= s);
    let Some(&(a, b)) = bounds.get(p) else {
        return;
    };
    if s < e && a <= s && e <= b {
        out[p].push(Ruby {
            start: s - a,
            end: e - a,
            text,
        });
    }
}

/// The section characters that came from text node `node` (`text`: its text), `None` when it
/// has none there.
fn text_chars(sec: &Section, node: NodeId, text: Option<&str>) -> Option<(usize, usize)> {
    let len = u32::try_from(utf16_len(text?)).unwrap_or(u32::MAX);
    // The map is in document order, so a node's runs are contiguous in it.
    let first = sec.map.partition_point(|m| m.1 .0 < node.0);
    let last = sec.map.partition_point(|m| m.1 .0 <= node.0);
    if first == last {
        return None;
    }
    let (run, _, mut u) = sec.map[last - 1];
    let limit = sec.map.get(last).map_or(sec.chars.len(), |m| m.0);
    let mut end = run;
    while end < limit && u < len {
        u += sec.chars[end].len_utf16() as u32;
        end += 1;
    }
    Some((sec.map[first].0, end))
}

/// `text` with runs of whitespace collapsed to one space and trimmed.
fn collapse(text: &str) -> String {
    text.split(is_collapsible)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Document order of a location: `(node index, UTF-16 offset)`. Character data inside an
/// element comes after the element's own key, so an element's key is the place just before
/// its content.
pub(crate) fn order_key(doc: &Document, loc: Location) -> (u32, u32) {
    match loc {
        Location::Text { node, utf16_offset } => (node.0, utf16_offset),
        Location::Element(node) => (node.0, 0),
        Location::EmptyChunk { parent, chunk } => {
            match doc.child_elements(parent).nth(chunk as usize) {
                Some(child) => (child.0, 0),
                None => (doc.dom.subtree_end(parent).0, 0),
            }
        }
    }
}

/// The first character of the section at or after document position `key` (`None`: none is).
pub(crate) fn first_at_or_after(sec: &Section, key: (u32, u32)) -> Option<usize> {
    // Runs of mapped characters are in document order; characters between runs (a soft
    // break, a paragraph break) belong to no node.
    let after = sec.map.partition_point(|&(_, node, u)| (node.0, u) <= key);
    if let Some(k) = after.checked_sub(1) {
        let (start, node, u0) = sec.map[k];
        let run_end = sec.map.get(k + 1).map_or(sec.chars.len(), |m| m.0);
        if node.0 == key.0 {
            let mut u = u0;
            for i in start..run_end {
                if u >= key.1 {
                    return Some(i);
                }
                u += sec.chars[i].len_utf16() as u32;
            }
        }
    }
    sec.map.get(after).map(|m| m.0)
}

/// `[start, end)` of each non-empty paragraph of the section, trailing spaces left out.
fn paragraph_bounds(sec: &Section) -> Vec<(usize, usize)> {
    let n = sec.chars.len();
    let mut starts = vec![0];
    starts.extend(sec.para_starts.iter().copied().filter(|&s| s <= n));
    starts.dedup();
    let mut out = Vec::new();
    for (i, &a) in starts.iter().enumerate() {
        let mut b = starts.get(i + 1).map_or(n, |&next| next.saturating_sub(2));
        let mut a = a;
        while a < b && is_collapsible(sec.chars[a]) {
            a += 1;
        }
        while b > a && is_collapsible(sec.chars[b - 1]) {
            b -= 1;
        }
        if b > a {
            out.push((a, b));
        }
    }
    out
}

/// The paragraph and offset of section character `i`. A start between paragraphs is the
/// start of the next one; an end there (`is_end`) is the end of the one before.
fn text_position(paragraphs: &[(usize, usize)], i: usize, is_end: bool) -> TextPosition {
    let at = |paragraph: usize, char_offset: usize| TextPosition {
        paragraph,
        char_offset,
    };
    if is_end {
        let p = paragraphs.partition_point(|&(a, _)| a < i);
        return match p.checked_sub(1) {
            Some(q) => at(q, i.min(paragraphs[q].1) - paragraphs[q].0),
            None => at(0, 0),
        };
    }
    let p = paragraphs.partition_point(|&(_, b)| b <= i);
    match (paragraphs.get(p), paragraphs.last()) {
        (Some(&(a, _)), _) => at(p, i.saturating_sub(a)),
        (None, Some(&(a, b))) => at(paragraphs.len() - 1, b - a),
        (None, None) => at(0, 0),
    }
}
