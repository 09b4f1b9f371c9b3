// Type-checked by scripts/test-ai-sdk.sh (tsc --noEmit) against AI SDK 6 here and AI SDK 7 in
// v7/: the middleware goes into wrapLanguageModel, the transform into streamText, the hook's
// result is typed, and `import { Rewriter } from "citeflow"` needs no init() and no extra lib.
import { createOpenAI } from "@ai-sdk/openai";
import { streamText, wrapLanguageModel, type UIMessage } from "ai";
import { Rewriter, Sources, type Source } from "citeflow";
import { citeflow, citeflowDataParts, citeflowTransform, type CiteflowFinishMetadata } from "citeflow/ai-sdk";
import { useCiteflow, type Segment } from "citeflow/react";

const sources: Source[] = [{ id: "source_7", title: "Paris", url: "https://en.wikipedia.org/wiki/Paris" }];
const openai = createOpenAI({ apiKey: "x" });
const model = wrapLanguageModel({ model: openai.chat("gpt-4.1-mini"), middleware: citeflow({ sources }) });
const both = wrapLanguageModel({ model: openai.responses("gpt-5-mini"), middleware: [citeflow(), citeflow({ instruct: false })] });
export const result = streamText({
  model,
  prompt: "Paris?",
  experimental_transform: citeflowTransform({ onFinish: (m: CiteflowFinishMetadata) => m.sources.length }),
});
export const other = streamText({ model: both, prompt: "x" });

const rw = new Rewriter(Sources.fromArray(sources));
export const events = rw.feed("Paris [[source_7]].");
using disposed = new Rewriter(new Sources());
export const held: number = disposed.heldBytes;

declare const message: UIMessage;
const { segments, sources: listed, byNumber } = useCiteflow(message);
export const first: Segment | undefined = segments[0];
export const titles: (string | undefined)[] = listed.map((s) => s.title);
export const one = byNumber[1]?.url;

// Claim anchors: the option, the finish metadata, the UI stream's data parts, anchorOf(n).
const anchored = wrapLanguageModel({ model: openai.chat("gpt-4.1-mini"), middleware: citeflow({ sources, anchors: true }) });
export const withAnchors = streamText({
  model: anchored,
  prompt: "Paris?",
  experimental_transform: citeflowTransform({ anchors: true, onFinish: (m) => m.anchors?.[0]?.quote?.text }),
});
export const uiStream = withAnchors.toUIMessageStream({ sendSources: true }).pipeThrough(citeflowDataParts());
const { anchorOf } = useCiteflow(message);
export const quote: string | undefined = anchorOf(1)?.quote?.text;
export const verdict: "supported" | "weak" | "unsupported" | undefined = anchorOf(1, 0)?.verdict;
export const cfi: string | undefined = anchorOf(1)?.quote?.cfi;
export const segAnchor = segments[0]?.type === "citation" ? segments[0].anchor?.support : undefined;
