// citeflow/openai-agents: the OpenAI Agents SDK for JavaScript (`@openai/agents`). A function
// tool's documents become a round (`citeDocuments`), a run's answer is numbered across its tool
// calls: `citeflowStream(await run(agent, input, { stream: true }))` for the streamed run's
// events, `citeOutput(await run(agent, input))` for `finalOutput`. The answer is read as the
// Responses API's events by the core's `openai-responses` reader, so `url_citation` and
// `file_citation` annotations share the numbering of the markers. No runtime import of the SDK:
// its values are read as plain objects. Every number comes from the core.
import { ProviderStream, Sources, contextBlock, promptSettings, renderList } from "citeflow";
import type { DoneEvent, Event, ListFormat, ListedSource, NumberEntry, PromptMarker, ResolvedSettings, Round, Settings, Source } from "citeflow";

import { mergeDone } from "./shared/done.js";
import { documentsOf, queryOf } from "./shared/sources.js";

/** A function tool's return for its documents: the model reads `text`; `sources` stays with the run item. */
export interface CitedDocuments {
  type: "text";
  /** What the model reads: each document under its marker. */
  text: string;
  /** The documents, kept in the run item's `output` (not sent to the model). */
  sources: Source[];
}

/** Options of `citeDocuments`. */
export interface CiteDocumentsOptions {
  /** The marker the model is shown and asked to write. Default: `"double_bracket"` (`[[id]]`). */
  marker?: PromptMarker;
  /** Characters of each document's text shown to the model. Default: 1000. */
  maxChars?: number;
}

/**
 * A function tool's return for its documents (`{ id, title?, url?, text? }`, or `{ sources }` /
 * `{ documents }`): the model reads each under its marker, and the run item's `output` keeps the
 * documents, so that each `tool_output` becomes a round. No documents: "No results.".
 */
export function citeDocuments(documents: unknown, options: CiteDocumentsOptions = {}): CitedDocuments {
  const docs = documentsOf(documents) ?? [];
  if (!docs.length) return { type: "text", text: "No results.", sources: [] };
  const sources = Sources.fromArray(docs);
  try {
    return { type: "text", text: contextBlock(sources, options.marker ?? "double_bracket", options.maxChars ?? 1000), sources: docs };
  } finally {
    sources.free();
  }
}

/** Options of `citeflowStream` and `citeOutput`. */
export interface CiteflowAgentsOptions {
  /** The marker the tools show (`citeDocuments`'s). Default: `"double_bracket"`. */
  marker?: PromptMarker;
  /** The rendering settings (style, …). */
  settings?: Settings;
  /** A conversation so far: the previous answer's `session` continues its numbering. */
  session?: AgentsSession;
}

/** A conversation's citation state as plain JSON data: its rounds and its numbering. */
export interface AgentsSession {
  rounds: Array<{ query: string | null; sources: Source[] }>;
  numbering: NumberEntry[];
}

const PROVIDER_EVENTS = new Set(["response.output_text.delta", "response.output_text.annotation.added"]);

function field(v: unknown, k: string): unknown {
  return v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined;
}

/** A `file_search_call`'s results as sources keyed by their `file_id`. */
function fileSearchSources(raw: unknown): Source[] {
  const results = field(raw, "results") ?? field(field(raw, "providerData"), "results");
  if (!Array.isArray(results)) return [];
  const out: Source[] = [];
  for (const r of results) {
    const id = field(r, "file_id") ?? field(r, "fileId");
    if (typeof id !== "string") continue;
    const s: Source = { id };
    const title = field(r, "filename");
    const text = field(r, "text");
    if (typeof title === "string") s.title = title;
    if (typeof text === "string") s.text = text;
    out.push(s);
  }
  return out;
}

/** One answer read across rounds: a `ProviderStream` per stretch of text between rounds, one numbering. */
class Reader {
  readonly session: AgentsSession;
  private readonly settings: ResolvedSettings;
  private ps: ProviderStream | null = null;
  private readonly dones: DoneEvent[] = [];
  private readonly args = new Map<string, unknown>();

  constructor(options: CiteflowAgentsOptions) {
    this.settings = promptSettings(options.marker ?? "double_bracket", options.settings ?? null);
    const s = options.session;
    this.session = { rounds: s ? [...s.rounds] : [], numbering: s ? [...s.numbering] : [] };
  }

