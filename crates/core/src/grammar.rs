//! GBNF grammars (llama.cpp's constrained decoding) that keep citation markers well-formed:
//! outside a marker the model may write anything but the marker's opening character; a
//! marker must name a source it was shown. Kept beside the scanner so that what the model is
//! allowed to write is exactly what the scanner recognises.

#[cfg(feature = "serde")]
use crate::error::SettingsError;
#[cfg(feature = "serde")]
use crate::names;
use crate::prompt::PromptMarker;

/// The grammar a small local model answers under, with
/// [`SMALL_MODEL_MARKER`](crate::SMALL_MODEL_MARKER) and
/// [`few_shot_messages`](crate::few_shot_messages): the only setting measured that made
/// SmolLM2-135M cite in most answers (9 of 12, against 0 to 2 of 12 without a grammar or with
/// [`GrammarMode::RequireCitation`]; `crates/llm/README.md`).
pub const SMALL_MODEL_GRAMMAR: GrammarMode = GrammarMode::CitePerSentence;

/// How strict a [`citation_grammar`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum GrammarMode {
    /// Markers, when written, name a source shown; the answer may cite nothing.
    WellFormed,
    /// As `WellFormed`, and the answer must cite at least once before it may end.
    RequireCitation,
    /// Every sentence is at most 160 characters of text and ends with one to three markers
    /// before its full stop (`…text [2].`); plain text may then hold no `.`, `!`, `?`, `。`
    /// or line break. The cap keeps a small model from stacking markers to its token limit
    /// (`[3][1][2][1][1]…`), which it did with no cap.
    CitePerSentence,
}

#[cfg(feature = "serde")]
impl GrammarMode {
    /// Parses a serde name: `well_formed`, `require_citation` or `cite_per_sentence` (the same
    /// as [`FromStr`](core::str::FromStr); kept for callers that name the type).
    ///
    /// # Errors
    /// [`SettingsError::UnknownName`] for anything else.
    pub fn from_name(name: &str) -> Result<Self, SettingsError> {
        name.parse()
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
/// one of the sources' markers exactly as [`PromptMarker::marker`] writes it. With no ids,
/// no marker is possible whatever the mode.
///
/// ```
/// use citeflow_core::{citation_grammar, GrammarMode, PromptMarker};
///
/// let g = citation_grammar(PromptMarker::Rank, &["a", "b"], GrammarMode::WellFormed);
/// assert_eq!(g, "root ::= (text | marker)*\ntext ::= [^\\[]\nmarker ::= \"[1]\" | \"[2]\"\n");
/// ```
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
        return format!("root ::= text*\ntext ::= {opener}\n");
    }
    let markers = markers.join(" | ");
    let (root, text) = match mode {
        GrammarMode::WellFormed => ("root ::= (text | marker)*", opener.to_owned()),
        GrammarMode::RequireCitation => {
            ("root ::= text* marker (text | marker)*", opener.to_owned())
        }
        GrammarMode::CitePerSentence => (
            "root ::= sentence (\" \" sentence)*\nsentence ::= text{1,160} \" \"? marker{1,3} [.!?。]",
            format!("{}.!?。\\n]", &opener[..opener.len() - 1]),
        ),
    };
    format!("{root}\ntext ::= {text}\nmarker ::= {markers}\n")
}

#[cfg(feature = "serde")]
names::by_serde_name!(GrammarMode => "grammar mode");

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
            "root ::= sentence (\" \" sentence)*\nsentence ::= text{1,160} \" \"? marker{1,3} [.!?。]\ntext ::= [^\\[.!?。\\n]\nmarker ::= \"[1]\"\n"
        );
        let g = citation_grammar(
            PromptMarker::CiteColon,
            &["x"],
            GrammarMode::CitePerSentence,
        );
        assert!(g.contains("text ::= [^<.!?。\\n]"), "{g}");
    }

    #[test]
    fn grammar_without_sources_allows_no_marker() {
        for mode in [
            GrammarMode::WellFormed,
            GrammarMode::RequireCitation,
            GrammarMode::CitePerSentence,
        ] {
            assert_eq!(
                citation_grammar(PromptMarker::Rank, &[], mode),
                "root ::= text*\ntext ::= [^\\[]\n"
            );
        }
    }

    #[cfg(feature = "serde")]
    #[test]
    fn grammar_mode_names_round_trip() {
        for mode in [
            GrammarMode::WellFormed,
            GrammarMode::RequireCitation,
            GrammarMode::CitePerSentence,
        ] {
            assert_eq!(GrammarMode::from_name(&mode.to_string()), Ok(mode));
        }
        assert!(GrammarMode::from_name("strict").is_err());
    }
}
