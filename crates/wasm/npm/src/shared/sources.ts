// What every integration reads from its framework's values: sources (a list or a `Sources`),
// the documents a tool returned, and the query a tool was called with.
import { Sources } from "citeflow";
import type { Source } from "citeflow";

/** Keeps the fields the core's Source has. */
export function asSource(d: Record<string, unknown> & { id: string }): Source {
  const s: Source = { id: d.id };
  for (const k of ["title", "url", "text", "snippet", "key"] as const) {
    const v = d[k];
    if (typeof v === "string") s[k] = v;
  }
  if (d.locator && typeof d.locator === "object") s.locator = d.locator as Source["locator"];
  if (d.metadata && typeof d.metadata === "object") s.metadata = d.metadata as Source["metadata"];
  return s;
}

/** `sources` as the core's `Sources`: a `Sources` as it is, an array of source-like objects read, anything else empty. */
export function toSources(s: unknown): Sources {
  if (s instanceof Sources) return s;
  return Sources.fromArray(Array.isArray(s) ? s.filter(isDocument).map(asSource) : []);
}

function isDocument(d: unknown): d is Record<string, unknown> & { id: string } {
  return d !== null && typeof d === "object" && typeof (d as { id?: unknown }).id === "string" && (d as { id: string }).id.trim() !== "";
}

function field(v: unknown, k: string): unknown {
  return v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined;
}

/**
 * The documents a tool's output carries: an array of `{ id, … }`, or its `sources` /
 * `documents` field (an AI SDK `{ type: "json", value }` output is read through its value).
 */
export function documentsOf(output: unknown): Source[] | null {
  const v = field(output, "type") === "json" && output !== null && typeof output === "object" && "value" in output ? field(output, "value") : output;
  const sources = field(v, "sources");
  const documents = field(v, "documents");
  const list = Array.isArray(v) ? v : Array.isArray(sources) ? sources : Array.isArray(documents) ? documents : null;
  if (!list) return null;
  const docs = list.filter(isDocument).map(asSource);
  return docs.length ? docs : null;
}

/** The round's name: the tool input's `query` (or `q`, `search`, `question`), else the input as JSON. */
export function queryOf(input: unknown): string | null {
  if (typeof input === "string") return input;
  for (const k of ["query", "q", "search", "question"]) {
    const v = field(input, k);
    if (typeof v === "string") return v;
  }
  return input == null ? null : JSON.stringify(input);
}
