//! Python bindings of citeflow: the `citeflow._citeflow` extension module behind the `citeflow`
//! package, built with PyO3 and maturin as an abi3 wheel (CPython 3.11+: the
//! 3.11 stable ABI reads `str` chunks without copying them).
//!
//! The binding converts and never decides: every marker, numbering and rendering rule is
//! `citeflow-core`'s. [`rewriter::Rewriter`] wraps the core `Rewriter` in a small lifecycle
//! state; [`rewriter::Session`] registers sources in rounds and keeps a numbering per answer or
//! per session; events come out as one small class per kind (`events`); values (`Source`,
//! `Numbering`, `Report`, …) wrap the core types and convert through the core's serde form;
//! core errors become one Python exception class per error family (`errors`). A panic in the
//! core is caught at the call, poisons that rewriter, and surfaces as `RewriteError`.
//!
//! [`provider::ProviderStream`] reads a provider API's stream (Anthropic, OpenAI Chat and
//! Responses, Gemini, Cohere, Bedrock) with the core's readers, so provider-native citations
//! are numbered in the same table as markers.
//!
//! Byte offsets in events are the core's: UTF-8 bytes of the rendered output or the input;
//! citations also carry code-point (`char_offset`) and UTF-16 (`utf16_offset`) offsets.
//! The Python package lives in `python/citeflow/` with the `.pyi` stub and `py.typed`.

mod anchor;
mod convert;
mod detail;
mod epub;
mod errors;
mod events;
mod funcs;
mod provider;
mod rewriter;
mod settings;
mod types;

use pyo3::prelude::*;

/// The native module of the `citeflow` package.
#[pymodule]
fn _citeflow(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    epub::register(m)?;
    m.add_class::<types::Locator>()?;
    m.add_class::<types::Source>()?;
    m.add_class::<types::Round>()?;
    m.add_class::<types::Sources>()?;
    m.add_class::<types::NumberEntry>()?;
    m.add_class::<types::Numbering>()?;
    m.add_class::<types::ListedSource>()?;
    m.add_class::<types::Report>()?;
    m.add_class::<settings::Settings>()?;
    m.add_class::<events::TextEvent>()?;
    m.add_class::<events::SourceEvent>()?;
    m.add_class::<events::CitationEvent>()?;
    m.add_class::<events::UnresolvedEvent>()?;
    m.add_class::<events::NumberNeededEvent>()?;
    m.add_class::<events::DoneEvent>()?;
    m.add_class::<anchor::AnchorEvent>()?;
    m.add_class::<anchor::Quote>()?;
    m.add_class::<anchor::TextRange>()?;
    m.add_class::<detail::Position>()?;
    m.add_class::<detail::Span>()?;
    m.add_class::<detail::CitationDetail>()?;
    m.add_class::<provider::ProviderStream>()?;
    m.add_class::<rewriter::Rewriter>()?;
    m.add_class::<rewriter::Session>()?;
    m.add_class::<funcs::Rewritten>()?;
    m.add_class::<funcs::SseEvent>()?;
    m.add_class::<funcs::SseDecoder>()?;
    m.add_function(wrap_pyfunction!(funcs::rewrite_str, m)?)?;
    m.add_function(wrap_pyfunction!(funcs::render_list, m)?)?;
    m.add_function(wrap_pyfunction!(funcs::context_block, m)?)?;
    m.add_function(wrap_pyfunction!(funcs::citation_instruction, m)?)?;
    m.add_function(wrap_pyfunction!(funcs::prompt_settings, m)?)?;
    m.add_function(wrap_pyfunction!(funcs::chunk_text, m)?)?;
    m.add("MIN_PENDING_BYTES", citeflow_core::MIN_PENDING_BYTES)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
