// The model the routes call: any OpenAI-compatible chat API (default: the local model that
// `citeflow serve` serves) or Anthropic's Messages API, chosen by environment variables.
//   CITEFLOW_EXAMPLE_BASE_URL  default http://127.0.0.1:8080/v1
//   CITEFLOW_EXAMPLE_MODEL     default "local"
//   CITEFLOW_EXAMPLE_API       "openai" (chat completions, default), "responses" or "anthropic"
//   CITEFLOW_EXAMPLE_API_KEY   default "sk-local"
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";

export function baseModel(name?: string) {
  const baseURL = process.env.CITEFLOW_EXAMPLE_BASE_URL ?? "http://127.0.0.1:8080/v1";
  const apiKey = process.env.CITEFLOW_EXAMPLE_API_KEY ?? "sk-local";
  const model = name ?? process.env.CITEFLOW_EXAMPLE_MODEL ?? "local";
  switch (process.env.CITEFLOW_EXAMPLE_API ?? "openai") {
    case "anthropic":
      return createAnthropic({ baseURL, apiKey })(model);
    case "responses":
      return createOpenAI({ baseURL, apiKey }).responses(model);
    default:
      return createOpenAI({ baseURL, apiKey }).chat(model);
  }
}
