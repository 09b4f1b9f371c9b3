//! What the model is told: the sources, each labelled with the marker to copy, the citation
//! instruction, and whole prompts (the proxy's zero-shot form and a few-shot form for small
//! models). Kept beside the scanner so that what the model is asked to write is exactly what
//! the scanner recognises.

#[cfg(feature = "serde")]
mod read;

pub use read::read_context_block;

use crate::names;
use crate::settings::{RankMode, Settings, Syntax};
use crate::source::{Source, Sources};

/// The marker a small local model is asked to write, with [`few_shot_messages`] and
/// [`SMALL_MODEL_GRAMMAR`](crate::SMALL_MODEL_GRAMMAR). Chosen by measurement
/// (SmolLM2-135M-Instruct, 12 questions about the bundled books, `crates/llm/README.md`): with
/// that prompt and grammar every marker form cited in 9 of 12 answers, and without the grammar
/// at most 2 of 12. Ranks are the shortest markers: a book passage id costs about ten tokens,
/// and 8 of the 18 citing answers with `[[id]]` or `<cite:id>` ended in a marker cut off by
/// `max_tokens`, against 1 of 9 with `[n]`.
pub const SMALL_MODEL_MARKER: PromptMarker = PromptMarker::Rank;

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
    /// Also named `rank_fullwidth`.
    #[cfg_attr(feature = "serde", serde(alias = "rank_fullwidth"))]
    RankFullWidth,
}

impl PromptMarker {
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

/// One chat message of a prompt: a role (`system`, `user` or `assistant`) and its text, to be
/// put into whatever message type the model's API takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PromptMessage {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

impl PromptMessage {
    fn new(role: &'static str, content: impl Into<String>) -> Self {
        PromptMessage {
            role,
            content: content.into(),
        }
    }
}

/// The prompt the citeflow proxy builds: a system message with [`citation_instruction`] and
/// the [`context_block`], then the question as the user's message.
pub fn zero_shot_messages(
    sources: &Sources,
    marker: PromptMarker,
    question: &str,
    max_chars_per_source: usize,
) -> Vec<PromptMessage> {
    vec![
        PromptMessage::new(
            "system",
            format!(
                "{}\n\nSources:\n{}",
                citation_instruction(sources, marker),
                context_block(sources, marker, max_chars_per_source)
            ),
        ),
        PromptMessage::new("user", question),
    ]
}

/// One line a source: `Title: text MARKER`, the text cut to `max_chars` characters. Unlike
/// [`context_block`] it leaves out CFIs, which small models copy instead of the marker.
///
/// The label comes after the text, where a model that has just copied a source's words looks
/// for the label to write next: with the label first, the next label after those words is the
/// following source's, and SmolLM2-135M cited it (issue 21; `crates/llm/README.md`).
fn labelled<'a>(
    sources: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    marker: PromptMarker,
    max_chars: usize,
) -> String {
    let mut out = String::new();
    for (i, (id, title, text)) in sources.enumerate() {
        let text: String = one_line(text).chars().take(max_chars).collect();
        if !title.is_empty() {
            out.push_str(&one_line(title));
            out.push_str(": ");
        }
        out.push_str(text.trim_end());
        out.push(' ');
        out.push_str(&marker.marker(id, i + 1));
        out.push('\n');
    }
    out
}

/// A worked example: two sources (title, text) with ids `ex_1` and `ex_2`, a question, and
/// an answer whose sentences each cite the source at the given index.
fn example(
    marker: PromptMarker,
    sources: [(&str, &str); 2],
    question: &str,
    answer: &[(&str, usize)],
) -> [PromptMessage; 2] {
    let ids = ["ex_1", "ex_2"];
    let listed = sources
        .iter()
        .zip(ids)
        .map(|((title, text), id)| (id, *title, *text));
    let user = format!(
        "Sources:\n{}\nQuestion: {question}",
        labelled(listed, marker, 400)
    );
    let reply = answer
        .iter()
        .map(|(sentence, i)| format!("{sentence} {}.", marker.marker(ids[*i], i + 1)))
        .collect::<Vec<_>>()
        .join(" ");
    [
        PromptMessage::new("user", user),
        PromptMessage::new("assistant", reply),
    ]
}

