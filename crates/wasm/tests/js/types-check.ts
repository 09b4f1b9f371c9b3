// Compiled with `tsc --noEmit` (tsconfig.json) by scripts/test-wasm.sh: the package's .d.ts
// files resolve through its "exports" and type the API as documented. Never run.
import {
  ProviderStream,
  Rewriter,
  Sources,
  renderList,
  rewrite,
  type CiteflowError,
  type Event,
  type NumberEntry,
  type ResolvedSettings,
  type Settings,
} from "citeflow";
import initWeb, { Rewriter as WebRewriter } from "citeflow/web";

const settings: Settings = { style: { template: "<{n}>" }, maxPendingBytes: 32, rank: "renumber" };
// @ts-expect-error settings keys are camelCase
const snake: Settings = { max_pending_bytes: 32 };
// @ts-expect-error unknown style
const badStyle: Settings = { style: "bold" };

const sources = new Sources();
const round: number = sources.appendRound([{ id: "source_3", title: "France" }], "query");
const saved: NumberEntry[] = [];
const rw = new Rewriter(sources, { settings, numbering: saved });
rw.write("a [[sou");
rw.write(new Uint8Array([0x72]));
// @ts-expect-error chunks are strings or bytes
rw.write(42);

function describe(e: Event): string {
  switch (e.type) {
    case "text":
      return e.text;
    case "source":
      return `${e.number} ${e.source.id} ${e.is_new} ${e.round ?? ""}`;
    case "citation":
      return `${e.number} ${e.source_id} ${e.byte_offset} ${e.input_byte_offset} ${e.char_offset} ${e.utf16_offset} ${
        e.provider?.span?.end.utf16 ?? ""
      } ${e.provider?.quote ?? ""} ${e.provider?.late ?? false}`;
    case "unresolved":
      return `${e.raw} ${e.reference} ${e.reason}`;
    case "number_needed":
      return `${e.key} ${e.source_id}`;
    case "anchor":
      return `${e.number} ${e.source_id} ${e.claim.utf16_start} ${e.quote?.text ?? ""} ${e.quote?.utf16_start ?? ""} ${
        e.quote?.cfi ?? ""
      } ${e.quote?.origin ?? ""} ${e.support.toFixed(3)} ${e.verdict satisfies "supported" | "weak" | "unsupported"}`;
    case "done":
      return `${e.report.verified} ${e.sources.map((s) => `${s.number} ${s.anchors?.[0]?.verdict ?? ""}`).join(",")} ${e.text ?? ""}`;
  }
}
const anchored: Settings = { anchors: true, maxAnchorSourceBytes: 4096 };
// @ts-expect-error the anchor cap is a number of bytes
const badCap: Settings = { maxAnchorSourceBytes: "1 MiB" };

for (let e = rw.pollEvent(); e !== undefined; e = rw.pollEvent()) describe(e);
const events: Event[] = [...rw.feed("ce_3]]"), ...rw.finish()];
const done = events.at(-1);
if (done?.type === "done") renderList(done.sources, "markdown", sources.rounds());
const back: ResolvedSettings = Rewriter.restore(rw.snapshot()).settings();
const prefix: string = back.idShape.prefix;
const kept: "new" | "duplicate" = rw.writeAt(0, "x");
const text: string = rewrite("x", sources).text;

try {
  rw.write("late");
} catch (err) {
  const e = err as CiteflowError;
  const code: string = e.code;
  void code;
}

async function web(): Promise<void> {
  await initWeb();
  new WebRewriter(Sources.fromArray([]));
}

void [round, snake, badStyle, prefix, kept, text, web, anchored, badCap];

const ps = new ProviderStream(new Sources(), { dialect: "anthropic", framing: "sse", settings: { style: "brackets" } });
const fromBytes: Event[] = ps.feedBytes(new Uint8Array([0x64]));
const fromEvent: Event[] = ps.feedEvent({ type: "message_start" });
const fromJson: Event[] = ps.feedEvent('{"type":"ping"}');
const psDialect: string | undefined = ps.dialect;
for (const e of ps.finish()) describe(e);
// @ts-expect-error unknown dialect
new ProviderStream(new Sources(), { dialect: "claude" });
