//! Books: `citeflow-epub` in JS. A book opened from the bytes of an `.epub`, its chapters, its
//! passages cut exactly as `citeflow ingest` cuts them (same options, ids and JSON objects), the
//! reading view at a CFI, and CFIs parsed, compared and resolved.
//!
//! The binding converts and never decides: cutting, CFIs, reading and the passage record
//! (`citeflow_epub::BookPassage`, the one `citeflow ingest` writes) are the epub crate's;
//! `tests/js/book.test.mjs` compares every passage of the fixture books with the CLI's
//! `citeflow ingest` output byte for byte.

use citeflow_epub as epub;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::BindingError;
use crate::js::{from_js, to_js};

#[wasm_bindgen(typescript_custom_section)]
const TS_BOOK_TYPES: &str = r#"
/** A chapter of a book, from its table of contents. */
export interface Chapter {
  index: number;
  /** `null` for untitled leading content. */
  title: string | null;
  depth: number;
  spine_index: number;
  href: string;
  /** Where the chapter begins (`reading` opens it there); `null` for an entry that starts where the next one does. */
  cfi: string | null;
}

/** What the book functions throw: an `Error` whose `name` is `EpubError` (a book that cannot be opened; `code` e.g. `not_zip`, `encrypted`, `limit`) or `CfiError` (`code` `cfi_parse`, or why a CFI does not resolve: `not_spine`, `step_out_of_range`, ...). */
export interface BookError extends Error {
  name: "EpubError" | "CfiError" | "SettingsError";
  code: string;
}

/** How a book is cut into passages: `citeflow ingest`'s options. */
export interface PassageOptions {
  /** Largest passage in characters. Default: 800. */
  targetChars?: number;
  /** Characters of a passage's end the next one repeats. Default: 100. */
  overlapChars?: number;
  /** Keep ruby readings (`<rt>`) in the text. Default: false. */
  rubyText?: boolean;
}

/** A passage: exactly the JSON object of one line of `citeflow ingest`, which also reads as a `Source`. */
export interface BookPassage {
  /** `<book_key>#p<passage_index>`: the id the model cites. */
  id: string;
  /** Book title and chapter title joined by ` — `. */
  title: string;
  /** `book:<book id>`. */
  url: string;
  text: string;
  locator: Locator;
  book_key: string;
  book_id: string;
  book_title: string;
  passage_index: number;
  chapter_index: number;
  chapter_title: string | null;
  spine_index: number;
  href: string;
  /** Range CFI of the passage. */
  cfi: string;
  /** CFI of its first character. */
  start_cfi: string;
}

/** A place in a `Reading`: a paragraph and a character offset (code points) in its text. */
export interface TextPosition { paragraph: number; char_offset: number }

/** The chapter that holds a CFI, as paragraphs, with what the CFI covers marked. */
export interface Reading {
  spine_index: number;
  href: string;
  chapter_index: number;
  chapter_title: string | null;
  paragraphs: { text: string; cfi: string }[];
  /** `null` when the place has no text after it in the chapter. A point is an empty mark. */
  mark: { start: TextPosition; end: TextPosition } | null;
  /** The marked text, paragraphs joined by a blank line: a passage's range CFI gives exactly its text. */
  text: string;
  previous_chapter: number | null;
  next_chapter: number | null;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `PassageOptions`.
    #[wasm_bindgen(typescript_type = "PassageOptions")]
    pub type JsPassageOptions;
    /// `BookPassage[]`.
    #[wasm_bindgen(typescript_type = "BookPassage[]")]
    pub type JsBookPassageArray;
    /// `Chapter[]`.
    #[wasm_bindgen(typescript_type = "Chapter[]")]
    pub type JsChapterArray;
    /// `Reading`.
    #[wasm_bindgen(typescript_type = "Reading")]
    pub type JsReading;
}

fn open_error(e: epub::OpenError) -> BindingError {
    BindingError::new("EpubError", e.code(), e.to_string())
}

