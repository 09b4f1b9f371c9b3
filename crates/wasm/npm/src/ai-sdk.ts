// citeflow/ai-sdk: the Vercel AI SDK middleware (`citeflow`), the agent transform
// (`citeflowTransform`) and the UI stream's anchor parts (`citeflowDataParts`). They translate
// the AI SDK's stream parts to the core's events and back; every marker, number and list comes
// from the core (the package's Rewriter and ProviderStream). No runtime import of `ai`: the
// objects returned are plain values that AI SDK 6 (LanguageModelV3) and AI SDK 7
// (LanguageModelV4) take as they are.
export { citeflow } from "./ai-sdk/middleware.js";
export { citeflowTransform } from "./ai-sdk/transform.js";
export { citeflowDataParts } from "./ai-sdk/data-parts.js";
export type {
  CiteflowAnchorDataPart,
  CiteflowAnchorMetadata,
  CiteflowFinishMetadata,
  CiteflowMiddleware,
  CiteflowOptions,
  CiteflowSourceMetadata,
  CiteflowTransformOptions,
  InstructOptions,
} from "./ai-sdk/types.js";
export type { Anchor, Quote, Verdict } from "citeflow";
