// The agent transform `citeflowTransform(options)` for `streamText({ experimental_transform })`:
// one numbering across every step; tool results that carry documents register a round named by
// the tool call's input.
import { Rewriter, Sources } from "citeflow";
import type { NumberEntry } from "citeflow";

import { jsonSafe, mergeDone } from "../shared/done.js";
import { documentsOf, queryOf, toSources } from "../shared/sources.js";
import { withAnchors } from "./middleware.js";
import { PartEmitter } from "./parts.js";
import type { CiteflowFinishMetadata, CiteflowTransformOptions, Part } from "./types.js";

/**
 * The agent transform for `streamText({ experimental_transform })`: one numbering across every
 * step; a tool result carrying documents (an array of `{ id, title?, url?, text? }`, or a
 * `sources` / `documents` field) registers a search round named by the tool call's input.
 */
export function citeflowTransform(
  options: CiteflowTransformOptions = {},
): (options: { tools: any; stopStream: () => void }) => TransformStream<any, any> {
  return () => {
    const sources = options.sources ? toSources(options.sources) : new Sources();
    const settings = withAnchors(options.settings, options.anchors);
    let numbering: NumberEntry[] = options.numbering ?? [];
    const rewriters = new Map<string, Rewriter>();
    const parts = new PartEmitter("text");

    const rewriterFor = (id: string): Rewriter => {
      let rw = rewriters.get(id);
      if (!rw) {
        rw = new Rewriter(sources, { settings, numbering });
        rewriters.set(id, rw);
      }
      return rw;
    };
    const end = (id: string, out: Part[]) => {
      const rw = rewriters.get(id);
      if (!rw) return;
      parts.emit(rw.finish(), out, id, () => rw.numbering());
      numbering = rw.numbering();
      rewriters.delete(id);
      rw.free();
      parts.releaseSources(out);
      parts.flushPending(id, out);
    };
    const meta = (): CiteflowFinishMetadata => {
      const merged = mergeDone(parts.dones);
      const m: CiteflowFinishMetadata = {
        sources: jsonSafe(merged.sources),
        report: jsonSafe(merged.report as CiteflowFinishMetadata["report"]),
        rounds: jsonSafe(sources.rounds()),
        numbering: jsonSafe(numbering),
      };
      if (parts.anchors.length) m.anchors = jsonSafe(parts.anchors);
      return m;
    };

    return new TransformStream<Part, Part>({
      transform(part, controller) {
        const out: Part[] = [];
        switch (part.type) {
          case "text-start":
            rewriters.set(part.id, new Rewriter(sources, { settings, numbering }));
            out.push(part);
            break;
          case "text-delta": {
            const rw = rewriterFor(part.id);
            parts.emit(rw.feed(part.text), out, part.id, () => rw.numbering());
            break;
          }
          case "text-end":
            end(part.id, out);
            out.push(part);
            break;
          case "tool-result": {
            const docs = documentsOf(part.output);
            if (docs) sources.appendRound(docs, queryOf(part.input));
            out.push(part);
            break;
          }
          case "finish-step":
            for (const id of [...rewriters.keys()]) end(id, out);
            out.push({ ...part, providerMetadata: { ...(part.providerMetadata ?? {}), citeflow: meta() } });
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
