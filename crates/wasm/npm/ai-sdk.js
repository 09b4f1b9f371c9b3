// citeflow/ai-sdk: the Vercel AI SDK middleware (`citeflow`) and agent transform
// (`citeflowTransform`). Both translate the AI SDK's stream parts to the core's events and
// back; every marker, number and list comes from the core (the package's Rewriter and
// ProviderStream). No runtime import of `ai`: the objects returned are plain values that
// AI SDK 6 (LanguageModelV3) and AI SDK 7 (LanguageModelV4) take as they are.
//
// Claim anchors (`anchors: true`): a language model's stream has no data parts (streamText
// throws on a part type it does not know; `raw` parts reach neither fullStream without
// includeRawChunks nor the UI stream), so each anchor travels as an empty `text-delta` whose
// `providerMetadata.citeflow.anchor` holds it: streamText keeps empty deltas that carry
// metadata (and repeats a text part's last metadata on its later deltas: only an empty delta
// is a carrier), and toUIMessageStream forwards the metadata. `citeflowDataParts()` turns the
// carriers into `data-citeflow-anchor` parts of the UI message stream.
import {
  ProviderStream,
  Rewriter,
  Sources,
  citationInstruction,
  contextBlock,
} from "citeflow";

/** @param {unknown} s */
function toSources(s) {
  if (s instanceof Sources) return s;
  return Sources.fromArray(Array.isArray(s) ? s.map(asSource) : []);
}

/** The settings with `anchors` on when the option asks for them. */
function withAnchors(settings, anchors) {
  return anchors ? { ...(settings ?? {}), anchors: true } : settings;
}

/** The core's `anchor` event as the record the parts carry (the core's Anchor JSON). */
function anchorOf(ev) {
  const { type: _t, ...anchor } = ev;
  return anchor;
}

/** The empty text-delta that carries an anchor (`text` for AI SDK 6+ stream parts, `delta` for model parts). */
function anchorPart(id, anchor, key) {
  return { type: "text-delta", id, [key]: "", providerMetadata: { citeflow: { anchor } } };
}

function instructOptions(instruct, hasSources) {
  if (instruct === false || (instruct === undefined && !hasSources)) return null;
  const o = typeof instruct === "object" && instruct !== null ? instruct : {};
  return { marker: o.marker ?? "double_bracket", maxCharsPerSource: o.maxCharsPerSource ?? 1200 };
}

