// Which AI SDK this run tests (scripts/test-ai-sdk.sh sets CITEFLOW_AI_MAJOR): the installed
// packages and the model specification they speak, so a run cannot test the wrong one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";

const require = createRequire(import.meta.url);
const version = (name) => require(`${name}/package.json`).version;

test("versions_are_the_ones_under_test", () => {
  const major = Number(process.env.CITEFLOW_AI_MAJOR ?? "6");
  const ai = version("ai");
  assert.equal(Number(ai.split(".")[0]), major, `ai ${ai}`);
  const spec = { 6: "v3", 7: "v4" }[major];
  assert.equal(createOpenAI({ apiKey: "x" }).chat("m").specificationVersion, spec);
  assert.equal(createAnthropic({ apiKey: "x" })("m").specificationVersion, spec);
  if (major === 7) assert.ok(Number(process.versions.node.split(".")[0]) >= 22, `node ${process.versions.node}`);
  console.log(
    `ai ${ai}, @ai-sdk/anthropic ${version("@ai-sdk/anthropic")}, @ai-sdk/openai ${version("@ai-sdk/openai")} (${spec}), node ${process.versions.node}`,
  );
});
