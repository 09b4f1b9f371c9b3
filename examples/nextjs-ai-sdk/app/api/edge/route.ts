// A route handler on the Edge runtime that renders with citeflow: no init() (the package's
// entry instantiates its WebAssembly at import).
import { Sources, rewrite } from "citeflow";

export const runtime = "edge";

export async function GET(req: Request) {
  const text = new URL(req.url).searchParams.get("text") ?? "Paris [[source_7]] is on the Seine [[source_3]], see [[source_7]].";
  const sources = Sources.fromArray([
    { id: "source_3", title: "The Seine", url: "https://en.wikipedia.org/wiki/Seine" },
    { id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" },
  ]);
  const r = rewrite(text, sources);
  const done = r.events.find((e) => e.type === "done");
  return Response.json({
    runtime: typeof (globalThis as { EdgeRuntime?: string }).EdgeRuntime === "string" ? "edge" : "node",
    text: r.text,
    sources: done && done.type === "done" ? done.sources.map((l) => ({ number: l.number, title: l.source.title })) : [],
  });
}