fn parse_error(e: epub::CfiParseError) -> BindingError {
    BindingError::new("CfiError", "cfi_parse", e.to_string())
}

fn resolve_error(e: epub::ResolveError) -> BindingError {
    BindingError::new("CfiError", e.code(), e.to_string())
}

fn parse(cfi: &str) -> Result<epub::Cfi, BindingError> {
    epub::Cfi::parse(cfi).map_err(parse_error)
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
struct PassageOptionsIn {
    target_chars: Option<usize>,
    overlap_chars: Option<usize>,
    ruby_text: Option<bool>,
}

impl PassageOptionsIn {
    /// The settings `citeflow ingest` uses for the same options.
    fn settings(&self) -> epub::ChunkSettings {
        epub::ChunkSettings::new()
            .with_target_chars(self.target_chars.unwrap_or(800))
            .with_overlap_chars(self.overlap_chars.unwrap_or(100))
            .with_ruby_text(self.ruby_text.unwrap_or(false))
    }
}

#[derive(Serialize)]
struct ChapterOut<'a> {
    index: usize,
    title: Option<&'a str>,
    depth: usize,
    spine_index: usize,
    href: &'a str,
    cfi: Option<String>,
}

#[derive(Serialize)]
struct ParagraphOut<'a> {
    text: &'a str,
    cfi: String,
}

#[derive(Serialize)]
struct PositionOut {
    paragraph: usize,
    char_offset: usize,
}

#[derive(Serialize)]
struct MarkOut {
    start: PositionOut,
    end: PositionOut,
}

#[derive(Serialize)]
struct ReadingOut<'a> {
    spine_index: usize,
    href: &'a str,
    chapter_index: usize,
    chapter_title: Option<&'a str>,
    paragraphs: Vec<ParagraphOut<'a>>,
    mark: Option<MarkOut>,
    text: String,
    previous_chapter: Option<usize>,
    next_chapter: Option<usize>,
}

/// An opened EPUB.
#[wasm_bindgen]
pub struct Book {
    inner: epub::Book,
}

impl Book {
    /// The passages as records (for Rust callers and tests).
    pub(crate) fn records(&self, settings: &epub::ChunkSettings) -> Vec<epub::BookPassage> {
        epub::BookPassage::from_book(&self.inner, settings)
    }
}

