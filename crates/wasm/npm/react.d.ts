// Types of citeflow/react (structural: no import of `ai` or `react`).
import type { Anchor } from "citeflow";

export type { Anchor } from "citeflow";

/** A numbered source of a message. */
export interface CiteSource {
  /** The `[n]` the text shows. */
  number: number;
  /** The source's id. */
  id: string;
  /** The source part's id (citeflow/ai-sdk: the stable source key). */
  key: string;
  url?: string;
  title?: string;
  /** The provider's cited text. */
  quote?: string;
  /** Book passages: the chapter. */
  chapterTitle?: string;
  /** Book passages: the EPUB CFI. */
  cfi?: string;
  /** The search round that found it. */
  round?: number;
  /** Claim anchors (`anchors: true`): the anchor of each of its citations that has arrived, in order. */
  anchors?: Anchor[];
}

export type Segment =
  | { type: "text"; text: string }
  | { type: "citation"; number: number; source: CiteSource; text: string; anchor?: Anchor };

export interface CiteflowMessage {
  /** The message's text as plain runs and citations, in order. */
  segments: Segment[];
  /** The numbered sources in number order (the list below the answer). */
  sources: CiteSource[];
  /** The source of each number. */
  byNumber: Record<number, CiteSource>;
  /** Claim anchors that have arrived (`data-citeflow-anchor` parts), in order. */
  anchors: Anchor[];
  /**
   * The anchor of `[n]`: its quote (`anchor.quote?.text`, `anchor.quote?.cfi`), `support` and
   * `verdict`; `occurrence` picks the k-th citation of `[n]` in the text (default 0, the first).
   * Undefined until its sentence is complete.
   */
  anchorOf: (n: number, occurrence?: number) => Anchor | undefined;
}

/** The parts this reads: `text`, and `source-url` / `source-document` (or model `source`) parts. */
export interface MessageLike {
  parts: ReadonlyArray<{ type: string; [key: string]: any }>;
}

/** Cuts a UIMessage (or its parts) into text and `[n]` citations linked to their sources. */
export declare function citeflowMessage(message: MessageLike | MessageLike["parts"]): CiteflowMessage;

/** The headless hook: `const { segments, sources, byNumber, anchorOf } = useCiteflow(message)`. */
export declare function useCiteflow(message: MessageLike | MessageLike["parts"]): CiteflowMessage;
