// The AI SDK middleware's cost per text-delta (scripts/bench.sh runs it; not a test):
//
//   node bench.mjs [ROUNDS]
//
// The real provider packages read a recorded stream from memory (a fetch that returns the
// recording's SSE bytes: the provider's own parsing, no network) through wrapLanguageModel
// with one of: a no-op TransformStream middleware (the floor), citeflow's middleware, and a
// hand-written regex renumberer (what apps write today: `[[source_k]]` → `[n]`, a partial marker
// held back). The whole stream is read each time; the rounds are interleaved and the median
// time per text-delta of each is compared. Streams:
// - openai-text.chunks.txt (OpenAI chat, 303 token-sized deltas) with a `[[source_k]]` marker cut
//   into five deltas after every 20th delta (the SmolLM2 recordings cut every marker so);
// - anthropic-web-search-tool.1.chunks.txt (14 provider citations, read from the raw chunks);
// - then every recording with provider citations the middleware tests read (support.mjs
//   `recordings`), each through its provider package, citeflow against the no-op.
// citeflow runs as apps use it (the raw chunks read for provider citations) and with
// `providerCitations: false` (the text-deltas alone, for models that only write markers). Each
// is compared with the no-op (the target) and, honestly labelled beside it, with a no-op that
// also asks for the raw chunks citeflow reads (the SDK's own cost of delivering them).
//
// A/B against an earlier build: CITEFLOW_BENCH_BEFORE=DIR (a copy of crates/wasm/pkg built from
// the tree before) adds "citeflow (before)" to every comparison, in the same interleaved rounds.
//
// Warm-up: CITEFLOW_BENCH_WARMUP=N rounds of every comparison run untimed first (default 5). V8
// compiles the WebAssembly's functions with its baseline compiler (Liftoff) and recompiles each
// with its optimising one (TurboFan) only once it has run enough, so a process's first streams
// are slower than its later ones (2026-12-06, Anthropic web search: citeflow's median over
// rounds 5-105 1.3x that over rounds 105-405, the no-op's 1.08x); N = 100 measures a
// long-running server's steady state.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { wrapLanguageModel } from "ai";
import { citeflow } from "citeflow/ai-sdk";

import { payloads, recordings } from "./support.mjs";

const before = process.env.CITEFLOW_BENCH_BEFORE
  ? (await import(new URL(`file://${process.env.CITEFLOW_BENCH_BEFORE.replace(/\/$/, "")}/ai-sdk.js`).href)).citeflow
  : null;
/** `variants` with the earlier build's middleware beside citeflow's, when asked. */
const withBefore = (variants, make) => (before ? { ...variants, "citeflow (before)": make(before) } : variants);

const rounds = Number(process.argv[2] ?? 60);
const warmup = Number(process.env.CITEFLOW_BENCH_WARMUP ?? 5);
if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`CITEFLOW_BENCH_WARMUP must be a whole number, got ${process.env.CITEFLOW_BENCH_WARMUP}`);
const prompt = [{ role: "user", content: [{ type: "text", text: "x" }] }];

