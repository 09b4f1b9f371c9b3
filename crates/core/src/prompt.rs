//! What the model is told: the sources, each labelled with the marker to copy, and the
//! citation instruction. Kept beside the scanner so that what the model is asked to write is
//! exactly what the scanner recognises.

use crate::settings::{RankMode, Settings, Syntax};
use crate::source::{Source, Sources};

/// The marker form the model is asked to write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum PromptMarker {
    /// `[[source_3]]`.
    #[default]
    DoubleBracket,
    /// `<cite:source_3>`.
    CiteColon,
    /// `<cite id="source_3"/>`.
    CiteTag,
    /// `[source_3]`.
    SingleBracket,
    /// `[2]`: the source's rank.
    Rank,
    /// `【2】`: the source's rank, full-width; book sources are shown as `【2】(章:…, CFI:…)`.
    RankFullWidth,
}

impl PromptMarker {
    /// Parses `double_bracket`, `cite_colon`, `cite_tag`, `single_bracket`, `rank`,
    /// `rank_full_width`.
    ///
    /// # Errors
    /// [`SettingsError::UnknownName`](crate::SettingsError::UnknownName) for anything else.
    pub fn from_name(name: &str) -> Result<Self, crate::SettingsError> {
        Ok(match name {
            "double_bracket" => PromptMarker::DoubleBracket,
            "cite_colon" => PromptMarker::CiteColon,
            "cite_tag" => PromptMarker::CiteTag,
            "single_bracket" => PromptMarker::SingleBracket,
            "rank" => PromptMarker::Rank,
            "rank_full_width" | "rank_fullwidth" => PromptMarker::RankFullWidth,
            _ => {
                return Err(crate::SettingsError::UnknownName {
                    what: "prompt marker",
                    value: name.to_owned(),
                })
            }
        })
    }

    /// The marker for the source with this id and 1-based rank.
    pub fn marker(self, id: &str, rank: usize) -> String {
        match self {
            PromptMarker::DoubleBracket => format!("[[{id}]]"),
            PromptMarker::CiteColon => format!("<cite:{id}>"),
            PromptMarker::CiteTag => format!("<cite id=\"{id}\"/>"),
            PromptMarker::SingleBracket => format!("[{id}]"),
            PromptMarker::Rank => format!("[{rank}]"),
            PromptMarker::RankFullWidth => format!("【{rank}】"),
        }
    }

    /// Whether the marker is a rank.
    pub fn is_rank(self) -> bool {
        matches!(self, PromptMarker::Rank | PromptMarker::RankFullWidth)
    }

