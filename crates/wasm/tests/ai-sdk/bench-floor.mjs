// Where the AI SDK middleware's time goes, per stream (not a test; issue 45 item 2):
//
//   node bench-floor.mjs [ROUNDS] [FILE API ...]
//
// CITEFLOW_BENCH_WARMUP=N untimed rounds first (default 5; see bench.mjs).
//
// In one process, interleaved rounds, the CPU time a stream (median) of: the no-op
// TransformStream middleware (bench.mjs's target), a no-op TransformStream that asks for the raw
// chunks (and drops them), a no-op *pull* stage that asks for them (the stage citeflow's
// middleware uses: the SDK's own raw-chunk delivery), citeflow's middleware, the same with every
// WASM call answered from a recording of its answers (what is left is the middleware's JS and
// its GC), and those WASM calls alone (replayed with the same arguments on a fresh
// ProviderStream). Default streams: Anthropic web search, OpenAI web search, Perplexity.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { wrapLanguageModel } from "ai";
import { ProviderStream, Sources } from "citeflow";
import { citeflow } from "citeflow/ai-sdk";

import { payloads } from "./support.mjs";

const rounds = Number(process.argv[2] ?? 100);
const warmup = Number(process.env.CITEFLOW_BENCH_WARMUP ?? 5);
if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`CITEFLOW_BENCH_WARMUP must be a whole number, got ${process.env.CITEFLOW_BENCH_WARMUP}`);
const args = process.argv.slice(3);
const streams = [];
for (let i = 0; i + 1 < args.length; i += 2) streams.push([args[i], args[i + 1]]);
if (!streams.length) {
  streams.push(
    ["anthropic-web-search-tool.1.chunks.txt", "anthropic"],
    ["openai-web-search-tool.1.chunks.txt", "responses"],
    ["perplexity-citations.chunks.txt", "chat"],
  );
}
const prompt = [{ role: "user", content: [{ type: "text", text: "x" }] }];
const cpu = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function model(api, body) {
  const fetch = async () => new Response(body, { headers: { "content-type": "text/event-stream" } });
  if (api === "anthropic") return createAnthropic({ baseURL: "http://bench.invalid/v1", apiKey: "x", fetch })("m");
  const openai = createOpenAI({ baseURL: "http://bench.invalid/v1", apiKey: "x", fetch });
  return api === "responses" ? openai.responses("m") : openai.chat("m");
}

/** A stage that reads `source` when its reader asks, passing the parts `keep` keeps. */
function pullStage(source, keep) {
  const reader = source.getReader();
  return new ReadableStream(
    {
      async pull(c) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return c.close();
          if (keep(value)) return c.enqueue(value);
        }
      },
      cancel: (r) => reader.cancel(r),
    },
    { highWaterMark: 0 },
  );
}
const notRaw = (p) => p.type !== "raw";
const middlewares = {
  "no-op (TransformStream)": {
    specificationVersion: "v3",
    wrapStream: async ({ doStream }) => {
      const r = await doStream();
      return { ...r, stream: r.stream.pipeThrough(new TransformStream()) };
    },
  },
  "no-op TransformStream, raw chunks": {
    specificationVersion: "v3",
    wrapStream: async ({ params, model }) => {
      const r = await model.doStream({ ...params, includeRawChunks: true });
      const t = new TransformStream({ transform: (p, c) => void (notRaw(p) && c.enqueue(p)) });
      return { ...r, stream: r.stream.pipeThrough(t) };
    },
  },
  "no-op pull stage, raw chunks": {
    specificationVersion: "v3",
    wrapStream: async ({ params, model }) => {
      const r = await model.doStream({ ...params, includeRawChunks: true });
      return { ...r, stream: pullStage(r.stream, notRaw) };
    },
  },
  citeflow: citeflow(),
};