  private sources(): Sources {
    const sources = new Sources();
    for (const r of this.session.rounds) if (r.sources.length) sources.appendRound(r.sources, r.query);
    return sources;
  }

  private close(): Event[] {
    const ps = this.ps;
    if (!ps) return [];
    this.ps = null;
    const events = ps.finish();
    this.session.numbering = ps.numbering();
    ps.free();
    const out: Event[] = [];
    for (const e of events) {
      if (e.type === "done") this.dones.push(e);
      else out.push(e);
    }
    return out;
  }

  private round(sources: Source[], query: string | null): Event[] {
    if (!sources.length) return [];
    const events = this.close();
    this.session.rounds.push({ query, sources });
    return events;
  }

  /** A run item (`tool_call_item`, `tool_call_output_item`): calls name the rounds of their outputs. */
  item(item: unknown): Event[] {
    const kind = field(item, "type");
    const raw = field(item, "rawItem");
    if (kind === "tool_call_item") {
      const rawType = field(raw, "type");
      if (rawType === "file_search_call" || field(raw, "name") === "file_search_call") {
        const queries = field(raw, "queries") ?? field(field(raw, "providerData"), "queries");
        return this.round(fileSearchSources(raw), Array.isArray(queries) ? queries.join(" ") : null);
      }
      const callId = field(raw, "callId");
      const args = field(raw, "arguments");
      if (typeof callId === "string" && typeof args === "string") {
        try {
          this.args.set(callId, JSON.parse(args));
        } catch {
          this.args.set(callId, args);
        }
      }
      return [];
    }
    if (kind === "tool_call_output_item") {
      const output = field(item, "output");
      const docs = documentsOf(output) ?? (typeof output === "string" ? documentsOfJson(output) : null);
      if (!docs) return [];
      const callId = field(raw, "callId");
      return this.round(docs, queryOf(typeof callId === "string" ? (this.args.get(callId) ?? null) : null));
    }
    return [];
  }

  /** One Responses API stream event of the answer (text deltas, annotations). */
  event(event: Record<string, unknown>): Event[] {
    if (!this.ps) {
      const sources = this.sources();
      try {
        this.ps = new ProviderStream(sources, { settings: this.settings, numbering: this.session.numbering, dialect: "openai-responses" });
      } finally {
        sources.free();
      }
    }
    return this.ps.feedEvent(event);
  }

  /** The rest of the answer, ending with one `done` (the lists of its stretches merged). */
  finish(): Event[] {
    if (!this.ps && !this.dones.length) this.event({ type: "response.output_text.delta", delta: "" });
    const out = this.close();
    if (this.dones.length === 1) return [...out, this.dones[0]!];
    // Text before a tool call and after it: the lists of the stretches merged.
    const merged = mergeDone(this.dones);
    const done: DoneEvent = {
      type: "done",
      sources: merged.sources,
      report: { released_holdbacks: 0, input_bytes: 0, output_bytes: 0, numbers_in_body: [], numbers_listed: [], ...merged.report },
    };
    return [...out, done];
  }

  free(): void {
    this.ps?.free();
    this.ps = null;
  }
}

function documentsOfJson(text: string): Source[] | null {
  try {
    return documentsOf(JSON.parse(text));
  } catch {
    return null;
  }
}

/** What citeflow made of one answer. */
export interface CitedAnswer {
  /** The answer with its numbers. */
  text: string;
  /** The answer as the model wrote it. */
  raw: string;
  /** The cited sources with their numbers, in number order. */
  sources: ListedSource[];
  /** The engine's events. */
  events: Event[];
  /** The conversation's rounds and numbering after this answer: pass it to the next run's reader. */
  session: AgentsSession;
  /** The conversation's rounds (for `renderList`'s grouping). */
  rounds: Round[];
  /** The cited sources as a list grouped by round with its query. */
  renderSources(format?: ListFormat): string;
}

function rounds(session: AgentsSession): Round[] {
  const sources = new Sources();
  try {
    for (const r of session.rounds) if (r.sources.length) sources.appendRound(r.sources, r.query);
    return sources.rounds();
  } finally {
    sources.free();
  }
}

