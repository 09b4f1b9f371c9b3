//! The scripted reading model (`agent-book`): an agent that answers the question it was asked
//! with the retrieved passages' own sentences, for examples whose answer must be about what was
//! asked and cite passages that say it.
//!
//! On `/v1/chat/completions` (streamed or not), reading the request:
//! - no tool message after the last `user` message (and `tools` given) → one call to the first
//!   tool, arguments `{"query": <the last user message>}`, id `call_book_1`;
//! - otherwise → the answer: the sentences of the tool results (after the last user message)
//!   that share the most words with the question (words of 3+ letters, without question
//!   words such as "who" or "does"), at most [`ANSWER_SENTENCES`], each from a different
//!   passage, in the order the results listed them, each followed by its passage's `[[id]]`
//!   marker (only the sentences with the highest count: a passage that shares one word does
//!   not stand beside one that shares three). A tool result is its text, or the `context` field of a JSON object (the examples'
//!   search tool returns `{documents, context}`); its passages are the lines that start with a
//!   marker (`[[id]] (chapter: …, CFI: …) title: text`, the core's context block). Headings (most words capitalised)
//!   and a passage's unfinished first and last sentences (passages overlap; the context block
//!   cuts them) are never quoted. No
//!   sentence shares a word with the question → "The book does not say."

use serde_json::Value;

use crate::agent::{answer, content_text, tool_call_named, AgentReply};

/// The model name this module answers.
pub const BOOK_MODEL: &str = "agent-book";

/// The most sentences an answer quotes.
pub const ANSWER_SENTENCES: usize = 2;

/// Words that carry no subject: a sentence is not chosen for sharing them.
const STOP_WORDS: [&str; 24] = [
    "the", "who", "whom", "what", "where", "when", "why", "how", "does", "did", "was", "were",
    "are", "and", "for", "from", "with", "that", "this", "tell", "about", "which", "into", "her",
];

/// The reading model's reply, or `None` when `model` is not [`BOOK_MODEL`].
pub fn book_reply(req: &Value) -> Option<AgentReply> {
    if req.get("model").and_then(Value::as_str) != Some(BOOK_MODEL) {
        return None;
    }
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let messages: &[Value] = req
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let last_user = messages
        .iter()
        .rposition(|m| role(m).as_deref() == Some("user"));
    let question = last_user
        .map(|i| content_text(messages[i].get("content")))
        .unwrap_or_default();
    let turn = &messages[last_user.map_or(0, |i| i + 1)..];
    let results: Vec<String> = turn
        .iter()
        .filter(|m| role(m).as_deref() == Some("tool"))
        .map(|m| result_text(&content_text(m.get("content"))))
        .collect();
    let tool_name = req
        .pointer("/tools/0/function/name")
        .and_then(Value::as_str);
    Some(match (tool_name, results.is_empty()) {
        (Some(name), true) => tool_call_named(name, &question, "call_book_1", stream),
        _ => answer(&book_answer(&question, &results), stream),
    })
}

/// A tool result's text: the `context` of a JSON object, else the text itself.
fn result_text(content: &str) -> String {
    serde_json::from_str::<Value>(content)
        .ok()
        .and_then(|v| v.get("context").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| content.to_owned())
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// Whether most of a sentence's words are capitalised (a heading, a table of contents).
fn is_heading(sentence: &str) -> bool {
    let ws: Vec<&str> = sentence
        .split_whitespace()
        .filter(|w| w.chars().next().is_some_and(char::is_alphabetic))
        .collect();
    let caps = ws
        .iter()
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .count();
    ws.is_empty() || caps * 2 > ws.len()
}

/// The finished sentences of a passage's text: each ends in `.`, `!` or `?` (with a closing
/// quote after it) before a space or the end, outside quotation marks; the unfinished tail is
/// dropped.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut k = 0;
    while k < chars.len() {
        let (i, c) = chars[k];
        match c {
            '"' => quoted = !quoted,
            '\u{201c}' => quoted = true,
            '\u{201d}' => quoted = false,
            _ => {}
        }
        let mut end = i + c.len_utf8();
        let mut next = chars.get(k + 1).map(|&(_, n)| n);
        if matches!(c, '.' | '!' | '?') && matches!(next, Some('"' | '\u{201d}')) && quoted {
            // The mark ends the quotation too: the closing quote belongs to the sentence.
            k += 1;
            end += next.map_or(0, char::len_utf8);
            quoted = false;
            next = chars.get(k + 1).map(|&(_, n)| n);
        }
        // `"Who are you?" said the Caterpillar.`: a lowercase word after the mark continues
        // the sentence.
        let continues = chars[k + 1..]
            .iter()
            .map(|&(_, n)| n)
            .find(|n| !n.is_whitespace())
            .is_some_and(char::is_lowercase);
        if matches!(c, '.' | '!' | '?')
            && !quoted
            && !continues
            && next.is_none_or(char::is_whitespace)
        {
            let s = text[start..end].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = end;
        }
        k += 1;
    }
    out
}

