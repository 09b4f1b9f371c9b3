//! GBNF grammars that keep citation markers well-formed: outside a marker the model may write
//! anything but the marker's opening character; a marker must name a source it was shown.

use citeflow_core::PromptMarker;

/// How strict a [`citation_grammar`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrammarMode {
    /// Markers, when written, name a source shown; the answer may cite nothing.
    WellFormed,
    /// As `WellFormed`, and the answer must cite at least once before it may end.
    RequireCitation,
    /// Every sentence is at most 160 characters of text and ends with one or more markers
    /// before its full stop (`…text [2].`); plain text may then hold no `.`, `!`, `?`, `。`
    /// or line break.
    CitePerSentence,
}

impl GrammarMode {
    /// `well_formed` or `require_citation`.
    pub fn name(self) -> &'static str {
        match self {
            GrammarMode::WellFormed => "well_formed",
            GrammarMode::RequireCitation => "require_citation",
            GrammarMode::CitePerSentence => "cite_per_sentence",
        }
    }
}

fn literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF grammar (root rule `root`) for answers citing `ids` (in rank order) with `marker`.
///
/// Plain text may hold any character except the one that opens a marker (`[` for the
/// bracket and rank forms, `<` for the tag forms, `【` for full-width ranks); every marker is
/// one of the sources' markers exactly as [`PromptMarker::marker`] writes it.
pub fn citation_grammar(marker: PromptMarker, ids: &[&str], mode: GrammarMode) -> String {
    let opener = match marker {
        PromptMarker::CiteColon | PromptMarker::CiteTag => "[^<]",
        PromptMarker::RankFullWidth => "[^【]",
        _ => "[^\\[]",
    };
    let markers: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| literal(&marker.marker(id, i + 1)))
        .collect();
    if markers.is_empty() {
        // Nothing to cite: no marker is possible, whatever the mode.
        return format!("root ::= text*\ntext ::= {opener}\n");
    }
    let markers = markers.join(" | ");
    let (root, text) = match mode {
        GrammarMode::WellFormed => ("root ::= (text | marker)*", opener.to_owned()),
        GrammarMode::RequireCitation => {
            ("root ::= text* marker (text | marker)*", opener.to_owned())
        }
        GrammarMode::CitePerSentence => (
            "root ::= sentence (\" \" sentence)*\nsentence ::= text{1,160} \" \"? marker+ [.!?。]",
            format!("{}.!?。\\n]", &opener[..opener.len() - 1]),
        ),
    };
    format!("{root}\ntext ::= {text}\nmarker ::= {markers}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_lists_each_marker() {
        let g = citation_grammar(
            PromptMarker::DoubleBracket,
            &["a#p1", "b\"2"],
            GrammarMode::RequireCitation,
        );
        assert_eq!(
            g,
            "root ::= text* marker (text | marker)*\ntext ::= [^\\[]\nmarker ::= \"[[a#p1]]\" | \"[[b\\\"2]]\"\n"
        );
        let g = citation_grammar(
            PromptMarker::RankFullWidth,
            &["x", "y"],
            GrammarMode::WellFormed,
        );
        assert!(g.contains("marker ::= \"【1】\" | \"【2】\""), "{g}");
        assert!(g.contains("text ::= [^【]"), "{g}");
        let g = citation_grammar(PromptMarker::Rank, &["x"], GrammarMode::CitePerSentence);
        assert_eq!(
            g,
            "root ::= sentence (\" \" sentence)*\nsentence ::= text{1,160} \" \"? marker+ [.!?。]\ntext ::= [^\\[.!?。\\n]\nmarker ::= \"[1]\"\n"
        );
    }
}
