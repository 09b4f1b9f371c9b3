//! The agent policy: how a turn with tools is shaped so that a small model acts as a
//! searching, citing agent (documented in crates/llm/README.md, "Tool calls"). Pure (no I/O).
//!
//! With [`AgentPolicy::Search`] and `tool_choice` `auto`:
//! - the last message is the user's and some tools look like search (name or description
//!   holds "search" or "retriev", and the parameters have a required string property): the turn
//!   is a call of each such tool, in the request's order (one call of any of them when
//!   `parallel_tool_calls` is false), whose arguments the model writes under the grammar;
//! - tool results came after the last user message and they show sources under markers
//!   (lines starting `[[id]]`, `[id]`, `[n]`, `【n】`, `<cite:id>` or `<cite id="id"/>`, as
//!   `citeflow`'s `context_block` writes them): the turn is the answer, asked with the core's
//!   few-shot prompt over those passages and the user's question, and written under the core's
//!   `cite_per_sentence` citation grammar over those markers (no further call);
//! - otherwise the model chooses: a call (any tool) or prose.
//!
//! [`AgentPolicy::Off`] leaves `auto` to the model every time. `none`, `required` and a named
//! function are honoured as OpenAI defines them whatever the policy.

use citeflow_core::{
    citation_grammar, few_shot_messages, read_context_block, GrammarMode, PromptMarker,
};
use citeflow_core::{Source, Sources};

use crate::generate::ChatMessage;
use crate::tools::{ToolChoice, Tools};

/// Characters of each tool-result passage the answer prompt shows (the cite-rate
/// measurement's setting, crates/llm/README.md).
pub const POLICY_CHARS_PER_SOURCE: usize = 400;

/// The most characters of each string argument of the policy's search call (a query): a
/// small model left unbounded wrote 300-character queries until `max_tokens`.
pub const POLICY_MAX_QUERY_CHARS: usize = 64;

/// Whether `tool_choice: "auto"` is shaped for a small model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AgentPolicy {
    /// Search first, then answer citing the results (the module docs).
    ///
    /// ### Default
    /// This one.
    #[default]
    Search,
    /// The model decides every `auto` turn.
    Off,
}

/// A request message as the policy sees it: role and text (tool calls already as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Said {
    pub(crate) role: String,
    pub(crate) text: String,
}

/// What a turn is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Turn {
    /// Tool calls (and prose when `answer`) under the tools' grammar.
    Calls {
        calls: Vec<usize>,
        sequence: bool,
        answer: bool,
        /// The policy's search: strings capped at [`POLICY_MAX_QUERY_CHARS`].
        capped: bool,
    },
    /// Prose, no call; with the policy's prompt and citation grammar when set.
    Answer {
        messages: Option<Vec<ChatMessage>>,
        grammar: Option<String>,
    },
}

fn search_like(tools: &Tools, i: usize) -> bool {
    let t = &tools.tools[i];
    let words = format!("{} {}", t.name, t.description).to_lowercase();
    let has_string = t.parameters["required"].as_array().is_some_and(|r| {
        r.iter()
            .filter_map(|n| n.as_str())
            .any(|n| t.parameters["properties"][n]["type"].as_str() == Some("string"))
    });
    (words.contains("search") || words.contains("retriev")) && has_string
}

fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The passages the tool results show under markers, read by the core's
/// [`read_context_block`] (one form: the first marked line's; in order of first appearance,
/// ranks sorted), and the form.
pub(crate) fn tool_sources(results: &[&str]) -> Option<(PromptMarker, Vec<Source>)> {
    // A result that is JSON (e.g. the AI SDK's `{"documents": …, "context": "[[id]] …"}`) is
    // read through its strings.
    let mut texts: Vec<String> = Vec::new();
    for text in results {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) => {
                strings(&v, &mut texts);
            }
            _ => texts.push((*text).to_owned()),
        }
    }
    read_context_block(texts.iter().map(String::as_str))
}

