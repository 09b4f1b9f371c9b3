// `citeflowDataParts()`: the anchors the middleware or the transform sent as carriers become
// `data-citeflow-anchor` parts of the UI message stream.
import type { CiteflowAnchorDataPart } from "./types.js";

/**
 * For the UI message stream (`result.toUIMessageStream()`): each anchor the middleware or the
 * transform sent (an empty `text-delta` carrying `providerMetadata.citeflow.anchor`) becomes a
 * `data-citeflow-anchor` part, `{ type, id: "citeflow-anchor-<k>", data: anchor }`, which
 * `useChat` keeps in the message's parts (`citeflow/react`'s `anchorOf(n)` reads it); every
 * other chunk passes.
 *
 * ```ts
 * return createUIMessageStreamResponse({
 *   stream: result.toUIMessageStream({ sendSources: true }).pipeThrough(citeflowDataParts()),
 * });
 * ```
 */
export function citeflowDataParts<T extends { type: string } = any>(): TransformStream<T, T | CiteflowAnchorDataPart> {
  let k = 0;
  return new TransformStream<T, T | CiteflowAnchorDataPart>({
    transform(chunk, controller) {
      const c = chunk as T & { delta?: string; providerMetadata?: Record<string, any> };
      const anchor = c?.type === "text-delta" ? c.providerMetadata?.citeflow?.anchor : undefined;
      if (!anchor) {
        controller.enqueue(chunk);
        return;
      }
      if (!c.delta) {
        controller.enqueue({ type: "data-citeflow-anchor", id: `citeflow-anchor-${++k}`, data: anchor });
        return;
      }
      // streamText repeats a text part's last metadata on its later deltas: a copy, dropped.
      const { anchor: _a, ...citeflow } = c.providerMetadata!.citeflow as Record<string, unknown>;
      const providerMetadata: Record<string, unknown> = { ...c.providerMetadata, citeflow };
      if (Object.keys(citeflow).length === 0) delete providerMetadata.citeflow;
      const rest: Record<string, unknown> = { ...c, providerMetadata };
      if (Object.keys(providerMetadata).length === 0) delete rest.providerMetadata;
      controller.enqueue(rest as T);
    },
  });
}
