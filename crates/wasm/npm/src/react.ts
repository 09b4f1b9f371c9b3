// citeflow/react: a headless hook over an AI SDK UIMessage. It reads the numbered source parts
// (citeflow/ai-sdk's, or the proxy's AI SDK stream: `providerMetadata.citeflow.number`, else
// the n-th source part is [n]) and cuts the text into plain runs and `[n]` citations linked to
// their source. Pure: no React import (nothing to memoise that costs more than the cut), and
// structural types (no import of `ai` or `react`).
// Claim anchors come from `data-citeflow-anchor` parts (citeflow/ai-sdk's citeflowDataParts),
// else from the anchor a text part's providerMetadata carries (the last one only survives there).
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

type PartLike = MessageLike["parts"][number];

const CITE = /\[(\d+)\]|【(\d+)】|\[\^(\d+)\]/g;

/** The numbered sources of a message's parts, in number order. */
function sourcesOf(parts: MessageLike["parts"]): CiteSource[] {
  const list: CiteSource[] = [];
  let order = 0;
  for (const p of parts) {
    if (p.type !== "source-url" && p.type !== "source-document" && p.type !== "source") continue;
    order += 1;
    const meta: Record<string, any> = p.providerMetadata?.citeflow ?? {};
    const number = typeof meta.number === "number" ? meta.number : order;
    const s: CiteSource = { number, id: meta.sourceId ?? meta.id ?? p.sourceId ?? p.id, key: p.sourceId ?? p.id };
    if (p.url) s.url = p.url;
    if (p.title) s.title = p.title;
    if (meta.quote) s.quote = meta.quote;
    const chapter = meta.chapterTitle ?? meta.chapter;
    if (chapter) s.chapterTitle = chapter;
    if (meta.cfi) s.cfi = meta.cfi;
    if (meta.round != null) s.round = meta.round;
    list.push(s);
  }
  return list.sort((a, b) => a.number - b.number);
}

/** The anchors of a message's parts, in the order they came, each once. */
function anchorsOf(parts: MessageLike["parts"]): Anchor[] {
  const list: Anchor[] = [];
  const seen = new Set<string>();
  const add = (a: Anchor | undefined) => {
    if (!a || typeof a.number !== "number") return;
    const key = `${a.number}:${a.claim?.byte_start}:${a.source_id}`;
    if (seen.has(key)) return;
    seen.add(key);
    list.push(a);
  };
  for (const p of parts) if (p.type === "data-citeflow-anchor") add(p.data);
  for (const p of parts) if (p.type === "text") add(p.providerMetadata?.citeflow?.anchor);
  return list;
}

/**
 * `{ segments, sources, byNumber, anchors, anchorOf }` of a UIMessage (or of its `parts`):
 * `segments` are `{ type: "text", text }` and `{ type: "citation", number, source, text }` in
 * order, a citation only for a number that has a source part.
 */
export function citeflowMessage(message: MessageLike | MessageLike["parts"]): CiteflowMessage {
  const parts: MessageLike["parts"] = Array.isArray(message) ? message : ((message as MessageLike | undefined)?.parts ?? []);
  const sources = sourcesOf(parts);
  const byNumber: Record<number, CiteSource> = {};
  for (const s of sources) byNumber[s.number] ??= s;
  const anchors = anchorsOf(parts);
  const ofNumber: Record<number, Anchor[]> = {};
  for (const a of anchors) (ofNumber[a.number] ??= []).push(a);
  for (const s of sources) if (ofNumber[s.number]) s.anchors = ofNumber[s.number];
  /** The anchor of the `occurrence`-th citation of `[n]` (0: the first), or undefined. */
  const anchorOf = (n: number, occurrence = 0): Anchor | undefined => ofNumber[n]?.[occurrence];
  const seenOf: Record<number, number> = {};
  const text = parts
    .filter((p: PartLike) => p.type === "text")
    .map((p: PartLike) => p.text as string)
    .join("");
  const segments: Segment[] = [];
  let at = 0;
  for (const m of text.matchAll(CITE)) {
    const number = Number(m[1] ?? m[2] ?? m[3]);
    const source = byNumber[number];
    if (!source) continue;
    if (m.index > at) segments.push({ type: "text", text: text.slice(at, m.index) });
    const seg: Segment = { type: "citation", number, source, text: m[0] };
    // The k-th [n] of the text is the k-th citation of n: its anchor is the k-th of n.
    const anchor = anchorOf(number, (seenOf[number] = (seenOf[number] ?? -1) + 1));
    if (anchor) seg.anchor = anchor;
    segments.push(seg);
    at = m.index + m[0].length;
  }
  if (at < text.length) segments.push({ type: "text", text: text.slice(at) });
  return { segments, sources, byNumber, anchors, anchorOf };
}

/** The hook: `const { segments, sources, byNumber, anchorOf } = useCiteflow(message)`. */
export function useCiteflow(message: MessageLike | MessageLike["parts"]): CiteflowMessage {
  return citeflowMessage(message);
}
