import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

// The repository's root: citeflow is linked from ../../crates/wasm/pkg in this checkout (an app
// that installs citeflow from npm needs none of this).
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** @type {import("next").NextConfig} */
export default {
  turbopack: { root },
  outputFileTracingRoot: root,
};
