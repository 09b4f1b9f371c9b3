//! Free functions: one-shot rewriting, source lists and prompt text.

use citeflow_core::{Event, ListFormat, ListedSource, PromptMarker, Round};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::BindingError;
use crate::js::{from_js, stringify, to_js};
use crate::settings::{options_from_json, settings_from_json, SettingsOut};
use crate::sources::Sources;
use crate::types::{
    JsListFormat, JsListedSourceArray, JsPromptMarker, JsResolvedSettings, JsRewriterOptions,
    JsRewritten, JsRoundArray, JsSettings,
};

#[derive(Serialize)]
struct RewrittenOut<'a> {
    text: &'a str,
    events: &'a [Event],
    numbering: &'a [citeflow_core::NumberEntry],
}

/// Rewrites a whole answer at once: `{ text, events, numbering }`, adjacent texts merged.
///
/// # Errors
/// Throws as `new Rewriter`, `write` and `end`.
#[wasm_bindgen]
pub fn rewrite(
    text: &str,
    sources: &Sources,
    options: Option<JsRewriterOptions>,
) -> Result<JsRewritten, JsValue> {
    let json = match &options {
        Some(o) => stringify(o)?,
        None => None,
    };
    let (settings, numbering) = options_from_json(json.as_deref())?;
    let r = citeflow_core::rewrite_str(text, settings, sources.as_core().clone(), numbering)
        .map_err(BindingError::from)?;
    let out = RewrittenOut {
        text: &r.text,
        events: &r.events,
        numbering: r.numbering.entries(),
    };
    Ok(to_js(&out)?.unchecked_into())
}

fn name_of(value: &JsValue, what: &str) -> Result<String, BindingError> {
    value
        .as_string()
        .ok_or_else(|| BindingError::type_error("invalid_name", format!("{what} must be a string")))
}

/// Renders a source list (`done.sources` or `listedSources()`) as text, markdown, footnotes,
/// HTML or JSON; with `rounds` (`sources.rounds()`), grouped by search round.
///
/// # Errors
/// Throws `SettingsError` `unknown_name` for an unknown format, `SourceError`
/// `invalid_sources` for a malformed list.
#[wasm_bindgen(js_name = renderList)]
pub fn render_list(
    list: &JsListedSourceArray,
    format: &JsListFormat,
    rounds: Option<JsRoundArray>,
) -> Result<String, JsValue> {
    let format = name_of(format, "format")?
        .parse::<ListFormat>()
        .map_err(BindingError::from)?;
    let list: Vec<ListedSource> =
        from_js(list, "list", BindingError::invalid_sources)?.unwrap_or_default();
    let rounds: Option<Vec<Round>> = match &rounds {
        Some(r) => from_js(r, "rounds", BindingError::invalid_sources)?,
        None => None,
    };
    Ok(citeflow_core::render_list(&list, format, rounds.as_deref()))
}

fn prompt_marker(marker: &JsValue) -> Result<PromptMarker, BindingError> {
    Ok(name_of(marker, "marker")?.parse::<PromptMarker>()?)
}

/// The context block for the prompt: each source on one line, labelled with the marker the
/// model should copy, its text cut to `maxCharsPerSource` characters.
///
/// # Errors
/// Throws `SettingsError` `unknown_name` for an unknown marker.
#[wasm_bindgen(js_name = contextBlock)]
pub fn context_block(
    sources: &Sources,
    marker: &JsPromptMarker,
    #[wasm_bindgen(js_name = maxCharsPerSource)] max_chars_per_source: usize,
) -> Result<String, JsValue> {
    Ok(citeflow_core::context_block(
        sources.as_core(),
        prompt_marker(marker)?,
        max_chars_per_source,
    ))
}

/// The citation instruction for the prompt, with an example marker of these sources.
///
/// # Errors
/// Throws `SettingsError` `unknown_name` for an unknown marker.
#[wasm_bindgen(js_name = citationInstruction)]
pub fn citation_instruction(sources: &Sources, marker: &JsPromptMarker) -> Result<String, JsValue> {
    Ok(citeflow_core::citation_instruction(
        sources.as_core(),
        prompt_marker(marker)?,
    ))
}

/// Settings whose scanner recognises `marker` on top of `settings` (rank markers switch rank
/// mode on unless `settings` has one).
///
/// # Errors
/// Throws `SettingsError`.
#[wasm_bindgen(js_name = promptSettings)]
pub fn prompt_settings(
    marker: &JsPromptMarker,
    settings: Option<JsSettings>,
) -> Result<JsResolvedSettings, JsValue> {
    let json = match &settings {
        Some(s) => stringify(s)?,
        None => None,
    };
    let base = settings_from_json(json.as_deref())?;
    let s = prompt_marker(marker)?.settings(base);
    Ok(to_js(&SettingsOut::from(&s))?.unchecked_into())
}

/// The default settings, every key present.
///
/// # Errors
/// Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
#[wasm_bindgen(js_name = defaultSettings)]
pub fn default_settings() -> Result<JsResolvedSettings, JsValue> {
    Ok(to_js(&SettingsOut::from(&citeflow_core::Settings::default()))?.unchecked_into())
}
