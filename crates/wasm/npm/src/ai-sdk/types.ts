// The public types of citeflow/ai-sdk. Structural, with no import of `ai` or `@ai-sdk/provider`:
// the middleware is accepted by `wrapLanguageModel` of AI SDK 6 (LanguageModelV3Middleware) and
// AI SDK 7 (LanguageModelV4Middleware), the transform by `streamText`'s `experimental_transform`.
import type { Anchor, ListedSource, NumberEntry, PromptMarker, Report, Round, Settings, Source, Sources } from "citeflow";

/** A stream part of the AI SDK (model parts and `streamText` parts): read by its `type`. */
export interface Part {
  type: string;
  [key: string]: any;
}

/** What the prompt gets when `instruct` is on: the citation instruction and the context block. */
export interface InstructOptions {
  /** The marker the model is asked to write. Default: `"double_bracket"` (`[[source_3]]`). */
  marker?: PromptMarker;
  /** Each source's text in the context block is cut to this many characters. Default: 1200. */
  maxCharsPerSource?: number;
}

/** `providerMetadata.citeflow` of the `finish` part (and `generateText`'s `providerMetadata`). */
export interface CiteflowFinishMetadata {
  /** The final source list: every cited source with its number and count. */
  sources: ListedSource[];
  /** The core's report (counts and the body/list check). */
  report: Report;
  /** The numbering table after this answer: pass it as `numbering` to continue a session. */
  numbering: NumberEntry[];
  /** The final answer, present when a provider bound a citation after its text was shown. */
  text?: string;
  /** The search rounds (the agent transform). */
  rounds?: Round[];
  /**
   * With `anchors: true`: every citation's anchor, in the order they came (the core's `Anchor`:
   * `number`, `source_id`, `claim`, `quote` `{ text, origin, cfi?, offsets into the source's text }`,
   * `support`, `verdict`). Each entry of `sources` carries its own as `anchors` too.
   */
  anchors?: Anchor[];
}

/**
 * `providerMetadata.citeflow` of the empty `text-delta` part that carries an anchor (`anchors:
 * true`), sent as soon as the answer sentence that holds the citation is complete.
 */
export interface CiteflowAnchorMetadata {
  anchor: Anchor;
}

/** `providerMetadata.citeflow` of each numbered `source` part. */
export interface CiteflowSourceMetadata {
  /** The number `[n]` the text shows for this source. */
  number: number;
  /** The source's id (the app's id, or the one citeflow gave a provider citation). */
  sourceId: string;
  /** The search round that first registered it. */
  round?: number;
  /** The provider's cited text, when it sent one. */
  quote?: string;
  /** For book passages: the chapter. */
  chapterTitle?: string;
  /** For book passages: the EPUB CFI. */
  cfi?: string;
}

export interface CiteflowOptions {
  /** The sources the model is shown (a list, or a `Sources` with rounds). Provider citations bring their own. */
  sources?: Source[] | Sources;
  /** The core's settings (marker syntaxes, style, …). */
  settings?: Settings;
  /** The numbering to continue (numbers per session): a previous answer's `numbering`. */
  numbering?: NumberEntry[];
  /** Add the citation instruction and the context block to the prompt. Default: on when `sources` are given. */
  instruct?: boolean | InstructOptions;
  /**
   * Read the provider's own citations from its raw chunks (`includeRawChunks`). Default: true.
   * `false` when the model only writes markers: the text-deltas alone are rewritten (cheaper).
   */
  providerCitations?: boolean;
  /**
   * Claim anchors (the `anchors` setting): each citation's supporting quote of its source, a
   * support score and a verdict, sent as an empty `text-delta` with
   * `providerMetadata.citeflow.anchor` as soon as its sentence is complete, and listed at
   * `finish` (`anchors`, and `anchors` of each source). Default: false.
   */
  anchors?: boolean;
  /** Called with the final list and report when an answer ends. */
  onFinish?: (result: CiteflowFinishMetadata) => void;
}

/** The options each hook of a language model middleware is called with. */
export interface WrapOptions {
  doGenerate: () => PromiseLike<any>;
  doStream: () => PromiseLike<any>;
  params: any;
  model: any;
}

/**
 * A language model middleware (structurally an AI SDK 6 `LanguageModelV3Middleware` and an
 * AI SDK 7 `LanguageModelV4Middleware`).
 */
export interface CiteflowMiddleware {
  // The version tag each AI SDK checks by type; neither checks it at run time.
  readonly specificationVersion: any;
  transformParams: (options: { type: "generate" | "stream"; params: any; model: any }) => PromiseLike<any>;
  wrapStream: (options: WrapOptions) => PromiseLike<any>;
  wrapGenerate: (options: WrapOptions) => PromiseLike<any>;
}

export interface CiteflowTransformOptions {
  /** Sources known before the first step (more come from tool results). */
  sources?: Source[] | Sources;
  settings?: Settings;
  /** The numbering to continue (numbers per session). */
  numbering?: NumberEntry[];
  /** Claim anchors, as the middleware's option. Default: false. */
  anchors?: boolean;
  /** Called with the final list, rounds and report at the end of the call. */
  onFinish?: (result: CiteflowFinishMetadata) => void;
}

/** The UI message stream part `citeflowDataParts()` makes of each anchor. */
export interface CiteflowAnchorDataPart {
  type: "data-citeflow-anchor";
  id: string;
  data: Anchor;
}