/** The AI SDK `source` part for the core's `source` event (a number shown for the first time). */
function sourcePart(ev, key, quote) {
  const s = ev.source;
  const meta = { number: ev.number, sourceId: s.id };
  if (ev.round != null) meta.round = ev.round;
  if (quote) meta.quote = quote;
  if (s.locator?.chapter_title != null) meta.chapterTitle = s.locator.chapter_title;
  if (s.locator?.cfi != null) meta.cfi = s.locator.cfi;
  const id = key ?? s.key ?? s.id;
  if (s.url) {
    const p = { type: "source", sourceType: "url", id, url: s.url, providerMetadata: { citeflow: meta } };
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

/** The quote of the first citation of `number` among `events` (a provider's cited text). */
function quoteOf(events, i, number) {
  for (let j = i + 1; j < events.length; j++) {
    const e = events[j];
    if (e.type === "citation" && e.number === number) return e.provider?.quote ?? null;
  }
  return null;
}

function keysOf(entries) {
  const m = new Map();
  for (const e of entries) m.set(e.number, e.key);
  return m;
}

/** Merges the `done` events of several rewriters of one answer (text ids) into one. */
function mergeDone(dones) {
  const byNumber = new Map();
  const report = { citations: 0, unresolved: 0, new_numbers: 0, verified: true };
  for (const d of dones) {
    for (const l of d.sources) {
      const had = byNumber.get(l.number);
      if (had) {
        had.citations += l.citations;
        if (l.anchors?.length) had.anchors = [...(had.anchors ?? []), ...l.anchors];
      } else byNumber.set(l.number, { ...l });
    }
    report.citations += d.report.citations;
    report.unresolved += d.report.unresolved;
    report.new_numbers += d.report.new_numbers;
    report.verified &&= d.report.verified;
  }
  return { sources: [...byNumber.values()].sort((a, b) => a.number - b.number), report };
}

function jsonSafe(v) {
  return v === undefined ? null : JSON.parse(JSON.stringify(v));
}

/**
 * The per-call state of the middleware: the AI SDK's parts in, the same parts out with the
 * text rewritten by the core and one `source` part per new number.
 */
class CallState {
  constructor(opts, keepRaw) {
    this.sources = opts.sources;
    this.settings = opts.settings;
    this.numbering = opts.numbering ?? [];
    this.keepRaw = keepRaw;
    /** "raw": the provider's raw chunks through ProviderStream; "text": text-deltas through a Rewriter per text id. */
    this.mode = null;
    this.ps = null;
    this.pending = [];
    this.openText = null;
    this.lastText = null;
    this.rewriters = new Map();
    this.dones = [];
    this.finalText = null;
    this.keys = new Map();
    this.shown = new Set();
    this.held = [];
    this.failed = null;
    /** Every anchor of the answer, in the order they came. */
    this.anchors = [];
  }

  providerStream() {
    return new ProviderStream(this.sources, { settings: this.settings, numbering: this.numbering });
  }

  /**
   * Turns core events into parts: sources at once (held until the next text, so that the
   * provider's quote, which comes with the number's first citation, can join them), text onto
   * `id` (or pending until a text part is open).
   */
  emit(events, out, id, rw) {
    for (let i = 0; i < events.length; i++) {
      const ev = events[i];
      if (ev.type === "source") {
        // One part per number in this answer (a later text id's rewriter shows it again).
        if (this.shown.has(ev.number)) continue;
        this.shown.add(ev.number);
        if (!this.keys.has(ev.number)) this.keys = keysOf(rw ? rw.numbering() : this.currentNumbering());
        this.held.push({ ev, key: this.keys.get(ev.number), quote: null });
      } else if (ev.type === "citation") {
        const h = this.held.find((x) => x.ev.number === ev.number);
        if (h && h.quote == null && ev.provider?.quote) h.quote = ev.provider.quote;
      } else if (ev.type === "text") {
        const target = id ?? this.openText;
        this.releaseSources(out, events, i);
        this.pending.push(ev.text);
        if (target != null) this.flushPending(target, out);
      } else if (ev.type === "anchor") {
        // After the text of its sentence: onto the same text part, in order.
        const anchor = anchorOf(ev);
        this.anchors.push(anchor);
        this.pending.push({ anchor });
        const target = id ?? this.openText;
        if (target != null) this.flushPending(target, out);
      } else if (ev.type === "done") {
        this.dones.push(ev);
        if (ev.text != null) this.finalText = ev.text;
      }
    }
  }

  /** The text (and anchors) released while no text part was open, onto `id`. */
  flushPending(id, out) {
    let text = "";
    for (const p of this.pending) {
      if (typeof p === "string") {
        text += p;
        continue;
      }
      if (text) out.push({ type: "text-delta", id, delta: text });
      text = "";
      out.push(anchorPart(id, p.anchor, "delta"));
    }
    this.pending = [];
    if (text) out.push({ type: "text-delta", id, delta: text });
  }

  /** Emits the held source parts, with the quote of a citation later in `events` if they have none. */
  releaseSources(out, events = [], from = 0) {
    for (const h of this.held) {
      if (h.quote == null) h.quote = quoteOf(events, from, h.ev.number);
      out.push(sourcePart(h.ev, h.key, h.quote ?? h.ev.source.snippet));
    }
    this.held = [];
  }

  currentNumbering() {
    if (this.ps) return this.ps.numbering();
    return this.numbering;
  }

  /** Feeds one raw provider chunk; false when the core cannot read this provider (text mode then). */
  feedRaw(rawValue, out) {
    if (this.mode === "text" || this.failed) return;
    try {
      this.ps ??= this.providerStream();
      this.mode = "raw";
      // Its JSON text: cheaper across the boundary than the object.
      this.emit(this.ps.feedEvent(JSON.stringify(rawValue)), out);
    } catch (e) {
      this.failed = e;
      if (this.dones.length === 0 && !this.ps?.dialect) {
        // Not a provider the core reads: rewrite the text-deltas instead.
        this.ps = null;
        this.mode = "text";
        this.failed = null;
      } else {
        throw e;
      }
    }
  }

  rewriterFor(id) {
    let rw = this.rewriters.get(id);
    if (!rw) {
      rw = new Rewriter(this.sources, { settings: this.settings, numbering: this.numbering });
      this.rewriters.set(id, rw);
    }
    return rw;
  }

  endText(id, out) {
    const rw = this.rewriters.get(id);
    if (!rw) return;
    this.emit(rw.finish(), out, id, rw);
    this.numbering = rw.numbering();
    this.rewriters.delete(id);
    rw.free();
  }

  transform(part, out) {
    switch (part.type) {
      case "raw":
        this.feedRaw(part.rawValue, out);
        if (this.keepRaw) out.push(part);
        return;
      case "text-start":
        if (this.mode === null) this.mode = "text";
        this.openText = part.id;
        this.lastText = part.id;
        out.push(part);
        if (this.pending.length) this.flushPending(part.id, out);
        return;
      case "text-delta":
        if (this.mode === null) this.mode = "text";
        if (this.mode === "raw") {
          this.flushPending(part.id, out);
        } else {
          const rw = this.rewriterFor(part.id);
          this.emit(rw.feed(part.delta), out, part.id, rw);
        }
        return;
      case "text-end":
        if (this.mode === "text") this.endText(part.id, out);
        this.flushPending(part.id, out);
        this.openText = null;
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

  finish(out) {
    if (this.mode === "text") {
      for (const id of [...this.rewriters.keys()]) this.endText(id, out);
    } else if (this.ps) {
      let events;
      try {
        events = this.ps.finish();
      } catch (e) {
        // A step without answer text (tool calls only) is not an error here.
        if (e?.code !== "no_text") throw e;
        events = [];
      }
      this.numbering = this.ps.numbering();
      this.emit(events, out, this.openText ?? undefined);
      this.ps.free();
      this.ps = null;
    }
    this.releaseSources(out);
    if (this.pending.length) {
      // Text (and anchors) the core released after the provider's last text part ended.
      const id = `${this.lastText ?? "citeflow"}-tail`;
      out.push({ type: "text-start", id });
      this.flushPending(id, out);
      out.push({ type: "text-end", id });
    }
  }

  metadata() {
    const merged = mergeDone(this.dones);
    const meta = {
      sources: jsonSafe(merged.sources),
      report: jsonSafe(this.dones.length === 1 ? this.dones[0].report : merged.report),
      numbering: jsonSafe(this.numbering),
    };
    if (this.finalText != null) meta.text = this.finalText;
    if (this.anchors.length) meta.anchors = jsonSafe(this.anchors);
    return meta;
  }

  withMetadata(part) {
    return { ...part, providerMetadata: { ...(part.providerMetadata ?? {}), citeflow: this.metadata() } };
  }
}

/**
 * The AI SDK middleware: `wrapLanguageModel({ model, middleware: citeflow({ sources }) })`.
 *
 * @param {import("./ai-sdk.js").CiteflowOptions} [options]
 */
export function citeflow(options = {}) {
  const sources = toSources(options.sources);
  const hasSources = sources.length > 0;
  const instruct = instructOptions(options.instruct, hasSources);
  const opts = { sources, settings: withAnchors(options.settings, options.anchors), numbering: options.numbering };
  const providerCitations = options.providerCitations !== false;
  const onFinish = options.onFinish;

  const middleware = {
    specificationVersion: "v3",
    async transformParams({ params }) {
      if (!instruct) return params;
      const system =
        citationInstruction(sources, instruct.marker) +
        "\n\n" +
        contextBlock(sources, instruct.marker, instruct.maxCharsPerSource);
      return { ...params, prompt: [{ role: "system", content: system }, ...params.prompt] };
    },
    async wrapStream({ params, model }) {
      const keepRaw = params.includeRawChunks === true;
      const result = await model.doStream({ ...params, includeRawChunks: keepRaw || providerCitations });
      const state = new CallState(opts, keepRaw);
      if (!providerCitations) state.mode = "text";
      const stream = result.stream.pipeThrough(
        new TransformStream({
          transform(part, controller) {
            const out = [];
            try {
              state.transform(part, out);
            } catch (error) {
              for (const p of out) controller.enqueue(p);
              controller.enqueue({ type: "error", error });
              return;
            }
            for (const p of out) controller.enqueue(p);
            if (part.type === "finish" && onFinish) onFinish(state.metadata());
          },
        }),
      );
      return { ...result, stream };
    },
    async wrapGenerate({ params, model }) {
      // generateText: the same stream, collected into a result.
      const { stream, request, response } = await middleware.wrapStream({ params, model });
      const content = [];
      const texts = new Map();
      const reasoning = new Map();
      let finish = null;
      let meta = {};
      const warnings = [];
      const reader = stream.getReader();
      for (;;) {
        const { done, value: p } = await reader.read();
        if (done) break;
        switch (p.type) {
          case "text-start":
            texts.set(p.id, content.push({ type: "text", text: "" }) - 1);
            break;
          case "text-delta": {
            let i = texts.get(p.id);
            if (i === undefined) texts.set(p.id, (i = content.push({ type: "text", text: "" }) - 1));
            content[i].text += p.delta;
            break;
          }
          case "reasoning-start":
            reasoning.set(p.id, content.push({ type: "reasoning", text: "" }) - 1);
            break;
          case "reasoning-delta": {
            let i = reasoning.get(p.id);
            if (i === undefined) reasoning.set(p.id, (i = content.push({ type: "reasoning", text: "" }) - 1));
            content[i].text += p.delta;
            break;
          }
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
    },
  };
  return middleware;
}

/** The documents a tool's output carries: an array of `{ id, … }`, or its `sources` / `documents` field. */
function documentsOf(output) {
  const v = output?.type === "json" && "value" in output ? output.value : output;
  const list = Array.isArray(v) ? v : Array.isArray(v?.sources) ? v.sources : Array.isArray(v?.documents) ? v.documents : null;
  if (!list) return null;
  const docs = list.filter((d) => d && typeof d === "object" && typeof d.id === "string" && d.id.trim() !== "");
  return docs.length ? docs : null;
}

/** The round's name: the tool input's `query` (or `q`, `search`), else the input as JSON. */
function queryOf(input) {
  if (typeof input === "string") return input;
  for (const k of ["query", "q", "search", "question"]) if (typeof input?.[k] === "string") return input[k];
  return input == null ? null : JSON.stringify(input);
}

/** Keeps the fields the core's Source has. */
function asSource(d) {
  const s = { id: d.id };
  for (const k of ["title", "url", "text", "snippet", "key"]) if (typeof d[k] === "string") s[k] = d[k];
  if (d.locator && typeof d.locator === "object") s.locator = d.locator;
  if (d.metadata && typeof d.metadata === "object") s.metadata = d.metadata;
  return s;
}

/**
 * The agent transform: `streamText({ …, experimental_transform: citeflowTransform() })`.
 * One numbering across every step; tool results that carry documents register a round
 * named by the tool call's input.
 *
 * @param {import("./ai-sdk.js").CiteflowTransformOptions} [options]
 */
export function citeflowTransform(options = {}) {
  return () => {
    const sources = options.sources ? toSources(options.sources) : new Sources();
    const settings = withAnchors(options.settings, options.anchors);
    let numbering = options.numbering ?? [];
    const anchors = [];
    const rewriters = new Map();
    const dones = [];
    let keys = new Map();
    const shown = new Set();

    const emit = (events, id, out) => {
      for (let i = 0; i < events.length; i++) {
        const ev = events[i];
        if (ev.type === "source") {
          if (shown.has(ev.number)) continue;
          shown.add(ev.number);
          if (!keys.has(ev.number)) {
            const rw = rewriters.get(id);
            keys = keysOf(rw ? rw.numbering() : numbering);
          }
          out.push(sourcePart(ev, keys.get(ev.number), quoteOf(events, i, ev.number) ?? ev.source.snippet));
        } else if (ev.type === "text" && ev.text) {
          out.push({ type: "text-delta", id, text: ev.text });
        } else if (ev.type === "anchor") {
          const anchor = anchorOf(ev);
          anchors.push(anchor);
          out.push(anchorPart(id, anchor, "text"));
        } else if (ev.type === "done") {
          dones.push(ev);
        }
      }
    };
    const end = (id, out) => {
      const rw = rewriters.get(id);
      if (!rw) return;
      emit(rw.finish(), id, out);
      numbering = rw.numbering();
      rewriters.delete(id);
      rw.free();
    };
    const meta = () => {
      const merged = mergeDone(dones);
      const m = {
        sources: jsonSafe(merged.sources),
        report: jsonSafe(merged.report),
        rounds: jsonSafe(sources.rounds()),
        numbering: jsonSafe(numbering),
      };
      if (anchors.length) m.anchors = jsonSafe(anchors);
      return m;
    };

    return new TransformStream({
      transform(part, controller) {
        const out = [];
        switch (part.type) {
          case "text-start":
            rewriters.set(part.id, new Rewriter(sources, { settings, numbering }));
            out.push(part);
            break;
          case "text-delta": {
            if (!rewriters.has(part.id)) {
              rewriters.set(part.id, new Rewriter(sources, { settings, numbering }));
            }
            emit(rewriters.get(part.id).feed(part.text), part.id, out);
            break;
          }
          case "text-end":
            end(part.id, out);
            out.push(part);
            break;
          case "tool-result": {
            const docs = documentsOf(part.output);
            if (docs) sources.appendRound(docs.map(asSource), queryOf(part.input));
            out.push(part);
            break;
          }
          case "finish-step":
            for (const id of [...rewriters.keys()]) end(id, out);
            out.push({
              ...part,
              providerMetadata: { ...(part.providerMetadata ?? {}), citeflow: meta() },
            });
            break;
          case "finish":
            for (const id of [...rewriters.keys()]) end(id, out);
            options.onFinish?.(meta());
            out.push(part);
            break;
          default:
            out.push(part);
        }
        for (const p of out) controller.enqueue(p);
      },
    });
  };
}

/**
 * For the UI message stream (`result.toUIMessageStream()`): each anchor the middleware or the
 * transform sent (an empty `text-delta` carrying `providerMetadata.citeflow.anchor`) becomes a
 * `data-citeflow-anchor` part, `{ type, id: "citeflow-anchor-<k>", data: anchor }`, which
 * `useChat` keeps in the message's parts (`citeflow/react` reads them).
 *
 * ```ts
 * return createUIMessageStreamResponse({
 *   stream: result.toUIMessageStream({ sendSources: true }).pipeThrough(citeflowDataParts()),
 * });
 * ```
 */
export function citeflowDataParts() {
  let k = 0;
  return new TransformStream({
    transform(chunk, controller) {
      const anchor = chunk?.type === "text-delta" ? chunk.providerMetadata?.citeflow?.anchor : undefined;
      if (!anchor) {
        controller.enqueue(chunk);
        return;
      }
      if (!chunk.delta) {
        controller.enqueue({ type: "data-citeflow-anchor", id: `citeflow-anchor-${++k}`, data: anchor });
        return;
      }
      // streamText repeats a text part's last metadata on its later deltas: a copy, dropped.
      const { anchor: _a, ...citeflow } = chunk.providerMetadata.citeflow;
      const providerMetadata = { ...chunk.providerMetadata, citeflow };
      if (Object.keys(citeflow).length === 0) delete providerMetadata.citeflow;
      const rest = { ...chunk, providerMetadata };
      if (Object.keys(providerMetadata).length === 0) delete rest.providerMetadata;
      controller.enqueue(rest);
    },
  });
}
