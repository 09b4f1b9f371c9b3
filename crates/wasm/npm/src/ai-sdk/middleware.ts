// The AI SDK middleware `citeflow(options)`: the model's parts in, the same parts out with the
// text rewritten by the core and one `source` part per new number; the final list at `finish`.
// Provider citations are read from the raw chunks (one ProviderStream call per chunk, a chunk of
// text alone as its text: text-chunk.ts); a provider the core does not read, or
// `providerCitations: false`, rewrites the text-deltas.
import { ProviderStream, Rewriter, citationInstruction, contextBlock } from "citeflow";
import type { Event, NumberEntry, Settings, Sources } from "citeflow";

import { copyJson, jsonSafe, mergeDone } from "../shared/done.js";
import { toSources } from "../shared/sources.js";
import { coreFields } from "./core-fields.js";
import { PartEmitter } from "./parts.js";
import { TextChunks } from "./text-chunk.js";
import type { CiteflowFinishMetadata, CiteflowMiddleware, CiteflowOptions, InstructOptions, Part, WrapOptions } from "./types.js";

/** The settings with `anchors` on when the option asks for them. */
export function withAnchors(settings: Settings | undefined, anchors: boolean | undefined): Settings | undefined {
  return anchors ? { ...(settings ?? {}), anchors: true } : settings;
}

function instructOptions(instruct: CiteflowOptions["instruct"], hasSources: boolean): Required<InstructOptions> | null {
  if (instruct === false || (instruct === undefined && !hasSources)) return null;
  const o = typeof instruct === "object" && instruct !== null ? instruct : {};
  return { marker: o.marker ?? "double_bracket", maxCharsPerSource: o.maxCharsPerSource ?? 1200 };
}

interface CallOptions {
  sources: Sources;
  settings: Settings | undefined;
  numbering: NumberEntry[] | undefined;
}

/** JSON text longer than this (UTF-16 units) is given to the core as UTF-8 bytes. */
const LONG_JSON = 256;
const utf8 = new TextEncoder();

/** How a call reads the answer: the provider's raw chunks, or the text-deltas (one Rewriter per text id). */
type Mode = "raw" | "text" | null;

/** The per-call state of the middleware. */
class CallState {
  mode: Mode = null;
  private readonly sources: Sources;
  private readonly settings: Settings | undefined;
  private numbering: NumberEntry[];
  private ps: ProviderStream | null = null;
  /** The fast path for chunks of text alone, once the core knows the dialect. */
  private textChunks: TextChunks | null = null;
  /** The dialect the core detected (null before the first chunk it read). */
  private dialect: string | null = null;
  private lastText: string | null = null;
  private readonly rewriters = new Map<string, Rewriter>();
  private readonly parts = new PartEmitter("delta");
  private failed: unknown = null;

  constructor(
    opts: CallOptions,
    private readonly keepRaw: boolean,
  ) {
    this.sources = opts.sources;
    this.settings = opts.settings;
    this.numbering = opts.numbering ?? [];
  }

  /** Feeds one raw provider chunk; a provider the core cannot read turns the call to text mode. */
  private feedRaw(rawValue: unknown, out: Part[]): void {
    if (this.mode === "text" || this.failed) return;
    try {
      let ps = this.ps;
      if (ps === null) {
        // Without options when there are none (no JSON of them for the core to read).
        ps = this.ps =
          this.settings === undefined && this.numbering.length === 0
            ? new ProviderStream(this.sources)
            : new ProviderStream(this.sources, { settings: this.settings, numbering: this.numbering });
      }
      this.mode = "raw";
      // One call per chunk: a chunk of answer text alone as its text (no JSON either way), any
      // other as its JSON text (UTF-8 bytes when long: they cross into WebAssembly faster than
      // a string), which the core reads with the dialect's typed reader. Text released alone
      // comes back as a string.
      // The lean calls: `false` for nothing released, `true` for exactly the text given (no
      // string crosses back for either).
      const text = this.textChunks?.text(rawValue) ?? null;
      let released: boolean | string | Event[];
      if (text !== null) {
        released = ps.feedTextLean(text);
        if (released === true) released = text;
      } else {
        // `undefined` (no value) goes as its name, which the core refuses as `invalid_json`.
        // Once the dialect is known, only the fields its reader reads (core-fields.ts).
        const json = String(JSON.stringify(coreFields(this.dialect, rawValue)));
        released = ps.feedEventLean(json.length > LONG_JSON ? utf8.encode(json) : json);
      }
      if (this.textChunks === null) {
        const dialect = ps.dialect;
        if (dialect) {
          this.textChunks = new TextChunks(dialect);
          // It sees every chunk in order (this one went whole): it now knows what the core
          // read, e.g. Perplexity's lists, so that the next chunk of text alone goes as text.
          this.textChunks.text(rawValue);
          this.dialect = dialect;
        }
      }
      if (released === false || released === true) {
        // Nothing released (`true` is only ever turned into the text above).
      } else if (typeof released === "string") {
        if (released) this.parts.text(released, out, null);
      } else if (released.length) {
        // A new number's key from the core, one number at a time (no numbering table's JSON).
        this.parts.emit(released, out, null, ps);
      }
    } catch (e) {
      this.failed = e;
      if (this.parts.dones.length === 0 && !this.ps?.dialect) {
        // Not a provider the core reads: rewrite the text-deltas instead.
        this.ps = null;
        this.mode = "text";
        this.failed = null;
      } else {
        throw e;
      }
    }
  }

