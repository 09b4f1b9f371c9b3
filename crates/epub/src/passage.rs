//! Paragraph-aware passages for retrieval, each with a range CFI.

use crate::cfi::{Cfi, CfiFlavor, Path};
use crate::document::Document;
use crate::progress::{Check, ControlFlow, Progress, Stage};
use crate::xml::NodeId;
use crate::Book;

/// How [`Book::passages`] cuts the text.
///
/// ```
/// let s = citeflow_epub::ChunkSettings::new().with_target_chars(400).with_overlap_chars(50);
/// assert_eq!(s.target_chars(), 400);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSettings {
    target_chars: usize,
    overlap_chars: usize,
    ruby_text: bool,
    cfi_flavor: CfiFlavor,
}

impl Default for ChunkSettings {
    fn default() -> Self {
        ChunkSettings {
            target_chars: 800,
            overlap_chars: 100,
            ruby_text: false,
            cfi_flavor: CfiFlavor::Spec,
        }
    }
}

impl ChunkSettings {
    /// The default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the largest passage, in characters (Unicode scalar values).
    /// Passages end at the last paragraph break, else sentence end (`.`,
    /// `!`, `?`, `。`, `！`, `？`, `؟`…), else space, in the second half of
    /// this window; a run of text with none of those is cut hard.
    ///
    /// ### Default
    ///
    /// 800 characters; values under 2 are treated as 2.
    #[must_use]
    pub fn with_target_chars(mut self, chars: usize) -> Self {
        self.target_chars = chars.max(2);
        self
    }

    /// Sets how many characters of the end of a passage the next one
    /// repeats (the overlap starts at a sentence or word boundary when
    /// there is one). Overlap never crosses a chapter or document boundary.
    ///
    /// ### Default
    ///
    /// 100 characters; values of half the target or more are treated
    /// as half the target.
    #[must_use]
    pub fn with_overlap_chars(mut self, chars: usize) -> Self {
        self.overlap_chars = chars;
        self
    }

    /// Sets whether ruby annotations (`<rt>`, `<rp>`: the small readings
    /// printed beside Japanese kanji) are part of the passage text. CFIs
    /// stay exact either way: they count the annotations, which are in the
    /// document.
    ///
    /// ### Default
    ///
    /// `false`: passages read `漢字`, not `漢かん字じ`.
    #[must_use]
    pub fn with_ruby_text(mut self, include: bool) -> Self {
        self.ruby_text = include;
        self
    }

    /// Sets the flavour of the passages' [`Passage::cfi`] and
    /// [`Passage::start_cfi`]: [`CfiFlavor::Epubjs`] writes them as epub.js
    /// 0.3.93 does (for a reader built on epub.js), and then
    /// [`Passage::cfi_spec`] and [`Passage::start_cfi_spec`] hold the
    /// specification's CFIs of the same places. The passage text and
    /// cutting do not change.
    ///
    /// ### Default
    ///
    /// [`CfiFlavor::Spec`].
    #[must_use]
    pub fn with_cfi_flavor(mut self, flavor: CfiFlavor) -> Self {
        self.cfi_flavor = flavor;
        self
    }

    /// The flavour of the passages' CFIs.
    pub fn cfi_flavor(&self) -> CfiFlavor {
        self.cfi_flavor
    }

    /// The largest passage, in characters.
    pub fn target_chars(&self) -> usize {
        self.target_chars
    }

    /// The overlap between consecutive passages, in characters.
    pub fn overlap_chars(&self) -> usize {
        self.overlap_chars.min(self.target_chars / 2)
    }

    /// Whether ruby annotations are in the passage text.
    pub fn ruby_text(&self) -> bool {
        self.ruby_text
    }
}

/// A piece of a chapter's reading text with its location.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Passage {
    /// Position in the book's passage list.
    pub index: usize,
    /// The book's unique identifier (empty if it has none).
    pub book_id: String,
    /// The book's title (empty if it has none).
    pub book_title: String,
    /// The chapter ([`Book::chapters`] index).
    pub chapter_index: usize,
    /// The chapter's title (`None` for untitled leading content).
    pub chapter_title: Option<String>,
    /// The spine document holding the passage.
    pub spine_index: usize,
    /// That document's manifest `href`.
    pub href: String,
    /// The text: runs of spaces, tabs and line breaks collapsed to one
    /// space, paragraphs separated by a blank line (`\n\n`).
    pub text: String,
    /// Range CFI from the first character to just after the last, such as
    /// `epubcfi(/6/4[chap01ref]!/4[body01]/10[para05],/3:10,/3:42)`.
    pub cfi: Cfi,
    /// CFI of the first character.
    pub start_cfi: Cfi,
    /// The flavour [`Passage::cfi`] and [`Passage::start_cfi`] are written
    /// in ([`ChunkSettings::with_cfi_flavor`]).
    pub cfi_flavor: CfiFlavor,
    /// The specification's range CFI when [`Passage::cfi`] is in another
    /// flavour; `None` when `cfi` is the specification's.
    pub cfi_spec: Option<Cfi>,
    /// The specification's CFI of the first character when
    /// [`Passage::start_cfi`] is in another flavour; `None` when
    /// `start_cfi` is the specification's.
    pub start_cfi_spec: Option<Cfi>,
}

