//! TypeScript declarations of the plain JS objects that cross the boundary.
//!
//! Records (sources, events, numbering entries, listed sources, rounds) have exactly the core's
//! serde JSON shape, snake_case keys included, so they are the same objects the server, the
//! CLI and the Python package exchange. Settings and options are API, so they are camelCase.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** A marker syntax the scanner recognises. */
export type Syntax =
  | "double_bracket" | "cite_colon" | "cite_tag" | "single_bracket" | "bare_id"
  | "openai_cite" | "assistants_cite" | "footnote";

/** How numbers are written into the text: `[1]`, `[[1]](url)`, `【1】`, `<sup>…</sup>`, `[^1]`, or a template with `{n}`, `{id}`, `{url}`, `{title}`. */
export type Style =
  | "brackets" | "markdown_link" | "full_width" | "html" | "footnote" | "remove" | "as_written"
  | "markdown" | "fullwidth" | "as-written" | `template:${string}` | `html_template:${string}`
  | { template: string } | { html_template: string };

/** The shape of ids in ambiguous markers: `"source_<digits>"`, `"doc-<word>"`, or its parts. */
export type IdShape = string | { prefix: string; body: "digits" | "word" };

/** Everything that decides how a stream is rewritten. Every key is optional; the defaults are the core's. */
export interface Settings {
  /** Default: all but `bare_id` and `footnote`. */
  syntaxes?: Syntax[];
  /** Default: `"source_<digits>"`. */
  idShape?: IdShape;
  /** Whether `[2]` / `【2】` are ranks into the sources' order. Default: `"off"`. */
  rank?: "off" | "renumber" | "keep";
  /** Unknown ids: `[?]`, nothing, or the marker as written. Default: `"mark"`. */
  unknown?: "mark" | "drop" | "keep";
  /** Default: `"brackets"`. */
  style?: Style;
  /** Hold-back cap in UTF-8 bytes (at least 16). Default: 64. */
  maxPendingBytes?: number;
  /** Default: `"replace"`. */
  invalidUtf8?: "replace" | "error";
  /** `"external"`: numbers come from a shared store via `number_needed` events. Default: `"local"`. */
  numberSource?: "local" | "external";
  /** Whether sources with the same canonical key (url + locator) share one number. Default: true. */
  dedupe?: boolean;
  /** Whether markers in code spans and fences are left alone. Default: true. */
  skipCode?: boolean;
  /**
   * Claim anchors: an `anchor` event per citation once the answer sentence that holds it is
   * complete (the quote of the source that supports it, a support score and a verdict), and
   * `anchors` in the done event's list. Default: false.
   */
  anchors?: boolean;
  /** How much of a source's `text` anchoring indexes, in UTF-8 bytes (1024 to 64 MiB); a longer text is anchored over its first part (`quote.truncated`). Default: 1048576 (1 MiB). */
  maxAnchorSourceBytes?: number;
}

/** Settings as read back from a rewriter: every key present, `idShape` as its parts. */
export interface ResolvedSettings extends Required<Settings> {
  idShape: { prefix: string; body: "digits" | "word" };
}

/** Options of `new Rewriter(sources, options)` and `rewrite(text, sources, options)`. */
export interface RewriterOptions {
  settings?: Settings;
  /** The numbering to continue: omit for numbers per answer, pass the session's saved entries for numbers per session. */
  numbering?: NumberEntry[];
}

/** Where in a document a source is. */
export interface Locator {
  chapter_index?: number;
  chapter_title?: string;
  cfi?: string;
  page?: string;
}

/** A retrieved source the model may cite. */
export interface Source {
  id: string;
  title?: string;
  url?: string;
  text?: string;
  snippet?: string;
  locator?: Locator;
  key?: string;
  metadata?: Record<string, string>;
}

/** One search round: its query and the ids it registered. */
export interface Round {
  number: number;
  query: string | null;
  source_ids: string[];
}

/** One row of the numbering table: save these to continue the numbering of a session. */
export interface NumberEntry {
  number: number;
  key: string;
  source_id: string;
}

/** A cited source in the final list. */
export interface ListedSource {
  number: number;
  source: Source;
  round?: number;
  citations: number;
  /** With `anchors` on: the anchor of each of its citations, in order. */
  anchors?: Anchor[];
}

/** Counts and checks made when the stream ends. Offsets and sizes are UTF-8 bytes. */
export interface Report {
  citations: number;
  unresolved: number;
  released_holdbacks: number;
  input_bytes: number;
  output_bytes: number;
  new_numbers: number;
  numbers_in_body: number[];
  numbers_listed: number[];
  verified: boolean;
}

