//! Whitespace repair for [`Style::Remove`](crate::Style::Remove): markers are taken out of the
//! text, and the spaces around them with them where they would be doubled or stand before
//! punctuation (`Text [1].` → `Text.`, `a [1] b` → `a b`).
//!
//! The repair sits where text leaves the rewriter. Trailing spaces and tabs of every text are
//! withheld (a marker may follow them); what comes next decides them:
//!
//! * text, no marker between: the withheld spaces are emitted before it;
//! * a removed marker, then whitespace or closing punctuation (`.`, `,`, `)`, `。`, …) or the
//!   end: the withheld spaces are dropped (the whitespace after the marker stays);
//! * a removed marker, then anything else: the withheld spaces are emitted (`a [1]b` → `a b`);
//! * a removed marker at the start of a line: the spaces after it are dropped.
//!
//! Only spaces and tabs are ever dropped, and only next to a removed marker where whitespace
//! or punctuation remains on the other side, so no two words are joined and none are split.
//! Every decision depends on the text around the marker, not on where the chunks were cut.

/// The repair state; it serialises with the rewriter's snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Repair {
    /// Spaces and tabs withheld from the end of the text so far (before a marker, if one
    /// follows).
    before: String,
    /// Spaces and tabs after a removed marker, while nothing else has followed it.
    after: String,
    /// A marker was removed after `before`, and no text but spaces has followed it yet.
    after_marker: bool,
    /// The removed marker stood at the start of a line: the spaces after it are dropped.
    drop_leading: bool,
    /// Something was emitted and it did not end with a line break.
    mid_line: bool,
    /// The stream ended: nothing more is withheld.
    ended: bool,
}

/// How the text after a removed marker moved, for the rewriter's offset map: the input
/// `input_skip` bytes after the marker is `output_prefix` bytes after its place in the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shift {
    /// Input bytes of spaces after the marker that were taken (dropped or replaced).
    pub(crate) input_skip: u64,
    /// Output bytes of spaces emitted in the marker's place.
    pub(crate) output_prefix: u64,
}

impl Repair {
    /// Repairs `s`, the next text to leave the rewriter; returns what to emit now (possibly
    /// empty) and, when the text after a removed marker was decided, how it moved.
    pub(crate) fn take(&mut self, mut s: String) -> (String, Option<Shift>) {
        let mut shift = None;
        if s.is_empty() {
            return (s, shift);
        }
        if self.after_marker {
            let rest = s.trim_start_matches([' ', '\t']).len();
            self.after.push_str(&s[..s.len() - rest]);
            s.drain(..s.len() - rest);
            if s.is_empty() {
                return (s, shift);
            }
            let first = s.chars().next().unwrap_or(' ');
            let input_skip = self.after.len() as u64;
            let prefix = if first.is_whitespace() || is_closing(first) {
                String::new()
            } else if !self.before.is_empty() {
                std::mem::take(&mut self.before)
            } else if self.drop_leading {
                String::new()
            } else {
                std::mem::take(&mut self.after)
            };
            shift = Some(Shift {
                input_skip,
                output_prefix: prefix.len() as u64,
            });
            s.insert_str(0, &prefix);
            self.before.clear();
            self.after.clear();
            self.after_marker = false;
            self.drop_leading = false;
        } else if !self.before.is_empty() {
            s.insert_str(0, &self.before);
            self.before.clear();
        }
        if !self.ended {
            let kept = s.trim_end_matches([' ', '\t']).len();
            self.before.push_str(&s[kept..]);
            s.truncate(kept);
        }
        if let Some(last) = s.chars().last() {
            self.mid_line = last != '\n';
        }
        (s, shift)
    }

    /// A marker was taken out of the text here (nothing was rendered for it).
    pub(crate) fn marker_removed(&mut self) {
        if !self.after_marker {
            self.after_marker = true;
            self.drop_leading = !self.mid_line;
        }
    }

    /// Something is rendered in place of a marker (an unresolved marker kept as written):
    /// the withheld spaces go before it, as text would.
    pub(crate) fn release(&mut self, out: &mut String) {
        if !self.after_marker || !self.before.is_empty() {
            out.push_str(&self.before);
        } else if !self.drop_leading {
            out.push_str(&self.after);
        }
        self.before.clear();
        self.after.clear();
        self.after_marker = false;
        self.drop_leading = false;
    }

    /// The end of the stream, before the last text (`out`, possibly empty) is taken:
    /// nothing is withheld from now on, and spaces after a removed marker are dropped.
    pub(crate) fn finish(&mut self, out: &mut String) {
        self.ended = true;
        if out.is_empty() {
            if !self.after_marker {
                out.push_str(&self.before);
            }
            self.before.clear();
            self.after.clear();
            self.after_marker = false;
        }
    }
}

/// Punctuation that closes what precedes it: no space goes before it.
fn is_closing(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | ';'
            | ':'
            | '!'
            | '?'
            | ')'
            | ']'
            | '}'
            | '%'
            | '…'
            | '”'
            | '’'
            | '»'
            | '。'
            | '、'
            | '，'
            | '．'
            | '！'
            | '？'
            | '；'
            | '：'
            | '）'
            | '」'
            | '』'
            | '】'
            | '〕'
            | '〉'
            | '》'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs pieces of text, `None` standing for a removed marker.
    fn repair(pieces: &[Option<&str>]) -> String {
        let mut r = Repair::default();
        let mut out = String::new();
        for p in pieces {
            match p {
                Some(t) => out.push_str(&r.take((*t).to_owned()).0),
                None => r.marker_removed(),
            }
        }
        let mut tail = String::new();
        r.finish(&mut tail);
        out.push_str(&r.take(tail).0);
        out
    }

    #[test]
    fn the_last_text_keeps_the_spaces_before_it() {
        let mut r = Repair::default();
        assert_eq!(r.take(" ".to_owned()).0, "");
        let mut last = "x ".to_owned();
        r.finish(&mut last);
        assert_eq!(r.take(last).0, " x ");
    }

    #[test]
    fn spaces_around_removed_markers() {
        let m = None;
        for (pieces, want) in [
            (vec![Some("Text "), m, Some(".")], "Text."),
            (vec![Some("a "), m, Some(" b")], "a b"),
            (vec![Some("a "), m, m, Some(" b")], "a b"),
            (vec![Some("a "), m, Some("b")], "a b"),
            (vec![Some("a"), m, Some(" b")], "a b"),
            (vec![Some("a"), m, Some("b")], "ab"),
            (vec![Some("end "), m], "end"),
            (vec![m, Some(" Start")], "Start"),
            (vec![Some("x\n"), m, Some(" y")], "x\ny"),
            (vec![Some("x\n  "), m, Some(" y")], "x\n  y"),
            (vec![Some("東京"), m, Some("、パリ")], "東京、パリ"),
            (vec![Some("(see "), m, Some(")")], "(see)"),
            (vec![Some("a  "), Some("b  ")], "a  b  "),
            (vec![Some("a "), m, Some("\nb")], "a\nb"),
        ] {
            assert_eq!(repair(&pieces), want, "{pieces:?}");
        }
    }

    #[test]
    fn cuts_do_not_change_the_repair() {
        let m = None;
        assert_eq!(
            repair(&[Some("a"), Some(" "), Some(" "), m, Some(" "), Some(".")]),
            repair(&[Some("a  "), m, Some(" .")])
        );
    }
}
