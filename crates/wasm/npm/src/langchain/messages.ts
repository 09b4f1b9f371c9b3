// LangChain.js messages read and copied structurally (no import of `@langchain/core`): a
// message's kind, its text, the documents a tool message carries, and a copy with new fields
// made by the message's own class.
import type { Source } from "citeflow";

import { documentsOf } from "../shared/sources.js";

/** A LangChain.js message (`BaseMessage`): the fields citeflow reads. */
export interface MessageLike {
  content: string | ReadonlyArray<unknown>;
  id?: string | undefined;
  name?: string | undefined;
  additional_kwargs?: Record<string, unknown>;
  artifact?: unknown;
  tool_calls?: ReadonlyArray<unknown>;
  /** `"ai"`, `"tool"`, `"human"`, `"system"` (LangChain.js v1 messages). */
  type?: string;
  _getType?: () => string;
  lc_kwargs?: Record<string, unknown>;
}

/** Where a tool message carries its round (`{ query, sources }`), in `additional_kwargs`. */
export const ROUND_KEY = "citeflow_round";

/**
 * Where a tool message carries its thread before its round (`{ rounds, numbering }`): the stream
 * adapter continues a checkpointed thread's numbers from the first tool message of a run.
 */
export const THREAD_KEY = "citeflow_thread";

/** Where a numbered answer carries what citeflow made of it (`{ raw, text, sources, numbering }`). */
export const CITEFLOW_KEY = "citeflow";

/** A message's kind: `"ai"`, `"tool"`, … (an `AIMessageChunk` is `"ai"`). */
export function kindOf(m: unknown): string | undefined {
  if (m === null || typeof m !== "object") return undefined;
  const msg = m as MessageLike;
  if (typeof msg._getType === "function") return msg._getType();
  return typeof msg.type === "string" ? msg.type : undefined;
}

/** The text of a message's content: a string, or its text blocks joined. */
export function textOf(content: MessageLike["content"] | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const block of content as unknown[]) {
    if (typeof block === "string") text += block;
    else if (block && typeof block === "object" && (block as { type?: unknown }).type === "text") {
      const t = (block as { text?: unknown }).text;
      if (typeof t === "string") text += t;
    }
  }
  return text;
}

/** `content` with its text replaced: a string becomes `text`; blocks keep their other blocks, one text block where the first was. */
export function withText(content: MessageLike["content"], text: string): MessageLike["content"] {
  if (typeof content === "string") return text;
  const out: unknown[] = [];
  let placed = false;
  for (const block of content) {
    const isText = typeof block === "string" || (block !== null && typeof block === "object" && (block as { type?: unknown }).type === "text");
    if (!isText) out.push(block);
    else if (!placed) {
      out.push({ type: "text", text });
      placed = true;
    }
  }
  return placed ? out : [...out, { type: "text", text }];
}

/** A record kept in a message's `additional_kwargs`, when it is an object. */
export function recordOf(m: MessageLike, key: string): Record<string, unknown> | undefined {
  const v = m.additional_kwargs?.[key];
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/**
 * A copy of `m` made by its own class (`ToolMessage`, `AIMessage`, `AIMessageChunk`) with
 * `update` over its fields: LangChain's messages are values, copied rather than changed.
 */
export function copyMessage<T extends MessageLike>(m: T, update: Partial<MessageLike>): T {
  const fields: Record<string, unknown> = { ...(m.lc_kwargs ?? {}) };
  for (const k of ["content", "id", "name", "additional_kwargs", "response_metadata", "tool_calls", "invalid_tool_calls", "usage_metadata", "tool_call_id", "artifact", "status", "metadata"]) {
    const v = (m as unknown as Record<string, unknown>)[k];
    if (v !== undefined) fields[k] = v;
  }
  const Ctor = (m as unknown as { constructor: new (fields: Record<string, unknown>) => T }).constructor;
  return new Ctor({ ...fields, ...update });
}

/** The documents of a tool message: its artifact (`Document`s, dicts), else its content when that is a JSON list of results. */
export function toolDocuments(m: MessageLike): Source[] | null {
  const fromArtifact = documentsOf(asDocuments(m.artifact));
  if (fromArtifact) return fromArtifact;
  if (typeof m.content !== "string") return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(m.content);
  } catch {
    return null;
  }
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
    const o = parsed as Record<string, unknown>;
    parsed = ["results", "documents", "hits"].map((k) => o[k]).find(Array.isArray) ?? [parsed];
  }
  return documentsOf(asDocuments(parsed));
}

/**
 * Items as the documents `documentsOf` reads: a LangChain `Document` (`pageContent`, `metadata`
 * with `id`/`source`/`title`/`url`, or its own `id`) becomes `{ id, title, url, text }`; a hit
 * with a `url` and no `id` is named by its url.
 */
function asDocuments(v: unknown): unknown {
  const list = Array.isArray(v) ? v : v !== null && typeof v === "object" ? [v] : null;
  if (!list) return v;
  return list.map((d: unknown) => {
    if (d === null || typeof d !== "object") return d;
    const o = d as Record<string, unknown>;
    if (typeof o.pageContent === "string") {
      const meta = (o.metadata !== null && typeof o.metadata === "object" ? o.metadata : {}) as Record<string, unknown>;
      const id = [o.id, meta.id, meta.source, meta.url].find((x) => typeof x === "string" && x !== "");
      const doc: Record<string, unknown> = { id, text: o.pageContent };
      for (const k of ["title", "url"]) if (typeof meta[k] === "string") doc[k] = meta[k];
      return doc;
    }
    if (o.id === undefined && typeof o.url === "string") return { ...o, id: o.url };
    return o;
  });
}