function answer(reader: Reader, raw: string, events: Event[]): CitedAnswer {
  let done: DoneEvent | undefined;
  for (const e of events) if (e.type === "done") done = e;
  const shown = events.map((e) => (e.type === "text" ? e.text : "")).join("");
  const session = reader.session;
  const rs = rounds(session);
  const list = done?.sources ?? [];
  return {
    text: done?.text ?? shown,
    raw,
    sources: list,
    events,
    session,
    rounds: rs,
    renderSources: (format: ListFormat = "markdown") => renderList(list, format, rs),
  };
}

/** A message output item as the Responses stream events of its text and its annotations. */
function messageEvents(item: unknown): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const content = field(field(item, "rawItem"), "content");
  if (!Array.isArray(content)) return out;
  for (const part of content) {
    if (field(part, "type") !== "output_text") continue;
    out.push({ type: "response.output_text.delta", delta: String(field(part, "text") ?? "") });
    const annotations = field(part, "annotations") ?? field(field(part, "providerData"), "annotations");
    if (Array.isArray(annotations)) {
      for (const a of annotations) out.push({ type: "response.output_text.annotation.added", annotation: snakeAnnotation(a) });
    }
  }
  return out;
}

/** The SDK's camelCase annotation (`url_citation` with `startIndex`, …) in the API's own fields. */
function snakeAnnotation(a: unknown): unknown {
  if (a === null || typeof a !== "object") return a;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(a as Record<string, unknown>)) {
    out[k.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase())] = v;
  }
  return out;
}

/**
 * `run(agent, input)`'s result numbered: its tool outputs are the rounds, its last message
 * (`finalOutput` with its annotations) the answer.
 */
export function citeOutput(result: { newItems: ReadonlyArray<unknown>; finalOutput?: unknown }, options: CiteflowAgentsOptions = {}): CitedAnswer {
  const reader = new Reader(options);
  try {
    const events: Event[] = [];
    const messages = result.newItems.filter((i) => field(i, "type") === "message_output_item");
    const last = messages[messages.length - 1];
    for (const item of result.newItems) {
      if (item === last) for (const e of messageEvents(item)) events.push(...reader.event(e));
      else events.push(...reader.item(item));
    }
    const raw = typeof result.finalOutput === "string" ? result.finalOutput : String(result.finalOutput ?? "");
    if (last === undefined && raw) events.push(...reader.event({ type: "response.output_text.delta", delta: raw }));
    events.push(...reader.finish());
    return answer(reader, raw, events);
  } finally {
    reader.free();
  }
}

/**
 * The events of a streamed run (`await run(agent, input, { stream: true })`), numbered in one
 * table across its rounds: iterate it; `text` events are the answer with its numbers, `source`
 * events come before the text that first shows a number, one `done` event ends it (its `text` is
 * the final answer when an annotation was bound after its text was shown). After the end,
 * `session` holds the conversation's rounds and numbering for the next run.
 */
export class CiteflowAgentsStream implements AsyncIterable<Event> {
  /** The conversation's rounds and numbering (complete at the end). */
  session: AgentsSession;
  private readonly reader: Reader;

  constructor(
    private readonly stream: AsyncIterable<unknown>,
    options: CiteflowAgentsOptions = {},
  ) {
    this.reader = new Reader(options);
    this.session = this.reader.session;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Event> {
    try {
      for await (const ev of this.stream) {
        const kind = field(ev, "type");
        if (kind === "raw_model_stream_event") {
          const data = field(ev, "data");
          const raw = field(data, "event");
          if (field(data, "type") === "model" && PROVIDER_EVENTS.has(String(field(raw, "type")))) {
            for (const e of this.reader.event(raw as Record<string, unknown>)) yield e;
          }
        } else if (kind === "run_item_stream_event") {
          for (const e of this.reader.item(field(ev, "item"))) yield e;
        }
      }
      for (const e of this.reader.finish()) yield e;
      this.session = this.reader.session;
    } finally {
      this.reader.free();
    }
  }
}

/** `new CiteflowAgentsStream(stream, options)`: the events of a streamed run. */
export function citeflowStream(stream: AsyncIterable<unknown>, options: CiteflowAgentsOptions = {}): CiteflowAgentsStream {
  return new CiteflowAgentsStream(stream, options);
}

export type { DoneEvent, Event, ListedSource, Source } from "citeflow";
