//! The request plan of every answering route: the `citeflow` field read into one [`Options`],
//! then [`Plan::new`] runs the steps they share ([`steps`]: the sources, the numbering scope,
//! the settings, the prompt, the wire protocol) into one [`Plan`], whose [`Plan::scope`] is
//! the numbering scope of the answer. The chat route writes the prompt into the messages
//! ([`prompt`]); the provider routes get the system text ([`Plan::system`]) to put where their
//! API keeps it.

pub(crate) mod passages;
mod prompt;
pub(crate) mod quotes;
pub(crate) mod session;
mod steps;

use std::sync::Arc;

use axum::http::HeaderMap;
use citeflow_core::{citation_grammar, RankMode, Settings, Source, Sources};
use citeflow_store::NumberScope;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::intake::body::sources;
use crate::plan::quotes::BookQuotes;
use crate::state::AppState;
use crate::tenancy::Owner;
use prompt::PromptForm;
use steps::{
    gather_sources, prompt_marker, rewriter_settings, settings_patch, system_prompt, take_citeflow,
    wants_ai_sdk, AnswerSources, SourceChoice,
};

/// The `citeflow` field of a request, on every answering route.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Options {
    session: Option<String>,
    scope: Option<String>,
    round_query: Option<String>,
    marker: Option<String>,
    style: Option<String>,
    unknown: Option<String>,
    rank: Option<String>,
    /// Any other rewriter setting by the core's names (`citeflow_core::SettingsPatch`).
    settings: Option<Value>,
    inject_prompt: Option<bool>,
    max_chars_per_source: Option<usize>,
    /// Chat only: `"off"`, or a grammar mode (`well_formed`, `require_citation`,
    /// `cite_per_sentence`): a GBNF grammar for the markers, sent upstream as `grammar`.
    grammar: Option<String>,
    /// Chat only: `"zero_shot"` (a system message with the instruction and the sources) or
    /// `"few_shot"` (worked examples first, then the sources with the question).
    prompt: Option<String>,
    /// Chat only: `"client"`: pass the markers through unrewritten (the web page renders them
    /// with the WASM core); `"server"` (the default) rewrites.
    render: Option<String>,
    /// A book key of `GET /v1/books`: passages retrieved for the last user message join the
    /// sources.
    book: Option<String>,
    /// How many passages to retrieve from `book`.
    top_k: Option<usize>,
    /// `"ai-sdk"`: answer in the Vercel AI SDK UI message stream (`"native"`: the route's
    /// own format).
    protocol: Option<String>,
}

/// Which route a request came to: what the plan does besides the shared steps.
pub(crate) enum Route {
    /// Chat completions: the prompt written into `messages`, the grammar, `render`.
    Chat,
    /// A provider-shaped route (Responses, Messages): `native` sources the request carries in
    /// the provider's own form (not shown again in the system text), and whether the book's
    /// passages go in that form too.
    Provider {
        native: Vec<Source>,
        native_passages: bool,
    },
}

/// A parsed request, ready to go upstream.
pub(crate) struct Plan {
    pub(crate) owner: Owner,
    /// The request body to send upstream (the `citeflow` and `sources` fields taken out).
    pub(crate) body: Map<String, Value>,
    pub(crate) settings: Settings,
    pub(crate) sources: Sources,
    pub(crate) session_id: Option<String>,
    /// The numbers are the session's (`citeflow.scope: "session"`).
    session_scope: bool,
    pub(crate) stream: bool,
    /// The answer goes out as the AI SDK UI message stream.
    pub(crate) ai_sdk: bool,
    /// Provider routes: the system text that tells the model about the sources (`None`:
    /// nothing to add).
    pub(crate) system: Option<String>,
    /// The passages retrieved from `citeflow.book` (also among `sources`).
    pub(crate) passages: Vec<Source>,
    /// The book passages among the sources: their anchors' quotes get a CFI.
    pub(crate) quotes: Option<Arc<BookQuotes>>,
}