  private rewriterFor(id: string): Rewriter {
    let rw = this.rewriters.get(id);
    if (!rw) {
      rw = new Rewriter(this.sources, { settings: this.settings, numbering: this.numbering });
      this.rewriters.set(id, rw);
    }
    return rw;
  }

  private endText(id: string, out: Part[]): void {
    const rw = this.rewriters.get(id);
    if (!rw) return;
    this.parts.emit(rw.finish(), out, id, () => rw.numbering());
    this.numbering = rw.numbering();
    this.rewriters.delete(id);
    rw.free();
  }

  transform(part: Part, out: Part[]): void {
    switch (part.type) {
      case "raw":
        this.feedRaw(part.rawValue, out);
        if (this.keepRaw) out.push(part);
        return;
      case "text-start":
        if (this.mode === null) this.mode = "text";
        this.parts.openText = part.id;
        this.lastText = part.id;
        out.push(part);
        this.parts.flushPending(part.id, out);
        return;
      case "text-delta":
        if (this.mode === null) this.mode = "text";
        if (this.mode === "raw") {
          this.parts.flushPending(part.id, out);
        } else {
          const rw = this.rewriterFor(part.id);
          this.parts.emit(rw.feed(part.delta), out, part.id, () => rw.numbering());
        }
        return;
      case "text-end":
        if (this.mode === "text") this.endText(part.id, out);
        this.parts.flushPending(part.id, out);
        this.parts.openText = null;
        out.push(part);
        return;
      case "source":
        // The provider's own per-citation sources: replaced by the core's numbered ones.
        return;
      case "finish":
        this.finish(out);
        out.push(this.withMetadata(part));
        return;
      default:
        out.push(part);
    }
  }

  private finish(out: Part[]): void {
    if (this.mode === "text") {
      for (const id of [...this.rewriters.keys()]) this.endText(id, out);
    } else if (this.ps) {
      let events: Event[];
      try {
        // The `done` event without `uncited`: the metadata does not list them.
        events = this.ps.finishCompact();
      } catch (e) {
        // A step without answer text (tool calls only) is not an error here.
        if ((e as { code?: unknown } | null)?.code !== "no_text") throw e;
        events = [];
      }
      this.numbering = this.ps.numbering();
      this.parts.emit(events, out, this.parts.openText, () => this.numbering);
      this.ps.free();
      this.ps = null;
      this.textChunks = null;
      this.dialect = null;
    }
    this.parts.releaseSources(out);
    if (this.parts.hasPending) {
      // Text (and anchors) the core released after the provider's last text part ended.
      const id = `${this.lastText ?? "citeflow"}-tail`;
      out.push({ type: "text-start", id });
      this.parts.flushPending(id, out);
      out.push({ type: "text-end", id });
    }
  }

  metadata(): CiteflowFinishMetadata {
    const dones = this.parts.dones;
    const merged = mergeDone(dones);
    const meta: CiteflowFinishMetadata = {
      // Copies of what the core gave (its JSON: no JSON text in between); the numbering may
      // still be the caller's own entries, copied through JSON as before.
      sources: copyJson(merged.sources),
      report: copyJson(dones.length === 1 ? dones[0]!.report : (merged.report as CiteflowFinishMetadata["report"])),
      numbering: jsonSafe(this.numbering),
    };
    if (this.parts.finalText != null) meta.text = this.parts.finalText;
    if (this.parts.anchors.length) meta.anchors = copyJson(this.parts.anchors);
    return meta;
  }

  private withMetadata(part: Part): Part {
    return { ...part, providerMetadata: { ...(part.providerMetadata ?? {}), citeflow: this.metadata() } };
  }
}

