// The middleware's fast path: the answer text of a raw provider chunk that holds answer text
// alone, read in JS, so that the chunk goes to `ProviderStream.feedText` instead of being turned
// into JSON and read again by the core. A chunk is taken only when the core's reader for the
// dialect would give exactly that text and nothing else for it; anything else (a citation, a new
// text part, a list not seen before, an unusual shape) returns `null` and goes whole to
// `feedEvent`. `middleware.test.mjs` checks both ways agree on every recording.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Equal arrays of strings (Perplexity's `citations`), or both absent. */
function sameStrings(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (typeof a[i] !== "string" || a[i] !== b[i]) return false;
  return true;
}

/** Arrays of objects with equal string `url`s (Perplexity's `search_results`), or both absent. */
function sameUrls(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x: unknown = a[i];
    const y: unknown = b[i];
    if (!isObject(x) || !isObject(y) || typeof x.url !== "string" || x.url !== y.url) return false;
  }
  return true;
}

/**
 * Reads the text of raw chunks that hold answer text alone, for one stream of a known dialect
 * (the core's name: `"anthropic"`, `"openai-responses"`, `"openai-chat"`; other dialects have no
 * fast path). Every raw chunk of the stream passes through `text`, in order.
 */
export class TextChunks {
  /** Responses: the `item_id` and `content_index` of the text part the reader is in. */
  private part: { itemId: unknown; contentIndex: unknown } | null = null;
  /** Chat: Perplexity's lists as the core last read them (every url in them is registered). */
  private citations: unknown = undefined;
  private searchResults: unknown = undefined;

  constructor(private readonly dialect: string) {}

  /** The chunk's answer text when it holds answer text alone (feed it with `feedText`), else `null` (feed it whole). */
  text(raw: unknown): string | null {
    if (!isObject(raw)) return null;
    switch (this.dialect) {
      case "anthropic":
        return anthropicText(raw);
      case "openai-responses":
        return this.responsesText(raw);
      case "openai-chat":
        return this.chatText(raw);
      default:
        return null;
    }
  }

  /**
   * `response.output_text.delta` in the part the reader is in (a delta or an annotation of the
   * same `item_id` and `content_index` came just before): the reader gives only its text.
   */
  private responsesText(raw: Json): string | null {
    const type = raw.type;
    const prev = this.part;
    if (type === "response.output_text.delta" || type === "response.output_text.annotation.added") {
      this.part = { itemId: raw.item_id, contentIndex: raw.content_index };
    } else {
      this.part = null;
    }
    if (type !== "response.output_text.delta" || typeof raw.delta !== "string" || prev === null) return null;
    const same =
      prev.itemId === raw.item_id &&
      prev.contentIndex === raw.content_index &&
      (raw.item_id === undefined || typeof raw.item_id === "string") &&
      (raw.content_index === undefined || typeof raw.content_index === "number");
    return same ? raw.delta : null;
  }

  /**
   * One choice (index 0) whose `delta` has string `content` and no annotations, no error, and
   * Perplexity's lists absent or equal to those the core last read (nothing new to register).
   */
  private chatText(raw: Json): string | null {
    const text = chatContent(raw);
    const listsKnown = sameStrings(raw.citations, this.citations) && sameUrls(raw.search_results, this.searchResults);
    if (text !== null && listsKnown) return text;
    // Fed whole: the core reads (and registers) these lists.
    this.citations = raw.citations;
    this.searchResults = raw.search_results;
    return null;
  }
}

/** `content_block_delta` with a `text_delta`: the reader gives only its text. */
function anthropicText(raw: Json): string | null {
  if (raw.type !== "content_block_delta") return null;
  const delta = raw.delta;
  if (!isObject(delta) || delta.type !== "text_delta" || typeof delta.text !== "string") return null;
  return delta.text;
}

function chatContent(raw: Json): string | null {
  if (raw.error !== undefined && raw.error !== null) return null;
  const choices = raw.choices;
  if (!Array.isArray(choices) || choices.length !== 1) return null;
  const choice: unknown = choices[0];
  if (!isObject(choice) || (choice.index !== undefined && choice.index !== 0)) return null;
  const delta = choice.delta;
  if (!isObject(delta) || typeof delta.content !== "string") return null;
  const annotations = delta.annotations;
  if (annotations !== undefined && !(Array.isArray(annotations) && annotations.length === 0)) return null;
  return delta.content;
}
