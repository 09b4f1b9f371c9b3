//! Prompts that ask a model to cite: the proxy's zero-shot form, and a few-shot form for
//! small models (worked examples whose sources are labelled with the marker to copy).

use citeflow_core::{citation_instruction, context_block, PromptMarker, Sources};

use crate::generate::ChatMessage;

/// The prompt the citeflow proxy builds: a system message with the core's citation
/// instruction and sources block, then the question.
pub fn zero_shot_messages(
    sources: &Sources,
    marker: PromptMarker,
    question: &str,
    max_chars_per_source: usize,
) -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(
            "system",
            format!(
                "{}\n\nSources:\n{}",
                citation_instruction(sources, marker),
                context_block(sources, marker, max_chars_per_source)
            ),
        ),
        ChatMessage::new("user", question),
    ]
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One line a source: `MARKER Title: text`, the text cut to `max_chars` characters. Unlike
/// the core's block it leaves out CFIs, which small models copy instead of the marker.
fn labelled(
    sources: &[(String, String, String)],
    marker: PromptMarker,
    max_chars: usize,
) -> String {
    let mut out = String::new();
    for (i, (id, title, text)) in sources.iter().enumerate() {
        let text: String = one_line(text).chars().take(max_chars).collect();
        out.push_str(&marker.marker(id, i + 1));
        out.push(' ');
        if !title.is_empty() {
            out.push_str(&one_line(title));
            out.push_str(": ");
        }
        out.push_str(&text);
        out.push('\n');
    }
    out
}

fn example(
    marker: PromptMarker,
    sources: [(&str, &str); 2],
    question: &str,
    answer: [(&str, usize); 2],
) -> [ChatMessage; 2] {
    let ids = ["ex_1", "ex_2"];
    let listed: Vec<(String, String, String)> = sources
        .iter()
        .zip(ids)
        .map(|((title, text), id)| (id.to_owned(), (*title).to_owned(), (*text).to_owned()))
        .collect();
    let user = format!(
        "Sources:\n{}\nQuestion: {question}",
        labelled(&listed, marker, 400)
    );
    let reply = answer
        .iter()
        .filter(|(s, _)| !s.is_empty())
        .map(|(sentence, i)| format!("{sentence} {}.", marker.marker(ids[*i], i + 1)))
        .collect::<Vec<_>>()
        .join(" ");
    [
        ChatMessage::new("user", user),
        ChatMessage::new("assistant", reply),
    ]
}

/// A few-shot prompt for small models: a short system message, two worked examples (user:
/// labelled sources and a question; assistant: an answer that copies the labels), then the
/// sources and the question. Each source is labelled with the marker the model should copy
/// (`marker.marker(id, rank)`).
pub fn few_shot_messages(
    sources: &Sources,
    marker: PromptMarker,
    question: &str,
    max_chars_per_source: usize,
) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::new(
        "system",
        "You answer questions using only the sources in the user's message. Each source starts \
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
        [
            ("The Moon goes around the Earth once every 27 days", 0),
            ("", 0),
        ],
    ));
    messages.extend(example(
        marker,
        [
            ("Bees", "Bees make honey from the nectar of flowers."),
            ("Bears", "Bears often raid beehives to eat the honey."),
        ],
        "Where does honey come from, and who eats it?",
        [
            ("Bees make honey from the nectar of flowers", 0),
            ("Bears raid beehives to eat it", 1),
        ],
    ));
    let listed: Vec<(String, String, String)> = sources
        .iter()
        .map(|s| {
            (
                s.id.clone(),
                s.title.clone().unwrap_or_default(),
                s.text
                    .clone()
                    .or_else(|| s.snippet.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    messages.push(ChatMessage::new(
        "user",
        format!(
            "Sources:\n{}\nQuestion: {question}",
            labelled(&listed, marker, max_chars_per_source)
        ),
    ));
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use citeflow_core::Source;

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
        assert_eq!(m.len(), 6);
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
            "Sources:\n[[alice#p3]] Alice — Chapter I: She fell down.\n[[alice#p9]] Alice — Chapter II: Tears.\n\nQuestion: Who fell?"
        );
        let r = few_shot_messages(&s, PromptMarker::RankFullWidth, "Who fell?", 100);
        assert!(r[4].content.ends_with("eat it 【2】."), "{}", r[4].content);
        let z = zero_shot_messages(&s, PromptMarker::Rank, "Who fell?", 100);
        assert!(
            z[0].content
                .contains("[1] Alice — Chapter I: She fell down."),
            "{}",
            z[0].content
        );
        assert_eq!(z[1].content, "Who fell?");
    }
}