/**
 * The model's parts through `state`, as a stream that reads the model's stream itself when its
 * reader asks for a part: no TransformStream (whose writable side and pipe cost more per part
 * than the rewriting), and a part that gives nothing out (a raw chunk, a text-delta the raw
 * chunks already gave) costs no enqueue. An error of `state` goes out as an `error` part after
 * the parts it gave; the model's stream's error errors this stream; cancelling it cancels the
 * model's.
 */
function citeflowStream(
  source: ReadableStream<Part>,
  state: CallState,
  onFinish: ((metadata: CiteflowFinishMetadata) => void) | undefined,
): ReadableStream<Part> {
  const reader = source.getReader();
  const out: Part[] = [];
  return new ReadableStream<Part>(
    {
      async pull(controller) {
        for (;;) {
          const next = await reader.read();
          if (next.done) {
            controller.close();
            return;
          }
          const part = next.value;
          out.length = 0;
          let failed = false;
          try {
            state.transform(part, out);
          } catch (error) {
            out.push({ type: "error", error });
            failed = true;
          }
          for (let i = 0; i < out.length; i++) controller.enqueue(out[i]!);
          if (part.type === "finish" && onFinish && !failed) onFinish(state.metadata());
          if (out.length) return;
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** `generateText`'s result collected from the middleware's stream. */
async function collectGenerate(stream: ReadableStream<Part>, request: unknown, response: Record<string, unknown> | undefined) {
  const content: Part[] = [];
  const texts = new Map<string, number>();
  const reasoning = new Map<string, number>();
  let finish: Part | null = null;
  let meta: Record<string, unknown> = {};
  const warnings: unknown[] = [];
  const into = (index: Map<string, number>, type: string, id: string): Part => {
    let i = index.get(id);
    if (i === undefined) index.set(id, (i = content.push({ type, text: "" }) - 1));
    return content[i]!;
  };
  const reader = stream.getReader();
  for (;;) {
    const { done, value: p } = await reader.read();
    if (done) break;
    switch (p.type) {
      case "text-start":
        texts.set(p.id, content.push({ type: "text", text: "" }) - 1);
        break;
      case "text-delta":
        into(texts, "text", p.id).text += p.delta;
        break;
      case "reasoning-start":
        reasoning.set(p.id, content.push({ type: "reasoning", text: "" }) - 1);
        break;
      case "reasoning-delta":
        into(reasoning, "reasoning", p.id).text += p.delta;
        break;
      case "source":
      case "tool-call":
      case "tool-result":
      case "file":
        content.push(p);
        break;
      case "stream-start":
        warnings.push(...(p.warnings ?? []));
        break;
      case "response-metadata": {
        const { type: _t, ...rest } = p;
        meta = rest;
        break;
      }
      case "finish":
        finish = p;
        break;
      case "error":
        throw p.error;
      default:
    }
  }
  return {
    content,
    finishReason: finish?.finishReason,
    usage: finish?.usage,
    providerMetadata: finish?.providerMetadata,
    request,
    response: { ...response, ...meta },
    warnings,
  };
}

/**
 * The AI SDK middleware: stable `[n]` numbers in the streamed text, one numbered `source` part
 * per number before the text that first shows it, the final list at `finish`.
 *
 * ```ts
 * const model = wrapLanguageModel({ model: openai("gpt-4.1"), middleware: citeflow({ sources }) });
 * ```
 */
export function citeflow(options: CiteflowOptions = {}): CiteflowMiddleware {
  const sources = toSources(options.sources);
  const hasSources = sources.length > 0;
  const instruct = instructOptions(options.instruct, hasSources);
  const opts: CallOptions = { sources, settings: withAnchors(options.settings, options.anchors), numbering: options.numbering };
  const providerCitations = options.providerCitations !== false;
  const onFinish = options.onFinish;

  const wrapStream = async ({ params, model }: Pick<WrapOptions, "params" | "model">) => {
    const keepRaw = params.includeRawChunks === true;
    const result = await model.doStream({ ...params, includeRawChunks: keepRaw || providerCitations });
    const state = new CallState(opts, keepRaw);
    if (!providerCitations) state.mode = "text";
    const stream = citeflowStream(result.stream as ReadableStream<Part>, state, onFinish);
    return { ...result, stream };
  };

  return {
    specificationVersion: "v3",
    async transformParams({ params }) {
      if (!instruct) return params;
      const system =
        citationInstruction(sources, instruct.marker) +
        "\n\n" +
        contextBlock(sources, instruct.marker, instruct.maxCharsPerSource);
      return { ...params, prompt: [{ role: "system", content: system }, ...params.prompt] };
    },
    wrapStream,
    async wrapGenerate({ params, model }) {
      // generateText: the same stream, collected into a result.
      const { stream, request, response } = await wrapStream({ params, model });
      return collectGenerate(stream, request, response);
    },
  };
}
