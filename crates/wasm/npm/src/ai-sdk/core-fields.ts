// The fields of a raw provider chunk that the core's reader for the dialect reads: a long chunk
// whose other fields the reader skips (an Anthropic `web_search_tool_result` block with each
// result's `encrypted_content`, a citation's `encrypted_index`, a Responses `response.completed`
// with the whole response) goes
// to the core without them, so that neither `JSON.stringify` nor the core's reader pass over
// them. What the core reads stays the same: the same values under the same keys, every field its
// typed reader looks at kept as it came (the reader takes any value in any field, and a chunk
// from `JSON.parse` has no duplicate key). `middleware.test.mjs` checks the core gives the same
// events for every recording either way.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** `o` with only `keys` (an absent key stays absent: `JSON.stringify` drops `undefined`). */
function pick(o: Json, keys: readonly string[]): Json {
  const out: Json = {};
  for (const k of keys) if (k in o) out[k] = o[k];
  return out;
}

/** Each object of an array with only `keys`; anything else as it is. */
function pickEach(list: unknown, keys: readonly string[]): unknown {
  return Array.isArray(list) ? list.map((x) => (isObject(x) ? pick(x, keys) : x)) : list;
}

/** The Responses event types the core's reader reads beyond `type`. */
const RESPONSES_READ = new Set([
  "response.output_text.delta",
  "response.output_text.annotation.added",
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  "response.failed",
]);

/** An Anthropic event's fields the reader reads (`anthropic.rs`: `Event`, `Block`). */
const ANTHROPIC_EVENT = ["type", "content_block", "delta", "content"] as const;
const ANTHROPIC_BLOCK = ["type", "text", "citations", "input", "content"] as const;
const ANTHROPIC_DELTA = ["type", "text", "citation", "partial_json"] as const;
/** A citation's fields the reader reads (`Citation`: not its `encrypted_index`). */
const ANTHROPIC_CITATION = [
  "type",
  "cited_text",
  "url",
  "title",
  "document_index",
  "document_title",
  "start_page_number",
  "end_page_number",
  "source",
  "search_result_index",
] as const;

function anthropicFields(raw: Json): unknown {
  switch (raw.type) {
    case "message_start":
    case "message_delta":
    case "message_stop":
    case "ping": {
      // Read for their type alone; their other fields are read as any value and not used.
      return { type: raw.type };
    }
    case "content_block_start": {
      const block = raw.content_block;
      if (!isObject(block) || block.type !== "web_search_tool_result") return raw;
      // A search result: its type, url and title (`SearchResult`).
      const slim = pick(block, ANTHROPIC_BLOCK);
      if ("content" in slim) slim.content = pickEach(slim.content, ["type", "url", "title"]);
      const out = pick(raw, ANTHROPIC_EVENT);
      out.content_block = slim;
      return out;
    }
    case "content_block_delta": {
      const delta = raw.delta;
      if (!isObject(delta) || delta.type !== "citations_delta" || !isObject(delta.citation)) return raw;
      const slim = pick(delta, ANTHROPIC_DELTA);
      slim.citation = pick(delta.citation, ANTHROPIC_CITATION);
      const out = pick(raw, ANTHROPIC_EVENT);
      out.delta = slim;
      return out;
    }
    default:
      return raw;
  }
}

function responsesFields(raw: Json): unknown {
  const type = raw.type;
  if (typeof type !== "string" || !type.startsWith("response.")) return raw;
  if (!RESPONSES_READ.has(type)) return { type };
  if (type !== "response.output_item.done") return raw;
  // An output item: its type, and a web search call's query and sources' url and title.
  const item = raw.item;
  if (!isObject(item)) return raw;
  const slim = pick(item, ["type", "action"]);
  if (item.type === "web_search_call" && isObject(slim.action)) {
    const action = pick(slim.action, ["query", "sources"]);
    if ("sources" in action) action.sources = pickEach(action.sources, ["url", "title"]);
    slim.action = action;
  } else {
    delete slim.action;
  }
  return { type, item: slim };
}

/**
 * `raw` with only the fields the core's reader for `dialect` reads (the core's name:
 * `"anthropic"`, `"openai-responses"`); `raw` itself for other dialects and chunks.
 */
export function coreFields(dialect: string | null, raw: unknown): unknown {
  if (!isObject(raw)) return raw;
  switch (dialect) {
    case "anthropic":
      return anthropicFields(raw);
    case "openai-responses":
      return responsesFields(raw);
    default:
      return raw;
  }
}
