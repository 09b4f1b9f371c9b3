// The model the routes call: any OpenAI-compatible chat API (default: `citeflow serve` on
// port 8080, the local model it serves) or Anthropic's Messages API, chosen by environment:
//   CITEFLOW_EXAMPLE_BASE_URL   default http://127.0.0.1:8080/v1
//   CITEFLOW_EXAMPLE_MODEL      default "local"
//   CITEFLOW_EXAMPLE_API        "openai" (chat completions, default), "responses" or "anthropic"
//   CITEFLOW_EXAMPLE_API_KEY    default "sk-local"
//   CITEFLOW_EXAMPLE_CITEFLOW_SERVE  "1" when the base URL is `citeflow serve` (default: 1 with the
//                               default base URL): requests then carry `citeflow: {render: "client"}`
//                               so that the proxy passes the model's markers through and the
//                               middleware numbers them.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";

const viaCiteflowServe = (process.env.CITEFLOW_EXAMPLE_CITEFLOW_SERVE ?? (process.env.CITEFLOW_EXAMPLE_BASE_URL ? "0" : "1")) === "1";

const passMarkersThrough: typeof fetch = (input, init) => {
  if (typeof init?.body === "string") {
    const body = JSON.parse(init.body);
    init = { ...init, body: JSON.stringify({ ...body, citeflow: { ...body.citeflow, render: "client" } }) };
  }
  return fetch(input, init);
};

export function baseModel(name?: string) {
  const baseURL = process.env.CITEFLOW_EXAMPLE_BASE_URL ?? "http://127.0.0.1:8080/v1";
  const apiKey = process.env.CITEFLOW_EXAMPLE_API_KEY ?? "sk-local";
  const model = name ?? process.env.CITEFLOW_EXAMPLE_MODEL ?? "local";
  const fetch = viaCiteflowServe ? passMarkersThrough : undefined;
  switch (process.env.CITEFLOW_EXAMPLE_API ?? "openai") {
    case "anthropic":
      return createAnthropic({ baseURL, apiKey, fetch })(model);
    case "responses":
      return createOpenAI({ baseURL, apiKey, fetch }).responses(model);
    default:
      return createOpenAI({ baseURL, apiKey, fetch }).chat(model);
  }
}