const BLOCKS: [&str; 31] = [
    "p",
    "div",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ol",
    "ul",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "table",
    "tr",
    "td",
    "th",
    "caption",
    "figure",
    "figcaption",
    "section",
    "article",
    "aside",
    "header",
    "footer",
    "nav",
    "address",
    "main",
];

/// Sentence ends that need no following space (CJK).
const CJK_ENDS: [char; 6] = ['。', '！', '？', '｡', '‼', '⁉'];
/// Sentence ends that need a following space.
const SPACED_ENDS: [char; 6] = ['.', '!', '?', '؟', '۔', '…'];
/// Closing quotes and brackets that stay with the sentence before them.
const CLOSERS: [char; 14] = [
    '」', '』', '）', '〕', '】', '〉', '》', '"', '\'', '’', '”', '»', ')', ']',
];

pub(crate) fn is_collapsible(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}')
}

/// One chapter's text inside one document, with a map back to the nodes.
#[derive(Default)]
pub(crate) struct Section {
    pub(crate) chars: Vec<char>,
    /// `(char index, node, utf16 offset in node)` where a contiguous run
    /// of mapped characters starts.
    pub(crate) map: Vec<(usize, NodeId, u32)>,
    /// Where each paragraph after a `\n\n` break starts (may repeat).
    pub(crate) para_starts: Vec<usize>,
    expect: Option<(NodeId, u32)>,
}

impl Section {
    fn emit(&mut self, c: char, node: NodeId, u: u32) {
        if self.expect != Some((node, u)) {
            self.map.push((self.chars.len(), node, u));
        }
        self.chars.push(c);
        self.expect = Some((node, u + c.len_utf16() as u32));
    }

    fn last_is_space(&self) -> bool {
        self.chars.last().is_none_or(|&c| is_collapsible(c))
    }

    fn push_text(&mut self, node: NodeId, t: &str) {
        let mut u = 0u32;
        for c in t.chars() {
            if is_collapsible(c) {
                if !self.last_is_space() {
                    self.emit(' ', node, u);
                }
            } else {
                self.emit(c, node, u);
            }
            u += c.len_utf16() as u32;
        }
    }

    fn soft_break(&mut self) {
        if !self.last_is_space() {
            self.chars.push(' ');
            self.expect = None;
        }
    }

    fn paragraph_break(&mut self) {
        if self.chars.is_empty() {
            return;
        }
        while self.chars.last().is_some_and(|&c| is_collapsible(c)) {
            self.chars.pop();
            if self.map.last().is_some_and(|m| m.0 >= self.chars.len()) {
                self.map.pop();
            }
        }
        self.chars.push('\n');
        self.chars.push('\n');
        self.expect = None;
        self.para_starts.push(self.chars.len());
    }

    /// Node and UTF-16 offset of the character at `i` (a mapped one).
    pub(crate) fn lookup(&self, i: usize) -> Option<(NodeId, u32)> {
        let k = self.map.partition_point(|m| m.0 <= i).checked_sub(1)?;
        let (start, node, u) = self.map[k];
        let extra: u32 = self.chars[start..i]
            .iter()
            .map(|c| c.len_utf16() as u32)
            .sum();
        Some((node, u + extra))
    }

    fn is_para_break(&self, i: usize) -> bool {
        self.para_starts.binary_search(&i).is_ok()
    }

    fn is_sentence_break(&self, i: usize) -> bool {
        let c = &self.chars;
        if i == 0 || i >= c.len() {
            return false;
        }
        let mut j = i;
        while j > 0 && CLOSERS.contains(&c[j - 1]) {
            j -= 1;
        }
        if j == 0 {
            return false;
        }
        let t = c[j - 1];
        if CJK_ENDS.contains(&t) {
            return !CLOSERS.contains(&c[i]) && !CJK_ENDS.contains(&c[i]);
        }
        SPACED_ENDS.contains(&t) && is_collapsible(c[i])
    }

