//! The streaming marker scanner: finds markers in decoded text, passes everything else through.
//!
//! The scanner owns a buffer of decoded text. [`Scanner::next`] consumes as much of it as can be
//! decided now: plain text is appended to the caller's output at once; a possible marker is held
//! as a *candidate* (the unconsumed tail of the buffer) until [`classify`] decides it. Every
//! decision depends only on the candidate's bytes (at most `cap` of them), the end of input, and
//! a little context from before it, so the result does not depend on how the input was cut.

mod classify;

use crate::settings::{IdShape, RankMode, Settings, Syntax};
use crate::source::Sources;
use classify::{classify, rank_value, OPENAI_OPEN};

/// One citation inside a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub(crate) enum Item {
    /// A source id as written.
    Id(String),
    /// A rank: the n-th source shown to the model.
    Rank(u32),
}

/// A recognised marker.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Marker {
    /// The marker as written.
    pub(crate) raw: String,
    /// Its citations in order.
    pub(crate) items: Vec<Item>,
    /// Offset of its first byte in the decoded input.
    pub(crate) input_offset: u64,
}

/// What the scanner needs from the settings, plus the registered ids.
#[derive(Debug, Clone)]
pub(crate) struct ScanConfig {
    double: bool,
    colon: bool,
    tag: bool,
    single: bool,
    bare: bool,
    openai: bool,
    assistants: bool,
    footnote: bool,
    rank: bool,
    skip_code: bool,
    cap: usize,
    /// The most digits a rank may have: 4, or as many as the largest source label.
    rank_digits: u32,
    shape: IdShape,
    /// Registered ids, sorted, for prefix checks.
    ids: Vec<String>,
    /// Whether some registered id is all digits (a rank could name it).
    digit_ids: bool,
    /// Bytes that need a look in normal text, as a bit set.
    interesting: [u64; 4],
    /// Up to three of them, for `memchr3`.
    ascii3: [u8; 3],
}

/// Whether `s` is one or more digits (ASCII or full-width), as a rank is written.
fn is_digits(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || ('０'..='９').contains(&c))
}

/// As many rank digits as the label `max_label` needs (4 to 9).
fn rank_digits(max_label: u32) -> u32 {
    (max_label.checked_ilog10().unwrap_or(0) + 1).clamp(4, 9)
}

