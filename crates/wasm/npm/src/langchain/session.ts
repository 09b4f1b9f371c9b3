// A thread's session read from an agent's messages (the agent state): its rounds, from the tool
// messages in order, and its numbering, from the last numbered answer. Nothing else is kept:
// a checkpointer that keeps the messages keeps the numbering.
import { Rewriter, Sources, promptSettings } from "citeflow";
import type { Event, NumberEntry, PromptMarker, Round, Settings, Source } from "citeflow";

import { queryOf } from "../shared/sources.js";
import { CITEFLOW_KEY, ROUND_KEY, kindOf, recordOf, toolDocuments } from "./messages.js";
import type { MessageLike } from "./messages.js";

/** A round as plain JSON data, as a tool message carries it. */
export interface RoundRecord {
  query: string | null;
  sources: Source[];
}

/** A thread's session as plain JSON data: its rounds in order and its numbering. */
export interface ThreadRecord {
  rounds: RoundRecord[];
  numbering: NumberEntry[];
}

/** The round a tool message carries (the middleware's), else one read from its documents (named by the tool). */
export function messageRound(m: MessageLike): RoundRecord | null {
  const carried = recordOf(m, ROUND_KEY);
  if (carried && Array.isArray(carried.sources)) {
    return { query: typeof carried.query === "string" ? carried.query : null, sources: carried.sources as Source[] };
  }
  const docs = toolDocuments(m);
  return docs ? { query: queryOf(m.name ?? null), sources: docs } : null;
}

/** The session of an agent's messages (`state.messages`, or `agent.getState(config).values.messages`). */
export function threadOf(messages: ReadonlyArray<unknown>): ThreadRecord {
  const rounds: RoundRecord[] = [];
  let numbering: NumberEntry[] = [];
  for (const m of messages) {
    const kind = kindOf(m);
    if (kind === "tool") {
      const r = messageRound(m as MessageLike);
      if (r) rounds.push(r);
    } else if (kind === "ai") {
      const record = recordOf(m as MessageLike, CITEFLOW_KEY);
      if (record && Array.isArray(record.numbering)) numbering = record.numbering as NumberEntry[];
    }
  }
  return { rounds, numbering };
}

/** The `Sources` of a thread: one round per record, in order. */
export function sourcesOf(thread: ThreadRecord): Sources {
  const sources = new Sources();
  for (const r of thread.rounds) if (r.sources.length) sources.appendRound(r.sources, r.query);
  return sources;
}

/** The settings an answer is read with: the model's marker recognised, the chosen style. */
export function answerSettings(marker: PromptMarker, settings: Settings | undefined): Settings {
  return promptSettings(marker, settings ?? null);
}

/** What citeflow made of one answer: the rendered text, the cited sources, the numbering after it. */
export interface AnswerRecord {
  /** The answer as the model wrote it (its markers). */
  raw: unknown;
  /** The answer with its numbers. */
  text: string;
  /** The cited sources with their numbers, in number order (`ListedSource`s). */
  sources: unknown[];
  /** The numbering after this answer: the thread's table, kept in the agent state. */
  numbering: NumberEntry[];
  /** The thread's search rounds, with their queries. */
  rounds: Round[];
}

/** Numbers one answer of a thread. */
export function numberAnswer(raw: unknown, text: string, thread: ThreadRecord, settings: Settings): { record: AnswerRecord; events: Event[] } {
  const sources = sourcesOf(thread);
  const rw = new Rewriter(sources, { settings, numbering: thread.numbering });
  try {
    const events = [...rw.feed(text), ...rw.finish()];
    let out = "";
    let done: Extract<Event, { type: "done" }> | undefined;
    for (const e of events) {
      if (e.type === "text") out += e.text;
      else if (e.type === "done") done = e;
    }
    if (done?.text != null) out = done.text;
    return {
      record: { raw, text: out, sources: done?.sources ?? [], numbering: rw.numbering(), rounds: sources.rounds() },
      events,
    };
  } finally {
    rw.free();
    sources.free();
  }
}
