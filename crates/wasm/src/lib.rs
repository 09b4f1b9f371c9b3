//! citeflow for browsers and Node: the core's rewriter, sources, source lists and prompt text
//! through wasm-bindgen, with TypeScript types.
//!
//! [`Sources`] holds what the model was shown, in rounds. A [`Rewriter`] takes a copy of them,
//! the settings and (for numbers per session) the session's numbering; it is fed `string` or
//! `Uint8Array` chunks with `write`/`end` (or `feed`/`finish`) and yields events from
//! `pollEvent`. Events, sources and numbering entries are plain JS objects with exactly the
//! core's serde JSON shape; settings are camelCase. Errors are JS `Error`s with `name` (the
//! family, e.g. `RewriteError`) and a stable `code`. The binding converts and never decides:
//! every marker, number and check comes from `citeflow-core`.
//!
//! With the `epub` feature (the npm package has it), `Book` opens an EPUB from its bytes and
//! cuts it into the passages `citeflow ingest` writes (same options, the same JSON objects),
//! `Book.reading` opens it at a CFI, and `parseCfi` / `compareCfi` read CFIs: `citeflow-epub`
//! through the same conversions.
//!
//! In JS:
//!
//! ```js
//! import { Sources, Rewriter } from "citeflow";
//! const sources = Sources.fromArray([{ id: "source_7", title: "Paris" }]);
//! const rw = new Rewriter(sources, { settings: { style: "brackets" } });
//! let text = "";
//! for (const chunk of ["Paris is the capital [[sou", "rce_7]]."]) {
//!   for (const ev of rw.feed(chunk)) if (ev.type === "text") text += ev.text;
//! }
//! for (const ev of rw.finish()) if (ev.type === "text") text += ev.text;
//! // text === "Paris is the capital [1]."
//! ```
//!
//! The same from Rust, through the wasm-bindgen API (wasm32 only, since it builds JS values):
//!
//! ```no_run
//! # #[cfg(target_arch = "wasm32")]
//! # fn main() -> Result<(), wasm_bindgen::JsValue> {
//! use citeflow_wasm::{Rewriter, Sources};
//! use wasm_bindgen::{JsCast, JsValue};
//! let mut sources = Sources::new();
//! let list = js_sys::JSON::parse(r#"[{"id": "source_7"}]"#)?;
//! sources.append_round(list.unchecked_ref(), None)?;
//! let mut rw = Rewriter::new(&sources, None)?;
//! rw.write(&JsValue::from_str("Paris [[sou").unchecked_into())?;
//! rw.write(&JsValue::from_str("rce_7]].").unchecked_into())?;
//! let events = rw.finish()?; // [text, source, citation, text, done]
//! # let _ = events;
//! # Ok(())
//! # }
//! # #[cfg(not(target_arch = "wasm32"))]
//! # fn main() {}
//! ```

#[cfg(feature = "epub")]
mod book;
mod error;
mod functions;
mod js;
mod provider;
mod rewriter;
mod settings;
mod sources;
mod types;

#[cfg(feature = "epub")]
pub use book::{compare_cfi, context_template, parse_cfi, Book};
pub use error::BindingError;
pub use functions::{
    citation_instruction, context_block, default_settings, prompt_settings, render_list, rewrite,
};
pub use provider::ProviderStream;
pub use rewriter::Rewriter;
pub use sources::Sources;
pub use types::*;