impl ScanConfig {
    pub(crate) fn new<'a>(settings: &Settings, ids: impl Iterator<Item = &'a str>) -> Self {
        let mut ids: Vec<String> = ids.map(str::to_owned).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut c = ScanConfig {
            double: settings.has_syntax(Syntax::DoubleBracket),
            colon: settings.has_syntax(Syntax::CiteColon),
            tag: settings.has_syntax(Syntax::CiteTag),
            single: settings.has_syntax(Syntax::SingleBracket),
            bare: settings.has_syntax(Syntax::BareId),
            openai: settings.has_syntax(Syntax::OpenaiCite),
            assistants: settings.has_syntax(Syntax::AssistantsCite),
            footnote: settings.has_syntax(Syntax::Footnote),
            rank: settings.rank() != RankMode::Off,
            skip_code: settings.is_skip_code(),
            cap: settings.max_pending_bytes(),
            rank_digits: 4,
            shape: settings.id_shape().clone(),
            digit_ids: ids.iter().any(|id| is_digits(id)),
            ids,
            interesting: [0; 4],
            ascii3: [0; 3],
        };
        let mut ascii = Vec::new();
        if c.brackets() {
            ascii.push(b'[');
        }
        if c.colon || c.tag {
            ascii.push(b'<');
        }
        if c.skip_code {
            ascii.push(b'`');
        }
        let mut set = ascii.clone();
        if c.skip_code {
            set.push(b'~');
        }
        if c.lenticular() {
            set.push(0xE3);
        }
        if c.fullwidth() {
            set.push(0xEF);
        }
        if c.openai {
            set.push(0xEE);
        }
        if c.bare {
            set.push(c.shape.prefix().as_bytes()[0]);
        }
        for b in set {
            c.interesting[(b >> 6) as usize] |= 1 << (b & 63);
        }
        // memchr3 needs three needles: repeat one (or search for a byte that is never there
        // in UTF-8 text).
        let fill = ascii.first().copied().unwrap_or(0xFF);
        for (k, slot) in c.ascii3.iter_mut().enumerate() {
            *slot = ascii.get(k).copied().unwrap_or(fill);
        }
        c
    }

    /// The configuration for these sources: their ids, and as many rank digits as their
    /// largest label needs.
    pub(crate) fn for_sources(settings: &Settings, sources: &Sources) -> Self {
        let mut c = ScanConfig::new(settings, sources.iter().map(|s| s.id.as_str()));
        let max_label = sources.iter().filter_map(|s| s.label).max().unwrap_or(0);
        c.rank_digits = rank_digits(max_label);
        c
    }

    /// Adds the sources registered after the first `known` of `sources` (they only grow at
    /// the end): what [`ScanConfig::for_sources`] would give for them all, without sorting
    /// every id again.
    pub(crate) fn add_sources(&mut self, sources: &Sources, known: usize) {
        for s in sources.iter().skip(known) {
            if let Err(i) = self.ids.binary_search_by(|x| x.as_str().cmp(&s.id)) {
                self.ids.insert(i, s.id.clone());
                self.digit_ids |= is_digits(&s.id);
            }
            if let Some(label) = s.label {
                self.rank_digits = self.rank_digits.max(rank_digits(label));
            }
        }
    }

    /// The value of 1 to `rank_digits` ASCII or full-width digits.
    fn rank_value(&self, s: &str) -> Option<u32> {
        rank_value(s, self.rank_digits)
    }

    /// The index of the next byte at or after `i` that needs a look, or `bytes.len()`.
    fn find_interesting(&self, bytes: &[u8], i: usize) -> usize {
        let hay = &bytes[i..];
        if hay.len() < 16 {
            return i + hay
                .iter()
                .position(|&b| self.is_interesting(b))
                .unwrap_or(hay.len());
        }
        let [a, b, c] = self.ascii3;
        let mut end = memchr::memchr3(a, b, c, hay).unwrap_or(hay.len());
        if self.skip_code {
            end = memchr::memchr(b'~', &hay[..end]).unwrap_or(end);
        }
        if self.fullwidth() || self.lenticular() || self.openai {
            // Lead bytes of 【 (E3), ［ (EF) and the private-use markers (EE); a byte that is
            // not in the set only costs a look.
            end = memchr::memchr3(0xE3, 0xEF, 0xEE, &hay[..end]).unwrap_or(end);
        }
        if self.bare {
            end = memchr::memchr(self.shape.prefix().as_bytes()[0], &hay[..end]).unwrap_or(end);
        }
        i + end
    }

    fn is_interesting(&self, b: u8) -> bool {
        self.interesting[(b >> 6) as usize] >> (b & 63) & 1 == 1
    }

    fn brackets(&self) -> bool {
        self.double || self.single || self.rank || self.footnote
    }

    /// `［`: ids and ranks.
    fn fullwidth(&self) -> bool {
        self.single || self.rank
    }

    /// `【`: ids, ranks and Assistants annotations.
    fn lenticular(&self) -> bool {
        self.single || self.rank || self.assistants
    }

    fn is_registered(&self, s: &str) -> bool {
        self.ids.binary_search_by(|x| x.as_str().cmp(s)).is_ok()
    }

    /// [`ScanConfig::is_registered`] for `s` of digits only (a rank), without the search
    /// when no registered id is all digits.
    fn is_registered_digits(&self, s: &str) -> bool {
        self.digit_ids && self.is_registered(s)
    }

    fn is_registered_prefix(&self, s: &str) -> bool {
        let i = self.ids.partition_point(|x| x.as_str() < s);
        self.ids.get(i).is_some_and(|x| x.starts_with(s))
    }
}

/// Where the scanner is in the markdown structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Mode {
    Normal,
    /// Inside an inline code span opened by this many backticks.
    Code(u32),
    /// Inside a fenced code block opened by this many of this character.
    Fence {
        ch: u8,
        len: u32,
        line: FenceLine,
    },
}

/// Progress through a line inside a fenced block, looking for the closing fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum FenceLine {
    Start(u32),
    Run(u32),
    Trail,
    Other,
}

/// A run of backticks or tildes being counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Run {
    ch: u8,
    len: u32,
    at_line_start: bool,
}