    /// Settings whose scanner recognises this marker (on top of `base`): rank markers switch
    /// rank mode on (renumbering) unless `base` already has one.
    pub fn settings(self, base: Settings) -> Settings {
        match self {
            PromptMarker::Rank | PromptMarker::RankFullWidth if base.rank() == RankMode::Off => {
                base.with_rank(RankMode::Renumber)
            }
            PromptMarker::DoubleBracket if !base.has_syntax(Syntax::DoubleBracket) => {
                let mut s = base.syntaxes();
                s.push(Syntax::DoubleBracket);
                base.with_syntaxes(&s)
            }
            PromptMarker::CiteColon if !base.has_syntax(Syntax::CiteColon) => {
                let mut s = base.syntaxes();
                s.push(Syntax::CiteColon);
                base.with_syntaxes(&s)
            }
            PromptMarker::CiteTag if !base.has_syntax(Syntax::CiteTag) => {
                let mut s = base.syntaxes();
                s.push(Syntax::CiteTag);
                base.with_syntaxes(&s)
            }
            PromptMarker::SingleBracket if !base.has_syntax(Syntax::SingleBracket) => {
                let mut s = base.syntaxes();
                s.push(Syntax::SingleBracket);
                base.with_syntaxes(&s)
            }
            _ => base,
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn locator_note(s: &Source, marker: PromptMarker) -> String {
    let Some(loc) = &s.locator else {
        return String::new();
    };
    let chapter = loc.chapter_title.as_deref();
    match (marker, chapter, loc.cfi.as_deref()) {
        (PromptMarker::RankFullWidth, Some(c), Some(cfi)) => format!("(章:{c}, CFI:{cfi}) "),
        (PromptMarker::RankFullWidth, Some(c), None) => format!("(章:{c}) "),
        (_, Some(c), Some(cfi)) => format!("(chapter: {c}, CFI: {cfi}) "),
        (_, Some(c), None) => format!("(chapter: {c}) "),
        (_, None, Some(cfi)) => format!("(CFI: {cfi}) "),
        _ => String::new(),
    }
}

/// The sources block: one line a source, `MARKER (chapter…) Title: text`, texts cut to
/// `max_chars_per_source` characters.
pub fn context_block(
    sources: &Sources,
    marker: PromptMarker,
    max_chars_per_source: usize,
) -> String {
    let mut out = String::new();
    for (i, s) in sources.iter().enumerate() {
        let body = s
            .text
            .as_deref()
            .or(s.snippet.as_deref())
            .map(one_line)
            .unwrap_or_default();
        let body: String = body.chars().take(max_chars_per_source).collect();
        out.push_str(&marker.marker(&s.id, i + 1));
        out.push(' ');
        out.push_str(&locator_note(s, marker));
        if let Some(t) = &s.title {
            out.push_str(&one_line(t));
            if !body.is_empty() {
                out.push_str(": ");
            }
        }
        out.push_str(&body);
        out.push('\n');
    }
    out
}

/// The instruction that asks the model to cite with `marker`, using the first source as the
/// example.
pub fn citation_instruction(sources: &Sources, marker: PromptMarker) -> String {
    let example = sources
        .iter()
        .next()
        .map_or_else(|| marker.marker("source_1", 1), |s| marker.marker(&s.id, 1));
    format!(
        "Answer using only the sources below. After each sentence that uses a source, write its \
         marker exactly as shown, for example {example}. Cite several sources as {example}{}. Do \
         not invent markers; if the sources do not answer the question, say so.",
        sources
            .iter()
            .nth(1)
            .map_or_else(String::new, |s| marker.marker(&s.id, 2))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Locator;

    #[test]
    fn block_labels_each_source_with_its_marker() {
        let s = Sources::from_vec(vec![
            Source::new("source_3")
                .with_title("Paris")
                .with_text("Paris is\nthe capital."),
            Source::new("b1").with_title("Alice").with_locator(Locator {
                chapter_title: Some("Down the Rabbit-Hole".into()),
                cfi: Some("epubcfi(/6/8!/4/2/1:0)".into()),
                ..Locator::default()
            }),
        ])
        .unwrap();
        assert_eq!(
            context_block(&s, PromptMarker::DoubleBracket, 100),
            "[[source_3]] Paris: Paris is the capital.\n[[b1]] (chapter: Down the Rabbit-Hole, CFI: epubcfi(/6/8!/4/2/1:0)) Alice\n"
        );
        assert_eq!(
            context_block(&s, PromptMarker::RankFullWidth, 5),
            "【1】 Paris: Paris\n【2】 (章:Down the Rabbit-Hole, CFI:epubcfi(/6/8!/4/2/1:0)) Alice\n"
        );
        assert!(
            citation_instruction(&s, PromptMarker::CiteColon).contains("<cite:source_3><cite:b1>")
        );
    }

    #[test]
    fn every_prompt_marker_is_recognised_by_its_settings() {
        let s = Sources::from_vec(vec![Source::new("source_3"), Source::new("source_7")]).unwrap();
        for m in [
            PromptMarker::DoubleBracket,
            PromptMarker::CiteColon,
            PromptMarker::CiteTag,
            PromptMarker::SingleBracket,
            PromptMarker::Rank,
            PromptMarker::RankFullWidth,
        ] {
            let settings = m.settings(Settings::default().with_syntaxes(&[]));
            let text = format!(
                "a {} b {}",
                m.marker("source_7", 2),
                m.marker("source_3", 1)
            );
            let out =
                crate::rewrite_str(&text, settings, s.clone(), crate::Numbering::new()).unwrap();
            assert_eq!(out.text, "a [1] b [2]", "{m:?}");
        }
    }
}