async function once(api, body, mw) {
  const { stream } = await wrapLanguageModel({ model: model(api, body), middleware: mw }).doStream({ prompt });
  const c0 = cpu();
  for await (const _ of stream);
  return cpu() - c0;
}

const P = ProviderStream.prototype;
const methods = ["feedTextLean", "feedEventLean", "finishCompact", "numbering", "keyOf", "free"];
const dialect = Object.getOwnPropertyDescriptor(P, "dialect");

/** citeflow's WASM calls on one stream: method, arguments, answer; and the dialect it saw. */
async function record(api, body) {
  const calls = [];
  let seen = null;
  const orig = Object.fromEntries(methods.map((m) => [m, P[m]]));
  for (const m of methods) {
    P[m] = function (...a) {
      const r = orig[m].apply(this, a);
      calls.push([m, a, r]);
      return r;
    };
  }
  Object.defineProperty(P, "dialect", {
    configurable: true,
    get() {
      return (seen = dialect.get.call(this) ?? seen);
    },
  });
  try {
    await once(api, body, middlewares.citeflow);
  } finally {
    Object.assign(P, orig);
    Object.defineProperty(P, "dialect", dialect);
  }
  return { calls, seen };
}

/** A run of citeflow with every WASM call (but the constructor) answered from `rec`. */
async function answered(api, body, rec) {
  const orig = Object.fromEntries(methods.map((m) => [m, P[m]]));
  const at = new WeakMap();
  for (const m of methods) {
    P[m] = function () {
      const i = at.get(this) ?? 0;
      at.set(this, i + 1);
      const [name, , r] = rec.calls[i];
      if (name !== m) throw new Error(`replay: ${m} at call ${i}, recorded ${name}`);
      return r;
    };
  }
  Object.defineProperty(P, "dialect", { configurable: true, get: () => rec.seen });
  try {
    return await once(api, body, middlewares.citeflow);
  } finally {
    Object.assign(P, orig);
    Object.defineProperty(P, "dialect", dialect);
  }
}

const sources = new Sources();
function wasmAlone(rec) {
  const c0 = cpu();
  for (let i = 0; i < 10; i++) {
    const ps = new ProviderStream(sources);
    for (const [m, a] of rec.calls) ps[m](...a);
  }
  return (cpu() - c0) / 10;
}

for (const [file, api] of streams) {
  const body = new TextEncoder().encode(
    payloads(file).map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n",
  );
  const rec = await record(api, body);
  const times = {};
  const add = (k, t, r) => r >= warmup && (times[k] ??= []).push(t);
  for (let r = 0; r < rounds + warmup; r++) {
    for (const [k, mw] of Object.entries(middlewares)) add(k, await once(api, body, mw), r);
    add("citeflow, WASM answers replayed", await answered(api, body, rec), r);
    add("its WASM calls alone", wasmAlone(rec), r);
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const noop = m["no-op (TransformStream)"];
  const counts = rec.calls.reduce((o, [k]) => ((o[k] = (o[k] ?? 0) + 1), o), {});
  console.log(`${file} (${api}), ${Object.entries(counts).map(([k, v]) => `${k} ×${v}`).join(", ")}; median CPU a stream, ${rounds} rounds after ${warmup} warm-up rounds:`);
  for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(34)} ${v.toFixed(0).padStart(6)} µs  ${(v / noop).toFixed(2)}× the no-op`);
  const base = m["no-op pull stage, raw chunks"];
  const js = m["citeflow, WASM answers replayed"] - base;
  const wasm = m.citeflow - m["citeflow, WASM answers replayed"];
  console.log(
    `  citeflow - the pull stage's floor = ${(m.citeflow - base).toFixed(0)} µs: the middleware's JS and GC ${js.toFixed(0)} µs (${(js / noop).toFixed(2)}×), its WASM calls in the stream ${wasm.toFixed(0)} µs (${(wasm / noop).toFixed(2)}×; ${m["its WASM calls alone"].toFixed(0)} µs alone)`,
  );
}