/// A possible marker held back, starting at `start` in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Cand {
    start: usize,
    at_line_start: bool,
    after_plain_bracket: bool,
}

/// The scanner's whole state; it serialises for snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Scanner {
    buf: String,
    pos: usize,
    /// Decoded-input offset of `buf[0]`.
    base: u64,
    cand: Option<Cand>,
    mode: Mode,
    run: Option<Run>,
    /// Only whitespace since the last newline (or the start).
    line_blank: bool,
    indent: u32,
    escaped: bool,
    prev: u8,
    prev_marker_end: bool,
    /// How many candidates were released because they outgrew the cap.
    pub(crate) overflows: u64,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            buf: String::new(),
            pos: 0,
            base: 0,
            cand: None,
            mode: Mode::Normal,
            run: None,
            line_blank: true,
            indent: 0,
            escaped: false,
            prev: b'\n',
            prev_marker_end: false,
            overflows: 0,
        }
    }
}

/// The verdict on a candidate.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Could still become a marker: wait for more input.
    More,
    /// Not a marker: release its first character as text and scan on.
    No,
    /// A marker of this many bytes.
    Marker(usize, Vec<Item>),
}

impl Scanner {
    /// The buffer to decode new input onto (the slow path: a candidate spans chunks).
    pub(crate) fn buf_mut(&mut self) -> &mut String {
        &mut self.buf
    }

    /// Whether the buffer holds text (a candidate or unscanned input).
    pub(crate) fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Takes the buffer out to scan it with [`Scanner::next`]; give it back with
    /// [`Scanner::put_back`].
    pub(crate) fn take_buf(&mut self) -> String {
        std::mem::take(&mut self.buf)
    }

    /// Gives the buffer back and drops what was consumed.
    pub(crate) fn put_back(&mut self, buf: String) {
        self.buf = buf;
        let keep = self.cand.map_or(self.pos, |c| c.start);
        if keep == 0 {
            return;
        }
        if keep == self.buf.len() {
            self.buf.clear();
            if self.buf.capacity() > 4096 {
                self.buf.shrink_to(256);
            }
        } else {
            self.buf.drain(..keep);
        }
        self.shift(keep);
    }

    /// After scanning outside text (the buffer was empty), keeps its unconsumed tail.
    #[inline]
    pub(crate) fn retain(&mut self, text: &str) {
        if self.cand.is_none() && self.pos == text.len() {
            self.base += text.len() as u64;
            self.pos = 0;
            return;
        }
        let keep = self.cand.map_or(self.pos, |c| c.start);
        if keep < text.len() {
            self.buf.push_str(&text[keep..]);
        }
        self.shift(keep);
    }

    fn shift(&mut self, keep: usize) {
        self.base += keep as u64;
        self.pos -= keep;
        if let Some(c) = &mut self.cand {
            c.start -= keep;
        }
    }

    /// Bytes held back (a candidate) or not yet scanned.
    pub(crate) fn held_bytes(&self) -> usize {
        self.buf.len()
    }

    /// The common case of a small chunk of plain text while nothing is held: passes it through
    /// and returns true; returns false (having done nothing) when the chunk needs the scanner.
    #[inline]
    pub(crate) fn pass_plain(&mut self, text: &str, cfg: &ScanConfig, out: &mut String) -> bool {
        if !self.skip_plain(text, cfg) {
            return false;
        }
        out.push_str(text);
        true
    }

    /// [`Scanner::pass_plain`] without the copy: when the chunk is small plain text and
    /// nothing is held, moves the scanner past it and returns true (the caller releases the
    /// chunk itself); otherwise does nothing and returns false.
    #[inline]
    pub(crate) fn skip_plain(&mut self, text: &str, cfg: &ScanConfig) -> bool {
        let bytes = text.as_bytes();
        if bytes.len() > 32
            || self.pos != 0
            || self.cand.is_some()
            || self.run.is_some()
            || self.mode != Mode::Normal
            || !self.buf.is_empty()
            || bytes.iter().any(|&b| cfg.is_interesting(b))
        {
            return false;
        }
        self.advance(bytes);
        self.base += bytes.len() as u64;
        true
    }