function sse(events) {
  return new TextEncoder().encode(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n");
}

/** openai-text with markers: after every 20th content delta, "[[", "source", "_", k, "]]". */
function chatWithMarkers() {
  const out = [];
  let n = 0;
  for (const e of payloads("openai-text.chunks.txt")) {
    out.push(e);
    const c = e.choices?.[0]?.delta?.content;
    if (typeof c === "string" && c && ++n % 20 === 0) {
      const k = [3, 7, 12, 15, 21][(n / 20) % 5];
      for (const piece of [" [[", "source", "_", String(k), "]]"]) {
        out.push({ ...e, choices: [{ ...e.choices[0], delta: { content: piece } }] });
      }
    }
  }
  return out;
}

const sources = [3, 7, 12, 15, 21].map((k) => ({ id: `source_${k}`, title: `Source ${k}`, url: `https://example.com/${k}` }));

const noop = {
  specificationVersion: "v3",
  wrapStream: async ({ doStream }) => {
    const r = await doStream();
    return { ...r, stream: r.stream.pipeThrough(new TransformStream()) };
  },
};

/**
 * The floor of a middleware that reads provider citations: a no-op that asks the model for its
 * raw chunks (as citeflow does) and drops them, so its reader sees the no-op's parts. Reported
 * beside the no-op above, which stays the target (issue 45: ≤ 1.5× the no-op).
 */
const noopRaw = {
  specificationVersion: "v3",
  wrapStream: async ({ params, model }) => {
    const r = await model.doStream({ ...params, includeRawChunks: true });
    const stream = r.stream.pipeThrough(
      new TransformStream({
        transform(part, c) {
          if (part.type !== "raw") c.enqueue(part);
        },
      }),
    );
    return { ...r, stream };
  },
};

/** What apps write today: a regex over the text, numbers in first-appearance order. */
const regexRenumberer = {
  specificationVersion: "v3",
  wrapStream: async ({ doStream }) => {
    const r = await doStream();
    const numbers = new Map();
    let held = "";
    const stream = r.stream.pipeThrough(
      new TransformStream({
        transform(part, c) {
          if (part.type !== "text-delta") return c.enqueue(part);
          let text = held + part.delta;
          held = "";
          const open = text.lastIndexOf("[[");
          if (open !== -1 && text.indexOf("]]", open) === -1) {
            held = text.slice(open);
            text = text.slice(0, open);
          }
          text = text.replace(/\[\[(source_\d+)\]\]/g, (_, id) => {
            if (!numbers.has(id)) numbers.set(id, numbers.size + 1);
            return `[${numbers.get(id)}]`;
          });
          c.enqueue({ ...part, delta: text });
        },
        flush(c) {
          if (held) c.enqueue({ type: "text-delta", id: "0", delta: held });
        },
      }),
    );
    return { ...r, stream };
  },
};

function model(api, body) {
  const fetch = async () => new Response(body, { headers: { "content-type": "text/event-stream" } });
  if (api === "anthropic") return createAnthropic({ baseURL: "http://bench.invalid/v1", apiKey: "x", fetch })("m");
  const openai = createOpenAI({ baseURL: "http://bench.invalid/v1", apiKey: "x", fetch });
  return api === "responses" ? openai.responses("m") : openai.chat("m");
}

async function once(api, body, middleware) {
  const { stream } = await wrapLanguageModel({ model: model(api, body), middleware }).doStream({ prompt });
  let deltas = 0;
  let text = "";
  // CPU time of this process (user + system), steadier than wall time on a shared machine.
  const c0 = process.cpuUsage();
  for await (const p of stream) {
    if (p.type === "text-delta") {
      deltas += 1;
      text += p.delta;
    }
  }
  const c = process.cpuUsage(c0);
  return { ns: (c.user + c.system) * 1000, deltas, text };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function compare(name, api, events, variants) {
  const body = sse(events);
  const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const deltas = {};
  for (let r = 0; r < rounds + warmup; r++) {
    for (const [k, mw] of Object.entries(variants)) {
      const { ns, deltas: d } = await once(api, body, mw);
      deltas[k] = d;
      if (r >= warmup) times[k].push(ns); // warm-up rounds untimed
    }
  }
  // Per text-delta of the provider's stream (the no-op's count: citeflow may merge or split).
  const per = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v) / deltas.noop / 1000]));
  for (const k of Object.keys(variants)) {
    if (k === "noop" || k === "no-op, raw chunks") continue;
    console.log(
      `${name}: ${k} against the no-op TransformStream: ${(per[k] / per.noop).toFixed(2)}× (${per[k].toFixed(1)} µs against ${per.noop.toFixed(1)} µs per text-delta, ${deltas.noop} deltas, median of ${rounds} after ${warmup} warm-up rounds)`,
    );
  }
  if (per["no-op, raw chunks"]) {
    for (const k of Object.keys(variants).filter((k) => k.startsWith("citeflow") && !k.includes("providerCitations"))) {
      console.log(
        `${name}: ${k} against the no-op that asks for raw chunks: ${(per[k] / per["no-op, raw chunks"]).toFixed(2)}× (${per[k].toFixed(1)} µs against ${per["no-op, raw chunks"].toFixed(1)} µs)`,
      );
    }
  }
  const was = per["citeflow (before)"];
  if (was) {
    console.log(`${name}: citeflow against citeflow (before): ${(per.citeflow / was).toFixed(2)}× (${per.citeflow.toFixed(1)} µs against ${was.toFixed(1)} µs)`);
  }
  if (per.regex) {
    for (const k of Object.keys(variants).filter((k) => k.startsWith("citeflow"))) {
      console.log(`${name}: ${k} against the hand-written regex renumberer: ${(per[k] / per.regex).toFixed(2)}× (${per[k].toFixed(1)} µs against ${per.regex.toFixed(1)} µs)`);
    }
  }
}

// The outputs agree before anything is timed.
{
  const body = sse(chatWithMarkers());
  const a = await once("chat", body, citeflow({ sources, instruct: false }));
  const b = await once("chat", body, regexRenumberer);
  const c = await once("chat", body, citeflow({ sources, instruct: false, providerCitations: false }));
  if (a.text !== b.text || c.text !== a.text) throw new Error("citeflow and the regex renumberer disagree on the text");
}

await compare(
  "OpenAI chat, 303 deltas + markers",
  "chat",
  chatWithMarkers(),
  withBefore(
    {
      noop,
      "no-op, raw chunks": noopRaw,
      citeflow: citeflow({ sources, instruct: false }),
      "citeflow, providerCitations: false": citeflow({ sources, instruct: false, providerCitations: false }),
      regex: regexRenumberer,
    },
    (mw) => mw({ sources, instruct: false }),
  ),
);
await compare(
  "Anthropic web search, provider citations",
  "anthropic",
  payloads("anthropic-web-search-tool.1.chunks.txt"),
  withBefore({ noop, "no-op, raw chunks": noopRaw, citeflow: citeflow() }, (mw) => mw()),
);
for (const rec of recordings) {
  await compare(
    `${rec.file} (${rec.api}), provider citations`,
    rec.api,
    payloads(rec.file),
    withBefore({ noop, "no-op, raw chunks": noopRaw, citeflow: citeflow() }, (mw) => mw()),
  );
}
