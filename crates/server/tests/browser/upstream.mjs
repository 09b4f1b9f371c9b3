// A replaying OpenAI-style upstream for the browser tests: answers
// `POST /v1/chat/completions` with a scripted SSE stream chosen by the request's `model`.
//
// - `POST /_scripts` `{model, pieces, paceMs, splitBytes}` registers a chat stream whose
//   `delta.content` pieces are `pieces`, sent `paceMs` apart; with `splitBytes`, every event
//   goes out in writes of that many bytes (cutting UTF-8 characters and markers).
// - `"model": "file:NAME"` replays a recorded stream of `$CITEFLOW_SHARED_DIR/fixtures/streams`
//   (`.sse` as recorded, `.chunks.txt` framed as SSE), one event per `paceMs` (`?pace=` of the
//   script registered under that model, else 60 ms).
// - `{{cite:N}}` in a piece becomes the marker of the N-th source of the request's context
//   block (the lines of the system message that start with `[[id]]`), so an answer can cite
//   passages the server retrieved from a book without knowing them in advance.
// - `POST /v1/responses` and `POST /v1/messages` answer the same way (for `file:` recordings of
//   those APIs).
// - `GET /_requests` lists the request bodies received.
//
// Run alone (`node upstream.mjs`), it prints `http://127.0.0.1:PORT/v1` and serves until
// SIGTERM; tests import `startUpstream`.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const sharedDir = resolve(process.env.CITEFLOW_SHARED_DIR ?? join(here, "../../../../../shared"));

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

function chatChunk(delta, finish = null) {
  return {
    id: "chatcmpl-replay",
    object: "chat.completion.chunk",
    created: 1700000000,
    model: "replay",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

/** SSE event payloads (strings) of a scripted chat answer. */
export function chatEvents(pieces) {
  const out = [JSON.stringify(chatChunk({ role: "assistant", content: "" }))];
  for (const p of pieces) out.push(JSON.stringify(chatChunk({ content: p })));
  out.push(JSON.stringify(chatChunk({}, "stop")));
  out.push("[DONE]");
  return out.map((d) => `data: ${d}\n\n`);
}

/** The source ids of a request's context block, in order: lines starting with `[[id]]`. */
export function contextIds(request) {
  const system = (request.messages ?? []).find((m) => m.role === "system")?.content ?? "";
  return [...String(system).matchAll(/^\[\[([^\]]+)\]\]/gm)].map((m) => m[1]);
}

/** Replaces `{{cite:N}}` with the marker of the N-th context source (1-based). */
function citeFromContext(pieces, request) {
  const ids = contextIds(request);
  return pieces.map((p) => p.replace(/\{\{cite:(\d+)\}\}/g, (_, n) => `[[${ids[Number(n) - 1] ?? `missing_${n}`}]]`));
}

async function recordedEvents(name) {
  const raw = await readFile(join(sharedDir, "fixtures/streams", name));
  if (name.endsWith(".chunks.txt")) {
    const lines = raw.toString("utf8").split("\n").filter((l) => l.trim());
    return [...lines.map((l) => `data: ${l}\n\n`), "data: [DONE]\n\n"];
  }
  const text = raw.toString("utf8");
  return text.split(/(?<=\n\n)/).filter((e) => e.length);
}

export async function startUpstream({ port = 0 } = {}) {
  const scripts = new Map();
  const requests = [];
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url, "http://x");
    try {
      if (req.method === "POST" && url.pathname === "/_scripts") {
        const s = JSON.parse(body);
        scripts.set(s.model, s);
        res.writeHead(204).end();
        return;
      }
      if (req.method === "GET" && url.pathname === "/_requests") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(requests));
        return;
      }
      // Chat completions; the responses and messages routes replay `file:` recordings.
      if (req.method === "POST" && ["/v1/chat/completions", "/v1/responses", "/v1/messages"].includes(url.pathname)) {
        const r = JSON.parse(body);
        requests.push(r);
        const script = scripts.get(r.model);
        let events;
        if (r.model?.startsWith("file:")) events = await recordedEvents(r.model.slice(5));
        else if (script) events = chatEvents(citeFromContext(script.pieces, r));
        else {
          res.writeHead(404, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { message: `no script for model ${r.model}` } }));
          return;
        }
        const pace = script?.paceMs ?? 60;
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        for (const e of events) {
          if (res.destroyed) return;
          await sleep(pace);
          const bytes = Buffer.from(e, "utf8");
          const n = script?.splitBytes ?? bytes.length;
          for (let i = 0; i < bytes.length; i += n) res.write(bytes.subarray(i, i + n));
        }
        res.end();
        return;
      }
      res.writeHead(404).end();
    } catch (e) {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(e));
    }
  });
  await new Promise((ok) => server.listen(port, "127.0.0.1", ok));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    url: `${origin}/v1`,
    origin,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(() => ok());
      }),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const up = await startUpstream({ port: Number(process.env.PORT ?? 0) });
  console.log(up.url);
  const stop = async () => {
    await up.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