    /// Scans `text` (the buffer, or new input when the buffer is empty) from the current
    /// position. Plain text goes to `out`; returns the next marker, or `None` when everything
    /// that can be decided now is decided (with `eof`, when the input is exhausted).
    pub(crate) fn next(
        &mut self,
        text: &str,
        cfg: &ScanConfig,
        out: &mut String,
        eof: bool,
    ) -> Option<Marker> {
        loop {
            if let Some(c) = self.cand {
                let avail = &text[c.start..];
                let mut limit = avail.len().min(cfg.cap);
                while !avail.is_char_boundary(limit) {
                    limit -= 1;
                }
                let view = &avail[..limit];
                let view_eof = eof && limit == avail.len();
                match classify(view, view_eof, c, cfg) {
                    Verdict::More if limit < avail.len() || limit >= cfg.cap => {
                        self.overflows += 1;
                        self.release_first(text, c, out);
                    }
                    Verdict::More => return None,
                    Verdict::No => self.release_first(text, c, out),
                    Verdict::Marker(len, items) => {
                        let raw = avail[..len].to_owned();
                        self.cand = None;
                        self.pos = c.start + len;
                        self.line_blank = false;
                        self.escaped = false;
                        self.prev = *raw.as_bytes().last().unwrap_or(&b']');
                        self.prev_marker_end = true;
                        return Some(Marker {
                            raw,
                            items,
                            input_offset: self.base + c.start as u64,
                        });
                    }
                }
                continue;
            }
            if self.pos == text.len() {
                if eof {
                    if let Some(run) = self.run.take() {
                        self.end_run(run);
                    }
                }
                return None;
            }
            match self.mode {
                Mode::Normal => self.scan_normal(text, cfg, out),
                Mode::Code(n) => self.scan_code(text, n, out),
                Mode::Fence { ch, len, line } => self.scan_fence(text, ch, len, line, out),
            }
        }
    }

    /// Releases the candidate's first character as text; scanning resumes right after it.
    #[cold]
    fn release_first(&mut self, text: &str, c: Cand, out: &mut String) {
        let ch = text[c.start..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[c.start..c.start + ch]);
        self.pos = c.start + ch;
        self.cand = None;
        self.line_blank = false;
        self.escaped = false;
        self.prev = text.as_bytes()[self.pos - 1];
        self.prev_marker_end = false;
    }

    fn end_run(&mut self, run: Run) {
        match self.mode {
            Mode::Normal if run.ch == b'`' => {
                self.mode = if run.at_line_start && run.len >= 3 {
                    Mode::Fence {
                        ch: b'`',
                        len: run.len,
                        line: FenceLine::Other,
                    }
                } else {
                    Mode::Code(run.len)
                };
            }
            Mode::Normal if run.at_line_start && run.len >= 3 => {
                self.mode = Mode::Fence {
                    ch: run.ch,
                    len: run.len,
                    line: FenceLine::Other,
                };
            }
            Mode::Code(n) if run.len == n => self.mode = Mode::Normal,
            _ => {}
        }
    }

    /// Counts a run of `ch` from `i`; returns where it stopped. At the end of `bytes` the run
    /// stays open; otherwise it ends (and may switch the mode).
    fn count_run(&mut self, bytes: &[u8], mut i: usize) -> usize {
        if let Some(mut run) = self.run.take() {
            while i < bytes.len() && bytes[i] == run.ch {
                run.len += 1;
                i += 1;
            }
            if i == bytes.len() {
                self.run = Some(run);
            } else {
                self.end_run(run);
            }
        }
        i
    }

    /// Updates the line, escape and previous-byte state over plain bytes.
    #[inline]
    fn advance(&mut self, region: &[u8]) {
        let Some(&last) = region.last() else {
            return;
        };
        if !self.line_blank && last != b'\\' && region.len() < 16 && !region.contains(&b'\n') {
            self.escaped = false;
            self.prev = last;
            self.prev_marker_end = false;
            return;
        }
        let newline = if region.len() < 16 {
            region.iter().rposition(|&c| c == b'\n')
        } else {
            memchr::memrchr(b'\n', region)
        };
        let tail = match newline {
            Some(p) => {
                self.line_blank = true;
                self.indent = 0;
                &region[p + 1..]
            }
            None => region,
        };
        if self.line_blank {
            for &c in tail {
                match c {
                    b' ' | b'\r' => self.indent += 1,
                    b'\t' => self.indent += 4,
                    _ => {
                        self.line_blank = false;
                        break;
                    }
                }
            }
        }
        let slashes = region.iter().rev().take_while(|&&c| c == b'\\').count();
        self.escaped = if slashes == region.len() {
            self.escaped ^ (slashes % 2 == 1)
        } else {
            slashes % 2 == 1
        };
        self.prev = last;
        self.prev_marker_end = false;
    }