/// The turn for `tools` over the conversation `said`.
pub(crate) fn plan(tools: &Tools, said: &[Said], policy: AgentPolicy) -> Turn {
    let all: Vec<usize> = (0..tools.tools.len()).collect();
    let free = Turn::Calls {
        calls: all.clone(),
        sequence: false,
        answer: true,
        capped: false,
    };
    match &tools.choice {
        ToolChoice::None => {
            return Turn::Answer {
                messages: None,
                grammar: None,
            }
        }
        ToolChoice::Required => {
            return Turn::Calls {
                calls: all,
                sequence: false,
                answer: false,
                capped: false,
            }
        }
        ToolChoice::Named(n) => {
            return Turn::Calls {
                calls: tools.index(n).into_iter().collect(),
                sequence: true,
                answer: false,
                capped: false,
            }
        }
        _ => {}
    }
    if policy == AgentPolicy::Off {
        return free;
    }
    let Some(last_user) = said.iter().rposition(|m| m.role == "user") else {
        return free;
    };
    if last_user + 1 == said.len() {
        let search: Vec<usize> = all.into_iter().filter(|&i| search_like(tools, i)).collect();
        return match search.len() {
            0 => free,
            1 => Turn::Calls {
                calls: search,
                sequence: true,
                answer: false,
                capped: true,
            },
            _ => Turn::Calls {
                sequence: tools.parallel,
                calls: search,
                answer: false,
                capped: true,
            },
        };
    }
    let results: Vec<&str> = said[last_user + 1..]
        .iter()
        .filter(|m| m.role == "tool")
        .map(|m| m.text.as_str())
        .collect();
    if results.is_empty() {
        return free;
    }
    let question = said[last_user].text.as_str();
    match tool_sources(&results).and_then(|(form, sources)| {
        let ids: Vec<String> = sources.iter().map(|s| s.id.clone()).collect();
        let sources = Sources::from_vec(sources).ok()?;
        Some((form, ids, sources))
    }) {
        Some((form, ids, sources)) => {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            Turn::Answer {
                messages: Some(
                    few_shot_messages(&sources, form, question, POLICY_CHARS_PER_SOURCE)
                        .into_iter()
                        .map(ChatMessage::from)
                        .collect(),
                ),
                grammar: Some(citation_grammar(form, &ids, GrammarMode::CitePerSentence)),
            }
        }
        // Results without markers: answer in prose from the conversation.
        None => Turn::Answer {
            messages: None,
            grammar: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools(choice: &str, parallel: bool) -> Tools {
        let p = json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]});
        Tools::parse(&json!({"tool_choice": choice, "parallel_tool_calls": parallel, "tools": [
            {"type": "function", "function": {"name": "search_web", "description": "Search the web", "parameters": p}},
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
            {"type": "function", "function": {"name": "search_books", "parameters": p}}
        ]}))
        .unwrap()
        .unwrap()
    }

    fn said(pairs: &[(&str, &str)]) -> Vec<Said> {
        pairs
            .iter()
            .map(|(r, t)| Said {
                role: (*r).into(),
                text: (*t).into(),
            })
            .collect()
    }

    #[test]
    fn a_user_question_is_searched_first() {
        let s = said(&[
            ("system", "be brief"),
            ("user", "What did the Rabbit take out?"),
        ]);
        assert_eq!(
            plan(&tools("auto", true), &s, AgentPolicy::Search),
            Turn::Calls {
                calls: vec![0, 2],
                sequence: true,
                answer: false,
                capped: true
            }
        );
        assert_eq!(
            plan(&tools("auto", false), &s, AgentPolicy::Search),
            Turn::Calls {
                calls: vec![0, 2],
                sequence: false,
                answer: false,
                capped: true
            }
        );
        assert_eq!(
            plan(&tools("auto", true), &s, AgentPolicy::Off),
            Turn::Calls {
                calls: vec![0, 1, 2],
                sequence: false,
                answer: true,
                capped: false
            }
        );
        assert_eq!(
            plan(&tools("none", true), &s, AgentPolicy::Search),
            Turn::Answer {
                messages: None,
                grammar: None
            }
        );
    }

    #[test]
    fn tool_results_are_answered_under_the_citation_grammar() {
        let s = said(&[
            ("user", "What did the Rabbit take out?"),
            ("assistant", "<tool_call>…"),
            ("tool", "[[alice-1]] Alice: The Rabbit took a watch out of its waistcoat-pocket.\n[[alice-2]] (CFI: x) Down the hole.\n"),
            ("tool", "no results"),
        ]);
        let Turn::Answer {
            messages: Some(m),
            grammar: Some(g),
        } = plan(&tools("auto", true), &s, AgentPolicy::Search)
        else {
            panic!()
        };
        assert_eq!(
            g,
            citation_grammar(
                PromptMarker::DoubleBracket,
                &["alice-1", "alice-2"],
                GrammarMode::CitePerSentence
            )
        );
        let last = &m.last().unwrap().content;
        assert!(
            last.contains("took a watch out")
                && last.contains("[[alice-2]]")
                && last.contains("What did the Rabbit"),
            "{last}"
        );
    }

    #[test]
    fn markers_of_every_form_are_found() {
        for (text, form, ids) in [
            ("[1] a\n[2] b", PromptMarker::Rank, vec!["1", "2"]),
            ("【1】 a", PromptMarker::RankFullWidth, vec!["1"]),
            (
                "<cite:x1> a\n<cite:y> b",
                PromptMarker::CiteColon,
                vec!["x1", "y"],
            ),
            ("<cite id=\"x\"/> a", PromptMarker::CiteTag, vec!["x"]),
            (
                "[web-seine] a",
                PromptMarker::SingleBracket,
                vec!["web-seine"],
            ),
        ] {
            let (f, s) = tool_sources(&[text]).unwrap();
            assert_eq!(f, form);
            assert_eq!(s.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ids);
        }
        assert_eq!(tool_sources(&["[2] only the second"]), None);
        let json =
            r#"{"documents": [{"id": "p1"}], "context": "[[p1]] The Rabbit.\n[[p2]] A well."}"#;
        let (_, s) = tool_sources(&[json]).unwrap();
        assert_eq!(
            s.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["p1", "p2"]
        );
        assert_eq!(tool_sources(&["plain"]), None);
    }
}