/// A few-shot prompt for small models: a short system message, two worked examples (user:
/// labelled sources and a question; assistant: an answer that copies the labels), then the
/// sources and the question. Each source is a line `Title: text LABEL`: its text cut to
/// `max_chars_per_source` characters, then the marker the model should copy
/// ([`PromptMarker::marker`] of its id and rank).
pub fn few_shot_messages(
    sources: &Sources,
    marker: PromptMarker,
    question: &str,
    max_chars_per_source: usize,
) -> Vec<PromptMessage> {
    let mut messages = vec![PromptMessage::new(
        "system",
        "You answer questions using only the sources in the user's message. Each source ends \
         with its label. After each sentence that uses a source, copy that source's label \
         exactly. Answer in one to three short sentences.",
    )];
    messages.extend(example(
        marker,
        [
            (
                "The Moon",
                "The Moon goes around the Earth once every 27 days.",
            ),
            (
                "The Sun",
                "The Sun is the star at the centre of the Solar System.",
            ),
        ],
        "How long does the Moon take to go around the Earth?",
        &[("The Moon goes around the Earth once every 27 days", 0)],
    ));
    messages.extend(example(
        marker,
        [
            ("Bees", "Bees make honey from the nectar of flowers."),
            ("Bears", "Bears often raid beehives to eat the honey."),
        ],
        "Where does honey come from, and who eats it?",
        &[
            ("Bees make honey from the nectar of flowers", 0),
            ("Bears raid beehives to eat it", 1),
        ],
    ));
    let listed = sources.iter().map(|s| {
        (
            s.id.as_str(),
            s.title.as_deref().unwrap_or_default(),
            s.text
                .as_deref()
                .or(s.snippet.as_deref())
                .unwrap_or_default(),
        )
    });
    messages.push(PromptMessage::new(
        "user",
        format!(
            "Sources:\n{}\nQuestion: {question}",
            labelled(listed, marker, max_chars_per_source)
        ),
    ));
    messages
}

#[cfg(feature = "serde")]
names::by_serde_name!(PromptMarker => "prompt marker");

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

    #[test]
    fn few_shot_examples_use_the_marker_to_copy() {
        let s = Sources::from_vec(vec![
            Source::new("alice#p3")
                .with_title("Alice — Chapter I")
                .with_text("She fell\n down."),
            Source::new("alice#p9")
                .with_title("Alice — Chapter II")
                .with_text("Tears."),
        ])
        .unwrap();
        let m = few_shot_messages(&s, PromptMarker::DoubleBracket, "Who fell?", 100);
        let roles: Vec<&str> = m.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "user", "assistant", "user"]
        );
        assert_eq!(
            m[1].content,
            "Sources:\nThe Moon: The Moon goes around the Earth once every 27 days. [[ex_1]]\nThe Sun: The Sun is the star at the centre of the Solar System. [[ex_2]]\n\nQuestion: How long does the Moon take to go around the Earth?"
        );
        assert_eq!(
            m[2].content,
            "The Moon goes around the Earth once every 27 days [[ex_1]]."
        );
        assert_eq!(
            m[4].content,
            "Bees make honey from the nectar of flowers [[ex_1]]. Bears raid beehives to eat it [[ex_2]]."
        );
        assert_eq!(
            m[5].content,
            "Sources:\nAlice — Chapter I: She fell down. [[alice#p3]]\nAlice — Chapter II: Tears. [[alice#p9]]\n\nQuestion: Who fell?"
        );
        let r = few_shot_messages(&s, PromptMarker::RankFullWidth, "Who fell?", 100);
        assert!(r[4].content.ends_with("eat it 【2】."), "{}", r[4].content);
        let short = few_shot_messages(&s, PromptMarker::Rank, "Who fell?", 4);
        assert!(
            short[5]
                .content
                .starts_with("Sources:\nAlice — Chapter I: She [1]\n"),
            "{}",
            short[5].content
        );
    }

    #[test]
    fn zero_shot_is_the_proxy_prompt() {
        let s = Sources::from_vec(vec![Source::new("alice#p3")
            .with_title("Alice — Chapter I")
            .with_text("She fell\n down.")])
        .unwrap();
        let z = zero_shot_messages(&s, PromptMarker::Rank, "Who fell?", 100);
        assert_eq!(z.len(), 2);
        assert_eq!(z[0].role, "system");
        assert_eq!(
            z[0].content,
            format!(
                "{}\n\nSources:\n[1] Alice — Chapter I: She fell down.\n",
                citation_instruction(&s, PromptMarker::Rank)
            )
        );
        assert_eq!((z[1].role, z[1].content.as_str()), ("user", "Who fell?"));
    }

    #[cfg(feature = "serde")]
    #[test]
    fn prompt_marker_names_round_trip() {
        for m in [
            PromptMarker::DoubleBracket,
            PromptMarker::CiteColon,
            PromptMarker::CiteTag,
            PromptMarker::SingleBracket,
            PromptMarker::Rank,
            PromptMarker::RankFullWidth,
        ] {
            assert_eq!(m.to_string().parse::<PromptMarker>(), Ok(m));
        }
    }
}