    fn scan_normal(&mut self, text: &str, cfg: &ScanConfig, out: &mut String) {
        let bytes = text.as_bytes();
        let from = self.pos;
        let mut i = self.count_run(bytes, from);
        if i > from {
            self.line_blank = false;
            self.escaped = false;
            self.prev = bytes[i - 1];
            self.prev_marker_end = false;
        }
        while i < bytes.len() && self.mode == Mode::Normal && self.run.is_none() {
            let j = cfg.find_interesting(bytes, i);
            self.advance(&bytes[i..j]);
            i = j;
            if i == bytes.len() {
                break;
            }
            let b = bytes[i];
            let at_line_start = self.line_blank && self.indent <= 3;
            let starts = match b {
                b'[' => cfg.brackets(),
                b'<' => cfg.colon || cfg.tag,
                0xE3 => cfg.lenticular() && bytes[i..].starts_with("【".as_bytes()),
                0xEF => cfg.fullwidth() && bytes[i..].starts_with("［".as_bytes()),
                0xEE => cfg.openai && bytes[i..].starts_with(OPENAI_OPEN.as_bytes()),
                _ if cfg.bare && b == cfg.shape.prefix().as_bytes()[0] => {
                    !(self.prev.is_ascii_alphanumeric() || self.prev == b'_')
                }
                _ => false,
            };
            if starts && !self.escaped {
                self.cand = Some(Cand {
                    start: i,
                    at_line_start,
                    after_plain_bracket: self.prev == b']' && !self.prev_marker_end,
                });
                break;
            }
            if cfg.skip_code && (b == b'`' || (b == b'~' && at_line_start)) {
                self.run = Some(Run {
                    ch: b,
                    len: 0,
                    at_line_start,
                });
                let end = self.count_run(bytes, i);
                self.line_blank = false;
                self.escaped = false;
                self.prev = b;
                self.prev_marker_end = false;
                i = end;
                continue;
            }
            let len = utf8_len(b);
            self.advance(&bytes[i..i + len]);
            i += len;
        }
        out.push_str(&text[from..i]);
        self.pos = i;
    }

    #[inline(never)]
    fn scan_code(&mut self, text: &str, n: u32, out: &mut String) {
        let bytes = text.as_bytes();
        let mut i = self.count_run(bytes, self.pos);
        if i > self.pos {
            self.line_blank = false;
        }
        while i < bytes.len() && self.mode == Mode::Code(n) && self.run.is_none() {
            match bytes[i] {
                b'`' => {
                    self.run = Some(Run {
                        ch: b'`',
                        len: 0,
                        at_line_start: false,
                    });
                    self.line_blank = false;
                    i = self.count_run(bytes, i);
                    continue;
                }
                b'\n' if self.line_blank => {
                    // A blank line ends the paragraph, and with it an unclosed code span.
                    self.mode = Mode::Normal;
                    self.indent = 0;
                }
                b'\n' => self.line_blank = true,
                b' ' | b'\t' | b'\r' => {}
                _ => {
                    self.line_blank = false;
                    i += memchr::memchr2(b'`', b'\n', &bytes[i..]).unwrap_or(bytes.len() - i);
                    continue;
                }
            }
            i += 1;
        }
        self.finish_opaque(text, i, out);
    }

