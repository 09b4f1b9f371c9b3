// citeflow/mastra: a Mastra output processor (`citeflowProcessor()`, for `new Agent({ …,
// outputProcessors: [citeflowProcessor()] })`) that numbers a tool-calling agent's answer across
// its steps: each `tool-result` chunk whose result carries documents becomes a round, each
// `text-delta` chunk's text is rewritten with one numbering across the rounds. The AI SDK
// middleware numbers each model call on its own, which a tool loop's last call cannot use. No
// runtime import of Mastra: its chunks are read as plain objects. Every number comes from the core.
import { Rewriter, Sources, promptSettings } from "citeflow";
import type { Event, ListedSource, NumberEntry, PromptMarker, ResolvedSettings, Round, Settings, Source } from "citeflow";

import { mergeDone } from "./shared/done.js";
import { documentsOf, queryOf } from "./shared/sources.js";

/** What the processor reports when a stream ends. */
export interface CiteflowMastraFinish {
  /** The cited sources with their numbers, in number order. */
  sources: ListedSource[];
  /** The run's search rounds with their queries (for `renderList`'s grouping). */
  rounds: Round[];
  /** The numbering after this run: pass it as `numbering` to continue a conversation. */
  numbering: NumberEntry[];
}

/** Options of `citeflowProcessor`. */
export interface CiteflowProcessorOptions {
  /** The marker the tools show the model. Default: `"double_bracket"` (`[[id]]`). */
  marker?: PromptMarker;
  /** The rendering settings (style, …). */
  settings?: Settings;
  /** A previous run's numbering (`onFinish`'s), to continue a conversation. */
  numbering?: NumberEntry[];
  /** Called at the stream's `finish` chunk with the list, the rounds and the numbering. */
  onFinish?: (finish: CiteflowMastraFinish) => void;
}

/** A Mastra chunk as the processor reads it. */
interface Chunk {
  type: string;
  payload?: Record<string, unknown>;
  [k: string]: unknown;
}

/** One stream's state (kept in the processor's per-stream `state`). */
class Run {
  private readonly rounds: Array<{ query: string | null; sources: Source[] }> = [];
  private numbering: NumberEntry[];
  private rw: Rewriter | null = null;
  private readonly dones: Event[] = [];

  constructor(
    private readonly settings: ResolvedSettings,
    numbering: NumberEntry[] | undefined,
  ) {
    this.numbering = numbering ? [...numbering] : [];
  }

  private sources(): Sources {
    const s = new Sources();
    for (const r of this.rounds) if (r.sources.length) s.appendRound(r.sources, r.query);
    return s;
  }

  /** Ends the current stretch of text; returns the text it still held. */
  close(): string {
    const rw = this.rw;
    if (!rw) return "";
    this.rw = null;
    let held = "";
    for (const e of rw.finish()) {
      if (e.type === "text") held += e.text;
      else if (e.type === "done") this.dones.push(e);
    }
    this.numbering = rw.numbering();
    rw.free();
    return held;
  }

  round(docs: Source[], query: string | null): string {
    const held = this.close();
    this.rounds.push({ query, sources: docs });
    return held;
  }

  text(delta: string): string {
    if (!this.rw) {
      const s = this.sources();
      try {
        this.rw = new Rewriter(s, { settings: this.settings, numbering: this.numbering });
      } finally {
        s.free();
      }
    }
    let out = "";
    for (const e of this.rw.feed(delta)) if (e.type === "text") out += e.text;
    return out;
  }

  finish(): CiteflowMastraFinish {
    this.close();
    const s = this.sources();
    try {
      const merged = mergeDone(this.dones.filter((e) => e.type === "done"));
      return { sources: merged.sources, rounds: s.rounds(), numbering: this.numbering };
    } finally {
      s.free();
    }
  }

  free(): void {
    this.rw?.free();
    this.rw = null;
  }
}

const RUN = "citeflow";

/**
 * A Mastra output processor numbering the agent's answer across its tool calls. Tools return
 * their documents (an array of `{ id, title?, url?, text? }`, or `{ documents }` / `{ sources }`)
 * and show the model each under its marker (`contextBlock(Sources.fromArray(documents),
 * "double_bracket", 600)`); the `text-delta` chunks carry `[1]`, `[2]`. A marker cut between
 * chunks is held until it is whole, and released in the next text chunk of the same step.
 */
export function citeflowProcessor(options: CiteflowProcessorOptions = {}) {
  const settings = promptSettings(options.marker ?? "double_bracket", options.settings ?? null);
  return {
    id: "citeflow",
    name: "citeflow",
    async processOutputStream(args: { part: Chunk; state: Record<string, unknown> }): Promise<Chunk | null> {
      const { part, state } = args;
      let run = state[RUN] as Run | undefined;
      if (!run) {
        run = new Run(settings, options.numbering);
        state[RUN] = run;
      }
      const payload = part.payload ?? {};
      if (part.type === "tool-result") {
        const docs = documentsOf(payload.result);
        if (docs) run.round(docs, queryOf(payload.args ?? null));
        return part;
      }
      if (part.type === "text-delta" && typeof payload.text === "string") {
        return { ...part, payload: { ...payload, text: run.text(payload.text) } };
      }
      if (part.type === "text-end") {
        // Held text (an unfinished marker at the end) is shown as it was written.
        const held = run.close();
        if (held) return { ...part, type: "text-delta", payload: { ...payload, text: held } };
        return part;
      }
      if (part.type === "finish") {
        const finish = run.finish();
        run.free();
        options.onFinish?.(finish);
      }
      return part;
    },
  };
}