    fn is_word_break(&self, i: usize) -> bool {
        let c = &self.chars;
        i > 0
            && i < c.len()
            && (is_collapsible(c[i]) || matches!(c[i - 1], '、' | '，' | '・' | '،'))
    }

    /// Where the passage starting at `s` ends.
    fn end_of(&self, s: usize, target: usize) -> usize {
        let n = self.chars.len();
        if n - s <= target {
            return n;
        }
        let hi = s + target;
        let lo = s + target / 2;
        let (mut sentence, mut word) = (None, None);
        for i in (lo..=hi).rev() {
            if self.is_para_break(i) {
                return i;
            }
            if sentence.is_none() && self.is_sentence_break(i) {
                sentence = Some(i);
            }
            if word.is_none() && self.is_word_break(i) {
                word = Some(i);
            }
        }
        sentence.or(word).unwrap_or(hi)
    }

    /// The first non-collapsible character at or after `i`.
    fn skip_ws(&self, mut i: usize) -> usize {
        while i < self.chars.len() && is_collapsible(self.chars[i]) {
            i += 1;
        }
        i
    }

    /// Where the passage after `[s, e)` starts.
    fn next_start(&self, s: usize, e: usize, overlap: usize) -> usize {
        if overlap == 0 {
            return self.skip_ws(e);
        }
        let o = e.saturating_sub(overlap).max(s + 1);
        let inside = |i: &usize| self.skip_ws(*i) < e;
        let start = (o..e)
            .filter(inside)
            .find(|&i| self.is_para_break(i) || self.is_sentence_break(i))
            .or_else(|| (o..e).filter(inside).find(|&i| self.is_word_break(i)))
            .unwrap_or(o);
        let start = self.skip_ws(start);
        if start <= s {
            self.skip_ws(e)
        } else {
            start
        }
    }
}

impl Book {
    /// Cuts every chapter's reading text into passages (see
    /// [`ChunkSettings`]). Passages never cross a chapter or a spine
    /// document; `<rt>`/`<rp>` (unless enabled), `<script>` and `<style>`
    /// are left out; block elements (`p`, `div`, `h1`…, `li`…) are
    /// paragraphs.
    pub fn passages(&self, settings: &ChunkSettings) -> Vec<Passage> {
        self.passages_checked(settings, &mut |_| ControlFlow::Continue(()))
            .unwrap_or_default()
    }

    /// [`Book::passages`] that calls `check` before cutting each spine document; `None`
    /// when a check broke (a deadline, a client gone).
    pub fn passages_checked(
        &self,
        settings: &ChunkSettings,
        check: &mut Check<'_>,
    ) -> Option<Vec<Passage>> {
        let mut out = Vec::new();
        for spine_index in 0..self.spine.len() {
            let progress = Progress {
                stage: Stage::Cutting,
                done: spine_index,
                total: self.spine.len(),
                path: &self.spine[spine_index].path,
            };
            if check(progress).is_break() {
                return None;
            }
            self.sections(spine_index, settings.ruby_text, None, |chapter, sec| {
                self.cut(sec, spine_index, chapter, settings, &mut out);
            });
        }
        Some(out)
    }

    /// Hands the reading text of each chapter of spine document `spine_index` (or of chapter
    /// `only`) to `f`, in order: the text [`Book::passages`] cuts and
    /// [`Book::reading`](crate::Book::reading) shows.
    pub(crate) fn sections(
        &self,
        spine_index: usize,
        ruby_text: bool,
        only: Option<usize>,
        mut f: impl FnMut(usize, &Section),
    ) {
        let Some(doc) = self.document(spine_index) else {
            return;
        };
        let Some(body) = doc.body() else { return };
        let mut sec = Section::default();
        let mut chapter = None;
        let mut block = None;
        for node in doc.descendants(body) {
            if doc.element_name(node) == Some("br") {
                sec.soft_break();
                continue;
            }
            let Some(t) = doc.text(node) else { continue };
            let ch = self.chapter_index_at(spine_index, node);
            if only.is_some_and(|o| o != ch) {
                continue;
            }
            let Some(b) = classify(doc, node, body, ruby_text) else {
                continue;
            };
            if chapter != Some(ch) {
                if let Some(c) = chapter {
                    f(c, &sec);
                }
                sec = Section::default();
                chapter = Some(ch);
                block = None;
            }
            if block != Some(b) {
                sec.paragraph_break();
                block = Some(b);
            }
            sec.push_text(node, t);
        }
        if let Some(c) = chapter {
            f(c, &sec);
        }
    }

