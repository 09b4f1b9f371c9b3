// The package's own .d.ts files, fully checked (skipLibCheck off) with no extra `lib`: the
// `[Symbol.dispose]` members need no `esnext.disposable` in the user's tsconfig.
import { Rewriter, Sources } from "citeflow";
import { citeflow, citeflowDataParts, citeflowTransform } from "citeflow/ai-sdk";
import { citeflowMessage } from "citeflow/react";
import { citeflowMiddleware, citeflowStream } from "citeflow/langchain";

using rw = new Rewriter(Sources.fromArray([{ id: "a" }]));
export const text: string = rw.feed("x [[a]]").map((e) => (e.type === "text" ? e.text : "")).join("");
export const m = citeflow({ sources: [{ id: "a" }], instruct: { marker: "double_bracket" } });
export const t = citeflowTransform({ numbering: [] });
export const seg = citeflowMessage({ parts: [{ type: "text", text: "[1]" }] }).segments;
export const anchored = citeflow({ anchors: true, settings: { maxAnchorSourceBytes: 4096 } });
export const dataParts = citeflowDataParts();
export const anchorOf = citeflowMessage({ parts: [] }).anchorOf(1)?.verdict;
export const lcMiddleware = citeflowMiddleware({ marker: "double_bracket" });
export const lcStream = citeflowStream((async function* () {})());
