// `citeflowStream()`: an agent's `agent.stream(input, { streamMode: "messages" })` as citeflow's
// events: tool messages become rounds, the model's text chunks are rewritten with one numbering
// across the rounds, a `done` event (the list, with the rounds) ends it.
import { Rewriter } from "citeflow";
import type { DoneEvent, Event, NumberEntry, Round, Settings, Sources } from "citeflow";

import { mergeDone } from "../shared/done.js";
import { CITEFLOW_KEY, THREAD_KEY, kindOf, recordOf, textOf } from "./messages.js";
import type { MessageLike } from "./messages.js";
import { answerSettings, messageRound, sourcesOf, threadOf } from "./session.js";
import type { ThreadRecord } from "./session.js";
import type { CiteflowMiddlewareOptions } from "./middleware.js";

export interface CiteflowStreamOptions extends Pick<CiteflowMiddlewareOptions, "marker" | "settings"> {
  /**
   * The thread so far (`(await agent.getState(config)).values.messages`). Default: read from the
   * run's first tool message that `citeflowMiddleware` marked, else a new thread.
   */
  messages?: ReadonlyArray<unknown>;
}

/** The message of one `streamMode: "messages"` item: `[message, metadata]`, or `["messages", [message, metadata]]` with several modes. */
function messageOf(item: unknown): unknown {
  if (!Array.isArray(item)) return item;
  if (item[0] === "messages" && Array.isArray(item[1])) return item[1][0];
  if (typeof item[0] === "string") return undefined;
  return item[0];
}

/**
 * The events of an agent's messages stream, numbered in one table across its rounds: iterate it
 * (`for await (const ev of citeflowStream(await agent.stream(input, { ...config, streamMode:
 * "messages" })))`); `text` events are the answer with its numbers, `source` events come before
 * the text that first shows a number, one `done` event ends it. After the end, `rounds` and
 * `numbering` hold the thread's rounds and numbering.
 */
export class CiteflowStream implements AsyncIterable<Event> {
  /** The thread's search rounds with their queries (complete at the end). */
  rounds: Round[] = [];
  /** The thread's numbering after this run (complete at the end). */
  numbering: NumberEntry[] = [];
  private readonly settings: Settings;
  private thread: ThreadRecord | null;
  private sources: Sources | null = null;
  private rw: Rewriter | null = null;
  private readonly dones: DoneEvent[] = [];
  private readonly streamed = new Set<string>();

  constructor(
    private readonly stream: AsyncIterable<unknown>,
    options: CiteflowStreamOptions = {},
  ) {
    this.settings = answerSettings(options.marker ?? "double_bracket", options.settings);
    this.thread = options.messages ? threadOf(options.messages) : null;
  }

  private ensure(thread: ThreadRecord | null): Sources {
    if (!this.sources) {
      this.thread ??= thread ?? { rounds: [], numbering: [] };
      this.sources = sourcesOf(this.thread);
      this.numbering = this.thread.numbering;
    }
    return this.sources;
  }

  /** Ends the current answer's text (its `done` kept for the one at the end). */
  private close(): Event[] {
    const rw = this.rw;
    if (!rw) return [];
    this.rw = null;
    const events = rw.finish();
    this.numbering = rw.numbering();
    rw.free();
    const out: Event[] = [];
    for (const e of events) {
      if (e.type === "done") this.dones.push(e);
      else out.push(e);
    }
    return out;
  }

  private message(m: unknown): Event[] {
    const kind = kindOf(m);
    if (kind === "tool") {
      const msg = m as MessageLike;
      const round = messageRound(msg);
      if (!round) return [];
      const carried = recordOf(msg, THREAD_KEY) as ThreadRecord | undefined;
      const sources = this.ensure(carried && Array.isArray(carried.rounds) ? carried : null);
      const events = this.close();
      if (round.sources.length) sources.appendRound(round.sources, round.query);
      return events;
    }
    if (kind !== "ai") return [];
    const msg = m as MessageLike;
    // The answer the middleware numbered, after its chunks were streamed: shown already.
    if (recordOf(msg, CITEFLOW_KEY) && msg.id != null && this.streamed.has(msg.id)) return [];
    const record = recordOf(msg, CITEFLOW_KEY);
    const text = record && typeof record.raw !== "undefined" ? textOf(record.raw as MessageLike["content"]) : textOf(msg.content);
    if (!text) return [];
    if (msg.id != null) this.streamed.add(msg.id);
    const sources = this.ensure(null);
    this.rw ??= new Rewriter(sources, { settings: this.settings, numbering: this.numbering });
    return this.rw.feed(text);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Event> {
    try {
      for await (const item of this.stream) {
        const events = this.message(messageOf(item));
        for (const e of events) yield e;
      }
      const sources = this.ensure(null);
      for (const e of this.close()) yield e;
      this.rounds = sources.rounds();
      const merged = mergeDone(this.dones);
      const done: DoneEvent =
        this.dones.length === 1
          ? this.dones[0]!
          : { type: "done", sources: merged.sources, report: { released_holdbacks: 0, input_bytes: 0, output_bytes: 0, numbers_in_body: [], numbers_listed: [], ...merged.report } };
      yield done;
    } finally {
      this.rw?.free();
      this.rw = null;
    }
  }
}

/** `new CiteflowStream(stream, options)`: the events of an agent's `streamMode: "messages"` stream. */
export function citeflowStream(stream: AsyncIterable<unknown>, options: CiteflowStreamOptions = {}): CiteflowStream {
  return new CiteflowStream(stream, options);
}