    fn cut(
        &self,
        sec: &Section,
        spine_index: usize,
        chapter: usize,
        settings: &ChunkSettings,
        out: &mut Vec<Passage>,
    ) {
        let n = sec.chars.len();
        let mut s = sec.skip_ws(0);
        while s < n {
            let e = sec.end_of(s, settings.target_chars());
            let mut b = e;
            while b > s && is_collapsible(sec.chars[b - 1]) {
                b -= 1;
            }
            if b > s {
                self.emit(sec, (s, b), spine_index, chapter, settings.cfi_flavor, out);
            }
            if e >= n {
                break;
            }
            let next = sec.next_start(s, e, settings.overlap_chars());
            s = if next > s { next } else { sec.skip_ws(e) };
        }
    }

    fn emit(
        &self,
        sec: &Section,
        (a, b): (usize, usize),
        spine_index: usize,
        chapter: usize,
        flavor: CfiFlavor,
        out: &mut Vec<Passage>,
    ) {
        let path =
            |node: NodeId, u: u32| -> Option<Path> { self.path_at(spine_index, node, Some(u)) };
        let Some((sn, su)) = sec.lookup(a) else {
            return;
        };
        let Some((en, eu)) = sec.lookup(b - 1) else {
            return;
        };
        let eu = eu + sec.chars[b - 1].len_utf16() as u32;
        let (Some(start), Some(end)) = (path(sn, su), path(en, eu)) else {
            return;
        };
        let (cfi, start_cfi, cfi_spec, start_cfi_spec) = if flavor == CfiFlavor::Spec {
            (
                Cfi::range_between(&start, &end),
                Cfi::point(start),
                None,
                None,
            )
        } else {
            let flavored =
                |node: NodeId, u: u32| self.path_at_as(spine_index, node, Some(u), flavor);
            let (Some(fs), Some(fe)) = (flavored(sn, su), flavored(en, eu)) else {
                return;
            };
            (
                Cfi::range_between(&fs, &fe),
                Cfi::point(fs),
                Some(Cfi::range_between(&start, &end)),
                Some(Cfi::point(start)),
            )
        };
        let item = &self.spine[spine_index];
        out.push(Passage {
            index: out.len(),
            book_id: self.metadata.identifier.clone().unwrap_or_default(),
            book_title: self.metadata.title.clone().unwrap_or_default(),
            chapter_index: chapter,
            chapter_title: self.chapters.get(chapter).and_then(|c| c.title.clone()),
            spine_index,
            href: item.href.clone(),
            text: sec.chars[a..b].iter().collect(),
            cfi,
            start_cfi,
            cfi_flavor: flavor,
            cfi_spec,
            start_cfi_spec,
        });
    }
}

/// `None` if the node is not reading text; else its paragraph (nearest
/// block ancestor).
fn classify(doc: &Document, node: NodeId, body: NodeId, ruby_text: bool) -> Option<NodeId> {
    let mut block = None;
    let mut cur = doc.parent(node);
    while let Some(p) = cur {
        let name = doc.element_name(p).unwrap_or("");
        match name {
            "script" | "style" => return None,
            "rt" | "rp" if !ruby_text => return None,
            _ => {}
        }
        if block.is_none() && BLOCKS.contains(&name) {
            block = Some(p);
        }
        if p == body {
            break;
        }
        cur = doc.parent(p);
    }
    Some(block.unwrap_or(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(paras: &[&str]) -> Section {
        let mut s = Section::default();
        for (i, p) in paras.iter().enumerate() {
            s.paragraph_break();
            s.push_text(NodeId(i as u32 + 1), p);
        }
        s
    }

    #[test]
    fn japanese_sentences_break_without_spaces() {
        let s =
            section(&["山路を登りながら、こう考えた。智に働けば角が立つ。情に棹させば流される。"]);
        let text: String = s.chars.iter().collect();
        let breaks: Vec<usize> = (0..s.chars.len())
            .filter(|&i| s.is_sentence_break(i))
            .collect();
        let pieces: Vec<String> = breaks
            .iter()
            .map(|&i| text.chars().take(i).collect())
            .collect();
        assert_eq!(pieces[0], "山路を登りながら、こう考えた。");
        assert_eq!(breaks.len(), 2);
    }

    #[test]
    fn whitespace_collapses_and_maps_back() {
        let s = section(&["  a \n\t b  ", "c"]);
        let text: String = s.chars.iter().collect();
        assert_eq!(text, "a b\n\nc");
        assert_eq!(s.lookup(0), Some((NodeId(1), 2)));
        assert_eq!(s.lookup(2), Some((NodeId(1), 7)));
        assert_eq!(s.lookup(5), Some((NodeId(2), 0)));
    }
}
