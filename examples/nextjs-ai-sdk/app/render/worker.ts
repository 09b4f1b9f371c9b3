// A web worker that renders with citeflow, no init().
import { Sources, rewrite } from "citeflow";

self.onmessage = (e: MessageEvent<{ answer: string; sources: { id: string; title: string }[] }>) => {
  self.postMessage(rewrite(e.data.answer, Sources.fromArray(e.data.sources)).text);
};