impl Plan {
    /// Plans a request of `route`: the options and the given sources taken out of `body`, the
    /// sources gathered, the settings read, the prompt written (chat) or made (the others),
    /// the wire protocol chosen.
    ///
    /// # Errors
    /// `invalid_request` (or `invalid_setting`) naming the field that does not fit, and the
    /// errors of the sources' steps (an unknown session or book).
    pub(crate) async fn new(
        state: &AppState,
        owner: Owner,
        headers: &HeaderMap,
        mut body: Map<String, Value>,
        route: Route,
    ) -> Result<Plan, ApiError> {
        let limits = &state.settings.limits;
        let mut opts: Options = take_citeflow(&mut body)?;
        let mut given = sources(body.remove("sources"), limits)?;
        let (native, native_passages) = match route {
            Route::Chat => {
                if !matches!(body.get("messages"), Some(Value::Array(_))) {
                    return Err(ApiError::invalid(
                        "messages must be an array",
                        Some("messages"),
                    ));
                }
                (None, false)
            }
            Route::Provider {
                native,
                native_passages,
            } => {
                for (name, given) in [
                    ("grammar", opts.grammar.is_some()),
                    ("prompt", opts.prompt.is_some()),
                    ("render", opts.render.is_some()),
                ] {
                    if given {
                        return Err(ApiError::invalid(
                            format!("citeflow: citeflow.{name} is only for /v1/chat/completions"),
                            Some("citeflow"),
                        ));
                    }
                }
                let ids: Vec<String> = native.iter().map(|s| s.id.clone()).collect();
                for s in native {
                    if !given.iter().any(|g| g.id == s.id) {
                        given.push(s);
                    }
                }
                if given.len() > limits.max_sources {
                    return Err(ApiError::TooManySources {
                        count: given.len(),
                        max: limits.max_sources,
                    });
                }
                (Some(ids), native_passages)
            }
        };
        let question = question_of(&body);
        let choice = SourceChoice {
            session: opts.session.as_deref(),
            scope: opts.scope.as_deref(),
            round_query: opts.round_query.as_deref(),
            book: opts.book.as_deref(),
            top_k: opts.top_k,
        };
        let param = if native.is_none() {
            "messages"
        } else {
            "citeflow.book"
        };
        let AnswerSources {
            sources,
            session_id,
            session_scope,
            passages,
        } = gather_sources(state, &owner, choice, question.clone(), param, given).await?;
        let (settings, system) = match &native {
            None => {
                let prompt = PromptForm::of(&opts, state.settings.prompt)?;
                let patch = settings_patch(opts.settings.take())?;
                let settings = rewriter_settings(
                    prompt.marker,
                    opts.style.as_deref(),
                    opts.unknown.as_deref(),
                    opts.rank.as_deref(),
                    patch.as_ref(),
                )?;
                let settings = match opts.render.as_deref() {
                    None | Some("server") => settings,
                    Some("client") => settings.with_syntaxes(&[]).with_rank(RankMode::Off),
                    Some(other) => {
                        return Err(ApiError::invalid(
                            format!("citeflow.render {other:?} is not server or client"),
                            Some("citeflow.render"),
                        ))
                    }
                };
                if opts.inject_prompt.unwrap_or(true) && !sources.is_empty() {
                    let max_chars = opts
                        .max_chars_per_source
                        .unwrap_or(state.settings.prompt.max_chars_per_source);
                    if let Some(Value::Array(messages)) = body.get_mut("messages") {
                        prompt.write(messages, &sources, question.as_deref(), max_chars);
                    }
                }
                // A request that offers tools gets the server's default grammar only when it
                // asked for one: the model's turn may be a tool call, which a grammar for the
                // markers alone would forbid (the local model constrains that turn by the
                // tools' schemas, and answers after tool results under its own citation
                // grammar); an explicit `citeflow.grammar` is sent as asked.
                let offers_tools = body
                    .get("tools")
                    .and_then(Value::as_array)
                    .is_some_and(|t| !t.is_empty())
                    && body.get("tool_choice").and_then(Value::as_str) != Some("none");
                let grammar = prompt
                    .grammar
                    .filter(|_| !sources.is_empty())
                    .filter(|_| opts.grammar.is_some() || !offers_tools);
                if let Some(mode) = grammar {
                    let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
                    body.insert(
                        "grammar".to_owned(),
                        Value::String(citation_grammar(prompt.marker, &ids, mode)),
                    );
                }
                (settings, None)
            }
            Some(native_ids) => {
                let marker = prompt_marker(opts.marker.as_deref(), state.settings.prompt.marker)?;
                let patch = settings_patch(opts.settings.take())?;
                let settings = rewriter_settings(
                    marker,
                    opts.style.as_deref(),
                    opts.unknown.as_deref(),
                    opts.rank.as_deref(),
                    patch.as_ref(),
                )?;
                // The sources the request carries in the provider's own form are not shown
                // again in the system text.
                let native_form = |s: &Source| {
                    native_ids.contains(&s.id)
                        || (native_passages && passages.iter().any(|p| p.id == s.id))
                };
                let shown = if sources.iter().any(native_form) {
                    Sources::from_vec(
                        sources
                            .iter()
                            .filter(|s| !native_form(s))
                            .cloned()
                            .collect(),
                    )?
                } else {
                    sources.clone()
                };
                let system = (opts.inject_prompt.unwrap_or(true) && !shown.is_empty()).then(|| {
                    let max_chars = opts
                        .max_chars_per_source
                        .unwrap_or(state.settings.prompt.max_chars_per_source);
                    system_prompt(&shown, marker, max_chars)
                });
                (settings, system)
            }
        };
        let ai_sdk = wants_ai_sdk(opts.protocol.as_deref(), headers)?;
        if ai_sdk && native.is_none() {
            body.insert("stream".to_owned(), Value::Bool(true));
        }
        let stream = ai_sdk || body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let quotes = BookQuotes::open(state, &owner, &settings, &sources).await;
        Ok(Plan {
            owner,
            body,
            settings,
            sources,
            session_id,
            session_scope,
            stream,
            ai_sdk,
            system,
            passages,
            quotes,
        })
    }

    /// The session's numbering scope when the answer numbers in it (`None`: numbers are
    /// local to this answer).
    pub(crate) fn scope(&self) -> Option<NumberScope> {
        match (&self.session_id, self.session_scope) {
            (Some(s), true) => Some(NumberScope::Session(s.clone())),
            _ => None,
        }
    }
}

/// The question of a request: the last user message of `messages`, or the `input` of a
/// Responses request (a string, or its items' last user message).
fn question_of(body: &Map<String, Value>) -> Option<String> {
    if let Some(m) = body.get("messages") {
        return last_user_text(m);
    }
    match body.get("input")? {
        Value::String(s) => Some(s.clone()),
        items @ Value::Array(_) => last_user_text(items),
        _ => None,
    }
}

/// The text of the last user message (a string, or the `text` parts of a content array).
pub(crate) fn last_user_text(messages: &Value) -> Option<String> {
    let m = messages
        .as_array()?
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    let text = match m.get("content")? {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    Some(text).filter(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::last_user_text;
    use serde_json::json;

    #[test]
    fn the_question_is_the_last_user_message() {
        let m = json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image_url"}]},
            {"role": "system", "content": "be brief"},
        ]);
        assert_eq!(last_user_text(&m).as_deref(), Some("second"));
        assert_eq!(
            last_user_text(&json!([{"role": "user", "content": "  "}])),
            None
        );
        assert_eq!(last_user_text(&json!([])), None);
    }
}