/// The line without its locator note (`(chapter: …, CFI: epubcfi(…)) `), whose parentheses
/// nest.
fn skip_locator(body: &str) -> &str {
    if !body.starts_with('(') {
        return body;
    }
    let mut depth = 0usize;
    for (i, c) in body.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return body[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    body
}

/// A context-block line's passage text (after its locator note): after its title (`title: text`), without the heading
/// the text repeats from the title's last part (`Book — Chapter: Chapter …`).
fn passage_text(body: &str) -> &str {
    let body = skip_locator(body);
    let Some((title, text)) = body.split_once(": ") else {
        return body;
    };
    let heading = title.rsplit(" \u{2014} ").next().unwrap_or(title);
    text.strip_prefix(heading).map_or(text, str::trim_start)
}

/// The answer to `question` from the tool results' passages (see the module docs).
pub fn book_answer(question: &str, results: &[String]) -> String {
    let asked: Vec<String> = words(question)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    // (score, order, sentence, id): one best sentence per passage.
    let mut best: Vec<(usize, usize, String, String)> = Vec::new();
    for line in results.iter().flat_map(|r| r.lines()) {
        let Some(rest) = line.strip_prefix("[[") else {
            continue;
        };
        let Some((id, body)) = rest.split_once("]]") else {
            continue;
        };
        if best.iter().any(|b| b.3 == id) {
            continue;
        }
        let text = passage_text(body.trim_start());
        // A passage cut mid-sentence (the passages overlap) starts with a fragment: not quoted.
        let whole_start = text
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || matches!(c, '"' | '\u{201c}'));
        let scored = sentences(text)
            .into_iter()
            .skip(usize::from(!whole_start))
            .filter(|s| !is_heading(s))
            .map(|s| {
                let ws = words(s);
                (asked.iter().filter(|a| ws.contains(a)).count(), s)
            })
            .filter(|(score, _)| *score > 0)
            // The first of a passage's best sentences.
            .fold(None, |acc: Option<(usize, &str)>, (score, s)| match acc {
                Some((b, _)) if b >= score => acc,
                _ => Some((score, s)),
            });
        if let Some((score, s)) = scored {
            best.push((score, best.len(), s.to_owned(), id.to_owned()));
        }
    }
    // Only the sentences that share the most words with the question.
    let top = best.iter().map(|b| b.0).max().unwrap_or(0);
    best.retain(|b| b.0 == top);
    best.truncate(ANSWER_SENTENCES);
    best.sort_by_key(|b| b.1);
    if best.is_empty() {
        return "The book does not say.".to_owned();
    }
    best.iter()
        .map(|(_, _, s, id)| format!("{s} [[{id}]]"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RESULTS: &str = "[[b#p0]] Alice: Contents Title Page Down The Rabbit-Hole The Pool Of Tears Who Stole The Tarts?\n\
        [[b#p2]] Alice — Down The Rabbit-Hole: Alice was beginning to get very tired of sitting by her sister on the bank. So she was considering, when suddenly a White Rabbit with pink eyes ran clo\n\
        [[b#p3]] Alice — Down The Rabbit-Hole: getting up, when suddenly a White Rabbit with pink eyes ran close by her. Burning with curiosity, she ran across the field after it, and was just in time to see it pop down a large rabbit-hole under the hedge.\n";

    #[test]
    fn book_model_answers_with_the_passages_sentences_that_share_the_question_words() {
        let text = book_answer(
            "Who does Alice follow down the rabbit hole?",
            &[RESULTS.to_owned()],
        );
        assert_eq!(
            text,
            "Burning with curiosity, she ran across the field after it, and was just in time to see it pop down a large rabbit-hole under the hedge. [[b#p3]]"
        );
        // Quotations are kept whole; the heading the text repeats from its title is not quoted.
        let quoted = "[[q#p1]] (chapter: The Rabbit, CFI: epubcfi(/6/8!/4/2/1:0)) Book \u{2014} The Rabbit: The Rabbit Alice heard the Rabbit say, \"Oh dear! I shall be late!\" Then it ran. \"Late?\" said the Rabbit.";
        assert_eq!(
            book_answer("What did the Rabbit say?", &[quoted.to_owned()]),
            "Alice heard the Rabbit say, \"Oh dear! I shall be late!\" [[q#p1]]"
        );
        assert_eq!(
            book_answer("What is late, said the Rabbit?", &[quoted.to_owned()]),
            "\"Late?\" said the Rabbit. [[q#p1]]"
        );
        assert_eq!(
            book_answer("Who baked the tarts?", &[RESULTS.to_owned()]),
            "The book does not say."
        );
    }

    #[test]
    fn book_model_searches_the_question_then_reads_the_context_of_a_json_result() {
        let mut req = json!({"model": BOOK_MODEL, "messages": [
            {"role": "user", "content": "Who does Alice follow down the rabbit hole?"}
        ], "tools": [{"type": "function", "function": {"name": "search"}}]});
        let Some(AgentReply::Json(call)) = book_reply(&req) else {
            panic!("expected JSON");
        };
        let f = &call["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(f["name"], "search");
        assert_eq!(
            f["arguments"],
            r#"{"query":"Who does Alice follow down the rabbit hole?"}"#
        );
        let output = json!({"documents": [], "context": RESULTS}).to_string();
        let messages = req["messages"].as_array_mut().unwrap();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_book_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": "call_book_1", "content": output}));
        let Some(AgentReply::Json(done)) = book_reply(&req) else {
            panic!("expected JSON");
        };
        let text = done["choices"][0]["message"]["content"].as_str().unwrap();
        assert!(
            text.ends_with("rabbit-hole under the hedge. [[b#p3]]"),
            "{text}"
        );
        assert_eq!(book_reply(&json!({"model": "agent-search"})), None);
    }
}