#[wasm_bindgen]
impl Book {
    /// Opens a book from the bytes of an `.epub` file.
    ///
    /// # Errors
    /// Throws `EpubError` (`not_zip`, `missing_container`, `encrypted`, `limit`, ...).
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8]) -> Result<Book, JsValue> {
        let inner = epub::Book::open(bytes, &epub::Limits::default()).map_err(open_error)?;
        Ok(Book { inner })
    }

    /// The title (`dc:title`), empty if none.
    #[wasm_bindgen(getter)]
    pub fn title(&self) -> String {
        self.inner.metadata().title.clone().unwrap_or_default()
    }

    /// The package's unique identifier, empty if none.
    #[wasm_bindgen(getter, js_name = bookId)]
    pub fn book_id(&self) -> String {
        self.inner.metadata().identifier.clone().unwrap_or_default()
    }

    /// The short key passage ids start with (as `citeflow ingest`).
    #[wasm_bindgen(getter, js_name = bookKey)]
    pub fn book_key(&self) -> String {
        epub::book_key(&self.book_id(), &self.title())
    }

    /// The language (`dc:language`), if named.
    #[wasm_bindgen(getter)]
    pub fn language(&self) -> Option<String> {
        self.inner.metadata().language.clone()
    }

    /// The chapters in reading order.
    ///
    /// # Errors
    /// Throws `Error` `internal` only on a conversion bug.
    pub fn chapters(&self) -> Result<JsChapterArray, JsValue> {
        let out: Vec<ChapterOut<'_>> = self
            .inner
            .chapters()
            .iter()
            .map(|c| ChapterOut {
                index: c.index,
                title: c.title.as_deref(),
                depth: c.depth,
                spine_index: c.spine_index,
                href: &c.href,
                cfi: self.inner.chapter_cfi(c.index).map(|x| x.to_string()),
            })
            .collect();
        Ok(to_js(&out)?.unchecked_into())
    }

    /// The passages, cut as `citeflow ingest` cuts them with the same options: each the JSON
    /// object of one line of its output.
    ///
    /// # Errors
    /// Throws `SettingsError` `invalid_settings` for options of the wrong shape.
    pub fn passages(
        &self,
        options: Option<JsPassageOptions>,
    ) -> Result<JsBookPassageArray, JsValue> {
        let opts: PassageOptionsIn = match &options {
            Some(o) => from_js(o, "options", BindingError::invalid_settings)?.unwrap_or_default(),
            None => PassageOptionsIn::default(),
        };
        Ok(to_js(&self.records(&opts.settings()))?.unchecked_into())
    }

    /// The chapter that holds `cfi`, as paragraphs, with what it covers marked; `text` is the
    /// marked text (a passage's range CFI gives exactly the passage's text when `rubyText` is
    /// what the passage was cut with).
    ///
    /// # Errors
    /// Throws `CfiError` (`cfi_parse`, or a code saying why it does not resolve).
    pub fn reading(
        &self,
        cfi: &str,
        options: Option<JsPassageOptions>,
    ) -> Result<JsReading, JsValue> {
        let opts: PassageOptionsIn = match &options {
            Some(o) => from_js(o, "options", BindingError::invalid_settings)?.unwrap_or_default(),
            None => PassageOptionsIn::default(),
        };
        let cfi = parse(cfi)?;
        let r = self
            .inner
            .reading(&cfi, opts.ruby_text.unwrap_or(false))
            .map_err(resolve_error)?;
        let out = ReadingOut {
            spine_index: r.spine_index,
            href: &r.href,
            chapter_index: r.chapter_index,
            chapter_title: r.chapter_title.as_deref(),
            paragraphs: r
                .paragraphs
                .iter()
                .map(|p| ParagraphOut {
                    text: &p.text,
                    cfi: p.cfi.to_string(),
                })
                .collect(),
            mark: r.mark.map(|s| MarkOut {
                start: PositionOut {
                    paragraph: s.start.paragraph,
                    char_offset: s.start.char_offset,
                },
                end: PositionOut {
                    paragraph: s.end.paragraph,
                    char_offset: s.end.char_offset,
                },
            }),
            text: r.marked_text(),
            previous_chapter: r.previous_chapter,
            next_chapter: r.next_chapter,
        };
        Ok(to_js(&out)?.unchecked_into())
    }

    /// The text a CFI names: a range's text (as written), or up to `maxChars` characters after
    /// a point (default 200).
    ///
    /// # Errors
    /// Throws `CfiError`.
    pub fn resolve(
        &self,
        cfi: &str,
        #[wasm_bindgen(js_name = maxChars)] max_chars: Option<usize>,
    ) -> Result<String, JsValue> {
        let cfi = parse(cfi)?;
        let r = self.inner.resolve(&cfi).map_err(resolve_error)?;
        Ok(if r.end.is_some() {
            self.inner.text_of(&r)
        } else {
            self.inner.text_after(&r.start, max_chars.unwrap_or(200))
        })
    }
}

/// The context form book RAG apps use: `【{n}】(章:{chapter_index}, CFI:{cfi})` and the text
/// on the next line (the Python package's `citeflow.context.BOOK_TEMPLATE`).
const BOOK_TEMPLATE: &str = "【{n}】(章:{chapter_index}, CFI:{cfi})\n{text}";