/** A number shown for the first time in this stream (comes before the text that shows it). */
export interface SourceEvent { type: "source"; number: number; source: Source; round?: number; is_new: boolean }
/** Rendered text; concatenated, the texts are the whole answer. */
export interface TextEvent { type: "text"; text: string }
/** A position in the rendered output in the three units strings are indexed with. */
export interface Position {
  /** UTF-8 bytes. */
  bytes: number;
  /** Code points (Python string indexes). */
  chars: number;
  /** UTF-16 code units (JavaScript string indexes). */
  utf16: number;
}
/** A range `start..end` of the rendered output. */
export interface Span { start: Position; end: Position }
/** What a provider said about a citation it reported beside the text (`ProviderStream`). */
export interface CitationDetail {
  /** The text the provider says supports the answer, for a hover. */
  quote?: string;
  /** The cited part of the rendered output, when the provider said which it is. */
  span?: Span;
  /** Present (true) when the citation arrived after its text was shown: the number is in no `text` event; `done.text` has it. */
  late?: boolean;
  /** Present (true) when the number stands for `span` (the model's own inline link to the cited url) instead of following it. */
  replaces_span?: boolean;
}
/**
 * A resolved citation. `byte_offset` (output) and `input_byte_offset` (decoded input) are UTF-8 bytes;
 * `utf16_offset` is the output position as a JavaScript string index, `char_offset` in code points.
 */
export interface CitationEvent {
  type: "citation";
  number: number;
  source_id: string;
  byte_offset: number;
  input_byte_offset: number;
  char_offset: number;
  utf16_offset: number;
  /** Absent for a marker the model wrote. */
  provider?: CitationDetail;
}
/**
 * A range of a text in the three units strings are indexed with: `utf16_start`/`utf16_end` are
 * JavaScript string indexes (`text.slice(r.utf16_start, r.utf16_end)`), `char_` code points,
 * `byte_` UTF-8 bytes.
 */
export interface TextRange {
  byte_start: number;
  byte_end: number;
  char_start: number;
  char_end: number;
  utf16_start: number;
  utf16_end: number;
}
/**
 * The part of the cited source a claim stands on. With its range (`byte_start` … `utf16_end`):
 * where it is in the source's `text` (`source.text.slice(q.utf16_start, q.utf16_end) === q.text`);
 * without: a provider's quote the source's text does not hold.
 */
export interface Quote extends Partial<TextRange> {
  text: string;
  /** `"source"`: chosen by citeflow from the source's text; `"provider"`: the provider's own cited text. */
  origin: "source" | "provider";
  /** An EPUB CFI range of the quote in its book (book passages, when the front-end knows the book). */
  cfi?: string;
  /** Present (true) when the source's text was longer than `maxAnchorSourceBytes` and only its first part was searched. */
  truncated?: boolean;
}
/** What the support score says: `unsupported` means nothing found in the source says the claim, not that it is false. */
export type Verdict = "supported" | "weak" | "unsupported";
/** One citation's anchor: the claim it ends, the quote of its source, and how well the quote supports the claim. */
export interface Anchor {
  number: number;
  source_id: string;
  /** The sentence of the rendered answer that the citation supports. */
  claim: TextRange;
  /** `null` when no sentence of the source shares a term with the claim. */
  quote: Quote | null;
  /** In [0, 1], three decimals: `supported` from 0.5, `weak` from 0.25. */
  support: number;
  verdict: Verdict;
}
/** `anchors: true` only: a citation's anchor, as soon as the answer sentence that holds it is complete (after that citation's events). */
export interface AnchorEvent extends Anchor { type: "anchor" }
/** A marker, or one id in it, that did not resolve. */
export interface UnresolvedEvent { type: "unresolved"; raw: string; reference: string; reason: "unknown_id" | "rank_out_of_range"; byte_offset: number; input_byte_offset: number }
/** `numberSource: "external"` only: answer with `provideNumber(key, n)`. */
export interface NumberNeededEvent { type: "number_needed"; key: string; source_id: string }
/** The end: the final source list and the report; `text` is the final answer when provider citations were bound after their text was shown. */
export interface DoneEvent { type: "done"; sources: ListedSource[]; report: Report; text?: string; uncited?: Source[] }
/** One output of the rewriter, exactly the core's serde JSON of `Event`. */
export type Event = SourceEvent | TextEvent | CitationEvent | AnchorEvent | UnresolvedEvent | NumberNeededEvent | DoneEvent;

