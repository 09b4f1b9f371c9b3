"use client";
// citeflow in the browser bundle and in a web worker, with no init(): the package's entry
// instantiates its WebAssembly at import.
import { Sources, rewrite } from "citeflow";
import { useEffect, useState } from "react";

const answer = "Paris [[source_7]] is on the Seine [[source_3]], see [[source_7]].";
const sources = [
  { id: "source_3", title: "The Seine" },
  { id: "source_7", title: "Paris" },
];

export default function Render() {
  const [main, setMain] = useState("");
  const [worker, setWorker] = useState("");
  useEffect(() => {
    setMain(rewrite(answer, Sources.fromArray(sources)).text);
    const w = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
    w.onmessage = (e: MessageEvent<string>) => setWorker(e.data);
    w.onerror = (e) => setWorker(`error: ${e.message}`);
    w.postMessage({ answer, sources });
    return () => w.terminate();
  }, []);
  return (
    <main>
      <p id="main-result">{main}</p>
      <p id="worker-result">{worker}</p>
    </main>
  );
}