    #[inline(never)]
    fn scan_fence(&mut self, text: &str, ch: u8, len: u32, mut line: FenceLine, out: &mut String) {
        let bytes = text.as_bytes();
        let mut i = self.pos;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'\n' {
                if matches!(line, FenceLine::Run(k) if k >= len) || line == FenceLine::Trail {
                    self.mode = Mode::Normal;
                    self.line_blank = true;
                    self.indent = 0;
                    self.finish_opaque(text, i + 1, out);
                    return;
                }
                line = FenceLine::Start(0);
                i += 1;
                continue;
            }
            line = match line {
                FenceLine::Start(k) if b == b' ' && k < 3 => FenceLine::Start(k + 1),
                FenceLine::Start(_) if b == ch => FenceLine::Run(1),
                FenceLine::Run(k) if b == ch => FenceLine::Run(k + 1),
                FenceLine::Run(k) if k >= len && matches!(b, b' ' | b'\t' | b'\r') => {
                    FenceLine::Trail
                }
                FenceLine::Trail if matches!(b, b' ' | b'\t' | b'\r') => FenceLine::Trail,
                _ => FenceLine::Other,
            };
            if line == FenceLine::Other {
                i += memchr::memchr(b'\n', &bytes[i..]).unwrap_or(bytes.len() - i);
            } else {
                i += 1;
            }
        }
        self.mode = Mode::Fence { ch, len, line };
        self.finish_opaque(text, i, out);
    }

    /// Passes code text through up to `i`.
    fn finish_opaque(&mut self, text: &str, i: usize, out: &mut String) {
        if i > self.pos {
            out.push_str(&text[self.pos..i]);
            self.prev = text.as_bytes()[i - 1];
            self.escaped = false;
            self.prev_marker_end = false;
        }
        self.pos = i;
    }
}

