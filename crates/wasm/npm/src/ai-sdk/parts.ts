// Core events → AI SDK stream parts, for the middleware and the agent transform alike: one
// `source` part per number shown for the first time in the answer (held until the next text, so
// that a provider's quote, which comes with the number's first citation, can join it), the text
// onto the open text part, each claim anchor as an empty `text-delta` carrying it.
//
// Claim anchors: a language model's stream has no data parts (streamText throws on a part type it
// does not know; `raw` parts reach neither fullStream without includeRawChunks nor the UI
// stream), so each anchor travels as an empty `text-delta` whose
// `providerMetadata.citeflow.anchor` holds it: streamText keeps empty deltas that carry metadata
// (and repeats a text part's last metadata on its later deltas: only an empty delta is a
// carrier), and toUIMessageStream forwards the metadata.
import type { Anchor, AnchorEvent, DoneEvent, Event, NumberEntry, SourceEvent } from "citeflow";

import type { CiteflowSourceMetadata, Part } from "./types.js";

/**
 * Where the emitter finds a number's key when it first shows it: the numbering table (read once
 * for a batch of events), or one number at a time (`ProviderStream.keyOf`: no table's JSON).
 */
export type Keys = (() => NumberEntry[]) | { keyOf(number: number): string | undefined };

/** The field of a `text-delta` that holds its text: `delta` in model parts, `text` in `streamText` parts. */
export type TextKey = "delta" | "text";

/** The core's `anchor` event as the record the parts carry (the core's Anchor JSON). */
export function anchorOf(ev: AnchorEvent): Anchor {
  const { type: _t, ...anchor } = ev;
  return anchor;
}

/** The AI SDK `source` part for the core's `source` event (a number shown for the first time). */
export function sourcePart(ev: SourceEvent, key: string | undefined, quote: string | null | undefined): Part {
  const s = ev.source;
  const meta: CiteflowSourceMetadata = { number: ev.number, sourceId: s.id };
  if (ev.round != null) meta.round = ev.round;
  if (quote) meta.quote = quote;
  if (s.locator?.chapter_title != null) meta.chapterTitle = s.locator.chapter_title;
  if (s.locator?.cfi != null) meta.cfi = s.locator.cfi;
  const id = key ?? s.key ?? s.id;
  if (s.url) {
    const p: Part = { type: "source", sourceType: "url", id, url: s.url, providerMetadata: { citeflow: meta } };
    if (s.title != null) p.title = s.title;
    return p;
  }
  return {
    type: "source",
    sourceType: "document",
    id,
    mediaType: "text/plain",
    title: s.title ?? s.id,
    providerMetadata: { citeflow: meta },
  };
}

/** The quote of the first citation of `number` in `events` after index `i` (a provider's cited text). */
function quoteOf(events: readonly Event[], i: number, number: number): string | null {
  for (let j = i + 1; j < events.length; j++) {
    const e = events[j]!;
    if (e.type === "citation" && e.number === number) return e.provider?.quote ?? null;
  }
  return null;
}

interface Held {
  ev: SourceEvent;
  key: string | undefined;
  quote: string | null;
}

/**
 * One answer's events turned into parts. `emit` takes each batch of core events with the text
 * part they belong to (`null`: the open one, or pending until one opens); the `done` events,
 * the final text and every anchor are kept for the finish metadata.
 */
export class PartEmitter {
  /** The open text part's id (the middleware's raw mode: text arrives before its part opens). */
  openText: string | null = null;
  /** The core's `done` events, one per rewriter of the answer. */
  readonly dones: DoneEvent[] = [];
  /** Every anchor of the answer, in the order they came. */
  readonly anchors: Anchor[] = [];
  /** The final answer when a provider bound a citation after its text was shown. */
  finalText: string | null = null;
  private keys = new Map<number, string>();
  private readonly shown = new Set<number>();
  private held: Held[] = [];
  private readonly pending: (string | Anchor)[] = [];

  constructor(private readonly textKey: TextKey) {}

  /** Whether text or anchors wait for a text part. */
  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Turns `events` into parts on `out`; `numbering` is read when a number's key is not known yet. */
  emit(events: readonly Event[], out: Part[], id: string | null, numbering: Keys): void {
    for (let i = 0; i < events.length; i++) {
      const ev = events[i]!;
      switch (ev.type) {
        case "text":
          this.text(ev.text, out, id, events, i);
          break;
        case "source":
          // One part per number in this answer (a later text id's rewriter shows it again).
          if (this.shown.has(ev.number)) break;
          this.shown.add(ev.number);
          if (!this.keys.has(ev.number)) {
            if (typeof numbering === "function") {
              this.keys = keysOf(numbering());
            } else {
              // The table only grows: one number's key is what the whole table would give.
              const key = numbering.keyOf(ev.number);
              if (key !== undefined) this.keys.set(ev.number, key);
            }
          }
          this.held.push({ ev, key: this.keys.get(ev.number), quote: null });
          break;
        case "citation": {
          const quote = ev.provider?.quote;
          if (quote && this.held.length) {
            const h = this.held.find((x) => x.ev.number === ev.number);
            if (h && h.quote == null) h.quote = quote;
          }
          break;
        }
        case "anchor": {
          // After the text of its sentence: onto the same text part, in order.
          const anchor = anchorOf(ev);
          this.anchors.push(anchor);
          this.pending.push(anchor);
          const target = id ?? this.openText;
          if (target != null) this.flushPending(target, out);
          break;
        }
        case "done":
          this.dones.push(ev);
          if (ev.text != null) this.finalText = ev.text;
          break;
        default:
      }
    }
  }

  /**
   * Text the core released (`events[i]`, or text alone from a compact call) onto the text part
   * `id` (`null`: the open one, or pending until one opens), after the held source parts.
   */
  text(text: string, out: Part[], id: string | null, events: readonly Event[] = [], i = 0): void {
    if (this.held.length) this.releaseSources(out, events, i);
    const target = id ?? this.openText;
    if (target != null && this.pending.length === 0) {
      // Nothing waits: the text goes straight onto its part.
      if (text) out.push(this.delta(target, text));
      return;
    }
    if (text) this.pending.push(text);
    if (target != null && this.pending.length) this.flushPending(target, out);
  }

  /** A `text-delta` part of `text` on `id` (the text under `delta` or `text`: see TextKey). */
  private delta(id: string, text: string): Part {
    return this.textKey === "delta" ? { type: "text-delta", id, delta: text } : { type: "text-delta", id, text };
  }

  /** The text (and anchors) released while no text part was open, onto `id`. */
  flushPending(id: string, out: Part[]): void {
    if (!this.pending.length) return;
    let text = "";
    for (const p of this.pending) {
      if (typeof p === "string") {
        text += p;
        continue;
      }
      if (text) out.push(this.delta(id, text));
      text = "";
      out.push({ type: "text-delta", id, [this.textKey]: "", providerMetadata: { citeflow: { anchor: p } } });
    }
    this.pending.length = 0;
    if (text) out.push(this.delta(id, text));
  }

  /** Emits the held source parts, with the quote of a citation later in `events` if they have none. */
  releaseSources(out: Part[], events: readonly Event[] = [], from = 0): void {
    if (!this.held.length) return;
    for (const h of this.held) {
      if (h.quote == null) h.quote = quoteOf(events, from, h.ev.number);
      out.push(sourcePart(h.ev, h.key, h.quote ?? h.ev.source.snippet));
    }
    this.held = [];
  }
}

function keysOf(entries: readonly NumberEntry[]): Map<number, string> {
  const m = new Map<number, string>();
  for (const e of entries) m.set(e.number, e.key);
  return m;
}