/** A provider API's stream format; `"auto"` detects it from the first payload. */
export type Dialect =
  | "auto" | "openai-chat" | "openai-responses" | "anthropic" | "bedrock" | "cohere" | "gemini" | "gemini-interactions";

/** How the bytes given to `ProviderStream.feedBytes` are framed. */
export type Framing = "auto" | "sse" | "jsonl" | "text";

/** Options of `new ProviderStream(sources, options)`. */
export interface ProviderStreamOptions {
  settings?: Settings;
  /** The numbering to continue (the session's saved entries). */
  numbering?: NumberEntry[];
  /** Default: `"auto"`. */
  dialect?: Dialect;
  /** Default: `"auto"`. */
  framing?: Framing;
}

/** One parsed provider event (an SDK's stream event object), or its JSON text. A JSON string value is a chunk of answer text. */
export type ProviderEvent = Record<string, unknown> | string;

/** The result of `rewrite`. */
export interface Rewritten {
  text: string;
  /** Every event, adjacent texts merged. */
  events: Event[];
  numbering: NumberEntry[];
}

/** A source-list format. */
export type ListFormat = "text" | "markdown" | "footnotes" | "html" | "json";

/** The marker form the model is asked to write. */
export type PromptMarker = "double_bracket" | "cite_colon" | "cite_tag" | "single_bracket" | "rank" | "rank_full_width";

/** Whether a chunk given with a sequence number or offset was new. */
export type Accepted = "new" | "duplicate";

/** What every function of this package throws (besides wasm traps). */
export interface CiteflowError extends Error {
  name: "SettingsError" | "SourceError" | "NumberingError" | "RewriteError" | "RestoreError" | "ProviderError" | "TypeError" | "RangeError" | "Error";
  /** Stable snake_case code, e.g. `unknown_name`, `duplicate_id`, `invalid_utf8`, `ended`, `gap`. */
  code: string;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `string | Uint8Array`.
    #[wasm_bindgen(typescript_type = "string | Uint8Array")]
    pub type Chunk;
    /// `Settings`.
    #[wasm_bindgen(typescript_type = "Settings")]
    pub type JsSettings;
    /// `ResolvedSettings`.
    #[wasm_bindgen(typescript_type = "ResolvedSettings")]
    pub type JsResolvedSettings;
    /// `RewriterOptions`.
    #[wasm_bindgen(typescript_type = "RewriterOptions")]
    pub type JsRewriterOptions;
    /// `Source`.
    #[wasm_bindgen(typescript_type = "Source | undefined")]
    pub type JsMaybeSource;
    /// `Source[]`.
    #[wasm_bindgen(typescript_type = "Source[]")]
    pub type JsSourceArray;
    /// `Round[]`.
    #[wasm_bindgen(typescript_type = "Round[]")]
    pub type JsRoundArray;
    /// `NumberEntry[]`.
    #[wasm_bindgen(typescript_type = "NumberEntry[]")]
    pub type JsNumberEntryArray;
    /// `ListedSource[]`.
    #[wasm_bindgen(typescript_type = "ListedSource[]")]
    pub type JsListedSourceArray;
    /// `Event | undefined`.
    #[wasm_bindgen(typescript_type = "Event | undefined")]
    pub type JsMaybeEvent;
    /// `Event[]`.
    #[wasm_bindgen(typescript_type = "Event[]")]
    pub type JsEventArray;
    /// `Rewritten`.
    #[wasm_bindgen(typescript_type = "Rewritten")]
    pub type JsRewritten;
    /// `ListFormat`.
    #[wasm_bindgen(typescript_type = "ListFormat")]
    pub type JsListFormat;
    /// `PromptMarker`.
    #[wasm_bindgen(typescript_type = "PromptMarker")]
    pub type JsPromptMarker;
    /// `Accepted`.
    #[wasm_bindgen(typescript_type = "Accepted")]
    pub type JsAccepted;
    /// `ProviderStreamOptions`.
    #[wasm_bindgen(typescript_type = "ProviderStreamOptions")]
    pub type JsProviderStreamOptions;
    /// `ProviderEvent`.
    #[wasm_bindgen(typescript_type = "ProviderEvent")]
    pub type JsProviderEvent;
    /// `ProviderEvent | Uint8Array`.
    #[wasm_bindgen(typescript_type = "ProviderEvent | Uint8Array")]
    pub type JsProviderEventOrBytes;
    /// `string | Event[]`.
    #[wasm_bindgen(typescript_type = "string | Event[]")]
    pub type JsTextOrEventArray;
    /// `boolean | string | Event[]`.
    #[wasm_bindgen(typescript_type = "boolean | string | Event[]")]
    pub type JsLeanRelease;
}