/// `template` for one source of rank `rank`, its placeholders replaced in one pass.
fn fill(template: &str, rank: usize, s: &citeflow_core::Source, max_chars: usize) -> String {
    let loc = s.locator.as_ref();
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name = after.find('}').map(|close| &after[..close]);
        let value = match name {
            Some("n") => Some(rank.to_string()),
            Some("id") => Some(s.id.clone()),
            Some("title") => Some(s.title.clone().unwrap_or_default()),
            Some("url") => Some(s.url.clone().unwrap_or_default()),
            Some("text") => Some(
                s.text
                    .as_deref()
                    .or(s.snippet.as_deref())
                    .unwrap_or("")
                    .chars()
                    .take(max_chars)
                    .collect(),
            ),
            Some("chapter_index") => Some(
                loc.and_then(|l| l.chapter_index)
                    .map(|i| i.to_string())
                    .unwrap_or_default(),
            ),
            Some("chapter_title") => Some(
                loc.and_then(|l| l.chapter_title.clone())
                    .unwrap_or_default(),
            ),
            Some("cfi") => Some(loc.and_then(|l| l.cfi.clone()).unwrap_or_default()),
            _ => None,
        };
        match (value, name) {
            (Some(v), Some(n)) => {
                out.push_str(&v);
                rest = &after[n.len() + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The sources as a context block written with `template` (default: the book form
/// `【{n}】(章:{chapter_index}, CFI:{cfi})\n{text}`), one block a source, blocks separated by a
/// blank line. Placeholders: `{n}` (rank), `{id}`, `{title}`, `{url}`, `{text}` (cut to
/// `maxCharsPerSource` characters, default 1000), `{chapter_index}`, `{chapter_title}`, `{cfi}`;
/// absent values are empty and other braces are kept. Ask for `rank_full_width` markers with
/// `citationInstruction(sources, "rank_full_width")` and rewrite with
/// `promptSettings("rank_full_width")`.
#[wasm_bindgen(js_name = contextTemplate)]
pub fn context_template(
    sources: &crate::Sources,
    template: Option<String>,
    #[wasm_bindgen(js_name = maxCharsPerSource)] max_chars_per_source: Option<usize>,
) -> String {
    let template = template.as_deref().unwrap_or(BOOK_TEMPLATE);
    let max = max_chars_per_source.unwrap_or(1000);
    sources
        .as_core()
        .iter()
        .enumerate()
        .map(|(i, s)| fill(template, i + 1, s, max))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A CFI in its canonical form (`epubcfi(…)`, `^` escapes as the spec writes them).
///
/// # Errors
/// Throws `CfiError` `cfi_parse` naming the byte of the problem.
#[wasm_bindgen(js_name = parseCfi)]
pub fn parse_cfi(cfi: &str) -> Result<String, JsValue> {
    Ok(parse(cfi)?.to_string())
}

/// -1, 0 or 1 by the spec's reading order; `undefined` when the two cannot be ordered.
///
/// # Errors
/// Throws `CfiError` `cfi_parse` for a CFI that does not parse.
#[wasm_bindgen(js_name = compareCfi)]
pub fn compare_cfi(a: &str, b: &str) -> Result<Option<i8>, JsValue> {
    Ok(parse(a)?.compare(&parse(b)?).map(|o| o as i8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use citeflow_core::Locator;
    use epub::book_key;

    #[test]
    fn book_keys_are_ingests() {
        // The values citeflow_index::book_key gives (its own test's inputs).
        assert_eq!(
            book_key(
                "edu.nyu.itp.future-of-publishing.alice-in-wonderland",
                "Alice's Adventures in Wonderland"
            ),
            "alice-s-adve-e50036"
        );
        assert!(book_key("", "草枕").starts_with("b-"));
    }

    #[test]
    fn templates_fill_each_placeholder_once() {
        let s = citeflow_core::Source::new("p3")
            .with_text("a {cfi} b")
            .with_locator(Locator {
                chapter_index: Some(2),
                chapter_title: None,
                cfi: Some("epubcfi(/6/8!/4)".into()),
                page: None,
            });
        assert_eq!(
            fill(BOOK_TEMPLATE, 1, &s, 1000),
            "【1】(章:2, CFI:epubcfi(/6/8!/4))\na {cfi} b"
        );
        assert_eq!(fill("{x} {n}{ {title}|", 4, &s, 3), "{x} 4{ |");
        assert_eq!(fill("{text}", 1, &s, 3), "a {");
    }
}
