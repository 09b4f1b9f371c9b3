//! The chat route's prompt: how it tells the model about the sources ([`PromptForm`]: the
//! marker, zero- or few-shot, the grammar), written into the request's messages.

use citeflow_core::{few_shot_messages, GrammarMode, PromptMarker, Sources};
use serde_json::{json, Value};

use super::steps::{prompt_marker, system_prompt};
use super::Options;
use crate::error::ApiError;
use crate::settings::PromptDefaults;

/// How the prompt tells the model about the sources: `citeflow.marker`, `citeflow.prompt`
/// and `citeflow.grammar`, else the server's defaults.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PromptForm {
    pub(crate) marker: PromptMarker,
    /// Worked examples first (`few_shot`), or a system message (`zero_shot`).
    few_shot: bool,
    /// A GBNF grammar for the markers, sent upstream as `grammar`.
    pub(crate) grammar: Option<GrammarMode>,
}

impl PromptForm {
    /// # Errors
    /// A name that is not a marker, a prompt form or a grammar mode.
    pub(crate) fn of(opts: &Options, defaults: PromptDefaults) -> Result<PromptForm, ApiError> {
        let marker = prompt_marker(opts.marker.as_deref(), defaults.marker)?;
        let few_shot = match opts.prompt.as_deref() {
            None => defaults.few_shot,
            Some("zero_shot") => false,
            Some("few_shot") => true,
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("citeflow.prompt {other:?} is not zero_shot or few_shot"),
                    Some("citeflow.prompt"),
                ))
            }
        };
        let grammar = match opts.grammar.as_deref() {
            None => defaults.grammar,
            Some("off") => None,
            Some(g) => Some(g.parse::<GrammarMode>()?),
        };
        Ok(PromptForm {
            marker,
            few_shot,
            grammar,
        })
    }

    /// Writes the prompt into `messages`: zero-shot, the system text of the core's zero-shot
    /// prompt first ([`system_prompt`]); few-shot, the core's worked examples
    /// ([`few_shot_messages`]) first and the last user message replaced by the sources and
    /// the question.
    pub(crate) fn write(
        self,
        messages: &mut Vec<Value>,
        sources: &Sources,
        question: Option<&str>,
        max_chars: usize,
    ) {
        let message = |role: &str, content: String| json!({"role": role, "content": content});
        if !self.few_shot {
            let system = system_prompt(sources, self.marker, max_chars);
            messages.insert(0, message("system", system));
            return;
        }
        let question = question.unwrap_or_default();
        let mut prompt = few_shot_messages(sources, self.marker, question, max_chars);
        let Some(last) = prompt.pop() else {
            return;
        };
        // The examples go first; the last user message becomes the sources and question.
        match messages
            .iter_mut()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        {
            Some(m) => m["content"] = Value::String(last.content),
            None => messages.push(message(last.role, last.content)),
        }
        for (i, p) in prompt.into_iter().enumerate() {
            messages.insert(i, message(p.role, p.content));
        }
    }
}