fn utf8_len(b: u8) -> usize {
    match b {
        0..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(text: &str, settings: &Settings, ids: &[&str]) -> (String, Vec<String>) {
        let cfg = ScanConfig::new(settings, ids.iter().copied());
        let mut s = Scanner::default();
        let mut out = String::new();
        let mut markers = Vec::new();
        while let Some(m) = s.next(text, &cfg, &mut out, true) {
            out.push('#');
            markers.push(m.raw);
        }
        (out, markers)
    }

    #[test]
    fn finds_every_default_syntax() {
        let s = Settings::default();
        let (out, m) = scan_all(
            "a [[source_1]] b <cite:source_2> c <cite id=\"source_3\"/> d [source_4] e",
            &s,
            &[],
        );
        assert_eq!(out, "a # b # c # d # e");
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn links_and_definitions_are_not_markers() {
        let s = Settings::default();
        for t in [
            "[source_1](http://x)",
            "[source_1]: http://x",
            "see [doc][source_1]",
            "\\[source_1]",
            "`[source_1]`",
            "```\n[source_1]\n```",
            "[x]",
            "[ source_1]",
            "[source_1 ]",
        ] {
            let (out, m) = scan_all(t, &s, &[]);
            assert!(m.is_empty(), "{t:?} gave {m:?}");
            assert_eq!(out, t);
        }
    }

    #[test]
    fn adjacent_markers_both_count() {
        let (out, m) = scan_all("x [source_1][source_3].", &Settings::default(), &[]);
        assert_eq!(out, "x ##.");
        assert_eq!(m, ["[source_1]", "[source_3]"]);
    }

    #[test]
    fn ranks_need_rank_mode() {
        let t = "a [2] b 【1】 c ［3］ d [2, 5] e 【1904年】";
        let (_, m) = scan_all(t, &Settings::default(), &[]);
        assert!(m.is_empty());
        let s = Settings::default().with_rank(RankMode::Renumber);
        let (out, m) = scan_all(t, &s, &[]);
        assert_eq!(out, "a # b # c # d # e 【1904年】");
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn doubled_full_width_brackets_are_one_marker() {
        let s = Settings::default().with_rank(RankMode::Renumber);
        let t = "a【【1】】b［［２］］c【【source_3】】d【【注意】】e【【1】x";
        let (out, m) = scan_all(t, &s, &[]);
        assert_eq!(m, ["【【1】】", "［［２］］", "【【source_3】】", "【1】"]);
        assert_eq!(out, "a#b#c#d【【注意】】e【#x");
    }

    #[test]
    fn openai_private_use_markers() {
        let s = Settings::default();
        let t = "a\u{e200}cite\u{e202}turn0search1\u{e202}turn0news3\u{e201} b\u{e200}filecite\u{e202}turn0file0\u{e201} c\u{e200}navlist\u{e202}x\u{e201} d\u{e200}cite\u{e202}\u{e201}";
        let cfg = ScanConfig::new(&s, std::iter::empty());
        let mut sc = Scanner::default();
        let mut out = String::new();
        let m = sc.next(t, &cfg, &mut out, true).unwrap();
        assert_eq!(
            m.items,
            [
                Item::Id("turn0search1".into()),
                Item::Id("turn0news3".into())
            ]
        );
        let (out, m) = scan_all(t, &s, &[]);
        assert_eq!(m.len(), 2);
        assert_eq!(
            out,
            "a# b# c\u{e200}navlist\u{e202}x\u{e201} d\u{e200}cite\u{e202}\u{e201}"
        );
        let off = Settings::default().with_syntaxes(&[Syntax::DoubleBracket]);
        assert!(scan_all(t, &off, &[]).1.is_empty());
    }

    #[test]
    fn assistants_annotations() {
        let s = Settings::default();
        let t = "a【4:0†source】 b【12†report.pdf】 c【4:0†】 d【4:†x】 e【1234567†x】 f【1†x\ny】";
        let (out, m) = scan_all(t, &s, &[]);
        assert_eq!(m, ["【4:0†source】", "【12†report.pdf】"]);
        assert_eq!(out, "a# b# c【4:0†】 d【4:†x】 e【1234567†x】 f【1†x\ny】");
        let cfg = ScanConfig::new(&s, std::iter::empty());
        let mut out = String::new();
        let m = Scanner::default().next(t, &cfg, &mut out, true).unwrap();
        assert_eq!(m.items, [Item::Id("4:0".into())]);
    }

    #[test]
    fn footnote_references_when_enabled() {
        let t = "a[^source_1] b[^2] c[^x]\n[^source_3]: def\nd [^source_4](u) e[^1, 2]";
        assert!(scan_all(t, &Settings::default(), &[]).1.is_empty());
        let s = Settings::default()
            .with_syntaxes(&[Syntax::Footnote])
            .with_rank(RankMode::Renumber);
        let (out, m) = scan_all(t, &s, &[]);
        assert_eq!(m, ["[^source_1]", "[^2]"]);
        assert_eq!(
            out,
            "a# b# c[^x]\n[^source_3]: def\nd [^source_4](u) e[^1, 2]"
        );
    }

    #[test]
    fn fence_closes_only_on_a_fence_line() {
        let t = "```\na [source_1] ``` b\n```\n[source_2]";
        let (out, m) = scan_all(t, &Settings::default(), &[]);
        assert_eq!(m, ["[source_2]"]);
        assert_eq!(out, "```\na [source_1] ``` b\n```\n#");
    }

    #[test]
    fn unclosed_code_span_ends_at_blank_line() {
        let t = "a `b [source_1]\n\n[source_2]";
        let (_, m) = scan_all(t, &Settings::default(), &[]);
        assert_eq!(m, ["[source_2]"]);
    }

    #[test]
    fn registered_ids_of_any_shape_count() {
        let (_, m) = scan_all("x [doc-a#3] y", &Settings::default(), &["doc-a#3"]);
        assert_eq!(m, ["[doc-a#3]"]);
    }

    #[test]
    fn a_registered_id_of_digits_is_an_id_not_a_rank() {
        let s = Settings::default().with_rank(RankMode::Renumber);
        let items = |ids: &[&str], text: &str| {
            let cfg = ScanConfig::new(&s, ids.iter().copied());
            let mut out = String::new();
            let m = Scanner::default().next(text, &cfg, &mut out, true);
            m.map(|m| m.items)
        };
        let id = |s: &str| Item::Id(s.into());
        assert_eq!(
            items(&["12"], "a [12, 3] b"),
            Some(vec![id("12"), Item::Rank(3)])
        );
        assert_eq!(items(&["１２"], "a [１２] b"), Some(vec![id("１２")]));
        assert_eq!(items(&["a1"], "a [12] b"), Some(vec![Item::Rank(12)]));
        assert_eq!(items(&[], "a [[12]] b"), Some(vec![Item::Rank(12)]));
        assert_eq!(items(&["12"], "a [[12]] b"), Some(vec![id("12")]));
    }

    #[test]
    fn bare_ids_need_word_boundaries() {
        let s = Settings::default().with_syntaxes(&[Syntax::BareId]);
        let (out, m) = scan_all(
            "as source_3 said, xsource_4 and source_5x; source_6",
            &s,
            &[],
        );
        assert_eq!(m, ["source_3", "source_6"]);
        assert_eq!(out, "as # said, xsource_4 and source_5x; #");
    }
}
