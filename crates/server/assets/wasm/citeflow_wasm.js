/* @ts-self-types="./citeflow_wasm.d.ts" */

/**
 * Reads a provider API's stream (Anthropic Messages, OpenAI Chat Completions and Responses,
 * Gemini, Gemini Interactions, Cohere v2, Bedrock ConverseStream) and yields the rewriter's
 * events, with every provider citation registered as a source and numbered in the same
 * append-only table as the markers the model writes.
 *
 * # Call protocol
 * 1. `new ProviderStream(sources, { settings, numbering, dialect, framing })`: `dialect` is
 *    `"auto"` (detected from the first payload) or a dialect name; `framing` of the bytes is
 *    `"auto"`, `"sse"`, `"jsonl"` or `"text"`.
 * 2. `feedBytes(bytes)` with the raw stream (cut anywhere), or `feedEvent(event)` with one
 *    parsed event (an object, or its JSON text; a JSON string is a chunk of answer text),
 *    or `feedText(text)` with the answer text of an event that holds text alone: each
 *    returns the events it released (`write`-style: `pollEvent()` also works);
 *    `feedEventCompact` and `feedTextCompact` return released text alone as a string;
 *    `feedEventLean` and `feedTextLean` return `false` for nothing released and (text)
 *    `true` for exactly the text given.
 * 3. `finish()`: the remaining events, the last being `done`, whose `text` is the final
 *    answer when a citation was bound after its text was shown (`finishCompact()`: the
 *    same without the `done` event's `uncited` list).
 *
 * Errors are `ProviderError` (`invalid_json`, `unknown_dialect`, `unexpected_shape`,
 * `upstream_error`, `no_text`, …), `RewriteError` or `SourceError`; after one, every call
 * throws `RewriteError` `failed`, while the events before it stay queued for `pollEvent()`.
 */
export class ProviderStream {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        ProviderStreamFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_providerstream_free(ptr, 0);
    }
    /**
     * Drops the engine's state; every later call throws `RewriteError` `closed`.
     */
    close() {
        wasm.providerstream_close(this.__wbg_ptr);
    }
    /**
     * The dialect once given or detected (`"anthropic"`, `"openai-responses"`, …).
     * @returns {string | undefined}
     */
    get dialect() {
        const ret = wasm.providerstream_dialect(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * Ends the stream: the remaining events are queued, the last being `done`.
     *
     * # Errors
     * As `feedBytes`; `ProviderError` `no_text` when the stream had no answer text but
     * events this reader does not know.
     */
    end() {
        const ret = wasm.providerstream_end(this.__wbg_ptr);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Feeds bytes of the stream as the provider sent them (SSE or JSONL, cut anywhere; with
     * `framing: "text"`, answer text) and returns the events they released.
     *
     * # Errors
     * Throws `ProviderError` naming the line, `RewriteError`, `SourceError`, or `TypeError`
     * `invalid_chunk`.
     * @param {string | Uint8Array} bytes
     * @returns {Event[]}
     */
    feedBytes(bytes) {
        const ret = wasm.providerstream_feedBytes(this.__wbg_ptr, bytes);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `feedEvent` for adapters that feed every chunk: what the event released comes back
     * as one string when it is text alone (the `text` events' text joined, `""` when
     * nothing was released), as the events otherwise. The event may also be its JSON text
     * as UTF-8 bytes (a `Uint8Array`: a long text crosses into WebAssembly faster so).
     *
     * # Errors
     * As `feedEvent`; `ProviderError` `invalid_utf8` for bytes that are not UTF-8.
     * @param {ProviderEvent | Uint8Array} event
     * @returns {string | Event[]}
     */
    feedEventCompact(event) {
        const ret = wasm.providerstream_feedEventCompact(this.__wbg_ptr, event);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `feedEventCompact` for adapters that feed every chunk and mostly get nothing back:
     * `false` when the event released nothing (instead of `""`), else as `feedEventCompact`.
     *
     * # Errors
     * As `feedEventCompact`.
     * @param {ProviderEvent | Uint8Array} event
     * @returns {boolean | string | Event[]}
     */
    feedEventLean(event) {
        const ret = wasm.providerstream_feedEventLean(this.__wbg_ptr, event);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Feeds one provider event (an object, or its JSON text) and returns the events it
     * released. The text is read by the dialect's typed reader, without a JSON tree.
     *
     * # Errors
     * As `feedBytes`; `ProviderError` `invalid_json` for text that is not JSON.
     * @param {ProviderEvent} event
     * @returns {Event[]}
     */
    feedEvent(event) {
        const ret = wasm.providerstream_feedEvent(this.__wbg_ptr, event);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `feedText`, with what it released returned as `feedEventCompact` returns it.
     *
     * # Errors
     * As `feedText`.
     * @param {string} text
     * @returns {string | Event[]}
     */
    feedTextCompact(text) {
        const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.providerstream_feedTextCompact(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `feedTextCompact` for adapters that keep the text they gave: `true` when the call
     * released exactly `text` (the usual case: no string comes back), `false` when it
     * released nothing, else as `feedTextCompact` (other text as a string, or the events).
     *
     * # Errors
     * As `feedText`.
     * @param {string} text
     * @returns {boolean | string | Event[]}
     */
    feedTextLean(text) {
        const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.providerstream_feedTextLean(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Feeds the answer text of one provider event that holds answer text alone, read by the
     * caller (what the dialect's reader would have given for the event, without reading
     * it: the core's `ProviderStream::write_text`), and returns the events it released. For
     * adapters whose SDK has already parsed the event; every other event goes to
     * `feedEvent`. It counts as one event (the line named in later errors); empty text
     * releases nothing, as an event without text.
     *
     * # Errors
     * As `feedBytes`.
     * @param {string} text
     * @returns {Event[]}
     */
    feedText(text) {
        const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.providerstream_feedText(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `finish()` for adapters that do not list the sources left uncited: the same events,
     * the `done` event without its `uncited` list (as when every source was cited), which
     * is then neither turned into JSON nor into JS values.
     *
     * # Errors
     * As `end`.
     * @returns {Event[]}
     */
    finishCompact() {
        const ret = wasm.providerstream_finishCompact(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `end()`, then every remaining event, the last being `done`.
     *
     * # Errors
     * As `end`.
     * @returns {Event[]}
     */
    finish() {
        const ret = wasm.providerstream_finish(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The key `number` belongs to in the numbering table (`undefined` for a number not
     * handed out): one entry of `numbering()`, without the whole table's JSON.
     * @param {number} number
     * @returns {string | undefined}
     */
    keyOf(number) {
        const ret = wasm.providerstream_keyOf(this.__wbg_ptr, number);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * A stream over a copy of `sources` (may be empty, `new Sources()`: provider citations
     * bring their own).
     *
     * # Errors
     * Throws `SettingsError` for bad settings or an unknown dialect or framing,
     * `NumberingError` for conflicting entries.
     * @param {Sources} sources
     * @param {ProviderStreamOptions | null} [options]
     */
    constructor(sources, options) {
        _assertClass(sources, Sources);
        const ret = wasm.providerstream_new(sources.__wbg_ptr, isLikeNone(options) ? 0 : addToExternrefTable0(options));
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        ProviderStreamFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The numbering table as it is now: save it to continue the numbering of a session.
     *
     * # Errors
     * Never in practice (a JSON conversion failure).
     * @returns {NumberEntry[]}
     */
    numbering() {
        const ret = wasm.providerstream_numbering(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The next event, or `undefined` when the stream needs more input.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {Event | undefined}
     */
    pollEvent() {
        const ret = wasm.providerstream_pollEvent(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Answers a `number_needed` event with the number the shared store gave `key`.
     *
     * # Errors
     * Throws `RewriteError` (`not_awaiting`: nothing changes).
     * @param {string} key
     * @param {number} number
     */
    provideNumber(key, number) {
        const val2 = +number;
        const ptr0 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.providerstream_provideNumber(this.__wbg_ptr, ptr0, len0, val2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The settings, every key present.
     *
     * # Errors
     * Never in practice (a JSON conversion failure).
     * @returns {ResolvedSettings}
     */
    settings() {
        const ret = wasm.providerstream_settings(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * A copy of the sources: the caller's and every source a provider cited so far.
     * @returns {Sources}
     */
    sources() {
        const ret = wasm.providerstream_sources(this.__wbg_ptr);
        return Sources.__wrap(ret);
    }
}
if (Symbol.dispose) ProviderStream.prototype[Symbol.dispose] = ProviderStream.prototype.free;

/**
 * Rewrites one streamed answer: citation markers become stable numbers while it streams.
 *
 * # Call protocol
 * 1. `new Rewriter(sources, { settings, numbering })`: omit `numbering` for numbers per
 *    answer; pass the session's saved entries (`rewriter.numbering()` of the previous answer)
 *    for numbers per session.
 * 2. For each chunk (`string` or `Uint8Array`; a marker or a UTF-8 character may be cut
 *    anywhere): `write(chunk)` then `pollEvent()` until `undefined`, or `feed(chunk)`, which
 *    does both and returns the events.
 * 3. `end()` then `pollEvent()` until the `done` event, or `finish()`, which does both.
 *
 * With `numberSource: "external"`, a `number_needed` event asks for a number from the shared
 * store; nothing more comes out until `provideNumber(key, number)` answers it.
 *
 * When a call throws, the events produced before the error stay queued: `pollEvent()` still
 * returns them (after a fatal error, the text before the error and, for `verification`, the
 * `done` event). After `close()`, every method throws `RewriteError` `closed`.
 */
export class Rewriter {
    static __wrap(ptr) {
        const obj = Object.create(Rewriter.prototype);
        obj.__wbg_ptr = ptr;
        RewriterFinalization.register(obj, obj.__wbg_ptr, obj);
        return obj;
    }
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        RewriterFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_rewriter_free(ptr, 0);
    }
    /**
     * Drops the engine's state (sources, numbering, held-back text) now, keeping the JS
     * object; every later call throws `RewriteError` `closed`. Read `numbering()` first.
     */
    close() {
        wasm.rewriter_close(this.__wbg_ptr);
    }
    /**
     * Ends the input: the held-back tail is decided and the `done` event is queued.
     *
     * # Errors
     * Throws `RewriteError` (`invalid_utf8`, `verification` — the `done` event is still
     * queued —, `ended`, `failed`).
     */
    end() {
        const ret = wasm.rewriter_end(this.__wbg_ptr);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * `write(chunk)`, then every event it produced.
     *
     * # Errors
     * Throws as `write`.
     * @param {string | Uint8Array} chunk
     * @returns {Event[]}
     */
    feed(chunk) {
        const ret = wasm.rewriter_feed(this.__wbg_ptr, chunk);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * `end()`, then every remaining event, the last being `done` (or a `number_needed` to
     * answer first).
     *
     * # Errors
     * Throws as `end`.
     * @returns {Event[]}
     */
    finish() {
        const ret = wasm.rewriter_finish(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Input bytes held back: an unfinished character or a possible marker.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {number}
     */
    get heldBytes() {
        const ret = wasm.rewriter_heldBytes(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Raw input bytes accepted so far (the next `writeAt` offset).
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {number}
     */
    get inputBytes() {
        const ret = wasm.rewriter_inputBytes(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0];
    }
    /**
     * Whether a `number_needed` event waits for its answer.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {boolean}
     */
    get isAwaitingNumber() {
        const ret = wasm.rewriter_isAwaitingNumber(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * Whether `close()` was called.
     * @returns {boolean}
     */
    get isClosed() {
        const ret = wasm.rewriter_isClosed(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Whether the `done` event has been queued.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {boolean}
     */
    get isEnded() {
        const ret = wasm.rewriter_isEnded(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] !== 0;
    }
    /**
     * The cited sources by number; with `all`, every numbered source of the table.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @param {boolean | null} [all]
     * @returns {ListedSource[]}
     */
    listedSources(all) {
        const ret = wasm.rewriter_listedSources(this.__wbg_ptr, isLikeNone(all) ? 0xFFFFFF : all ? 1 : 0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * A rewriter for one stream over a copy of `sources`.
     *
     * # Errors
     * Throws `SettingsError` for bad settings, `NumberingError` for conflicting entries.
     * @param {Sources} sources
     * @param {RewriterOptions | null} [options]
     */
    constructor(sources, options) {
        _assertClass(sources, Sources);
        const ret = wasm.rewriter_new(sources.__wbg_ptr, isLikeNone(options) ? 0 : addToExternrefTable0(options));
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        RewriterFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The next `writeSeq` sequence number.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {number}
     */
    get nextSeq() {
        const ret = wasm.rewriter_nextSeq(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0];
    }
    /**
     * The numbering table as it is now: save it to continue the numbering of a session.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {NumberEntry[]}
     */
    numbering() {
        const ret = wasm.rewriter_numbering(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The next event, or `undefined` when the rewriter needs more input (or a number).
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {Event | undefined}
     */
    pollEvent() {
        const ret = wasm.rewriter_pollEvent(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Answers a `number_needed` event with the number the shared store gave `key`.
     *
     * # Errors
     * Throws `RewriteError` (`not_awaiting`: nothing changes; `numbering`: fatal).
     * @param {string} key
     * @param {number} number
     */
    provideNumber(key, number) {
        const val2 = +number;
        const ptr0 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.rewriter_provideNumber(this.__wbg_ptr, ptr0, len0, val2);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Restores a rewriter from `snapshot()` JSON (of this package, Python, the CLI or Rust);
     * it continues exactly where the snapshot was taken.
     *
     * # Errors
     * Throws `RestoreError` (`invalid_snapshot`, `version`).
     * @param {string} snapshot
     * @returns {Rewriter}
     */
    static restore(snapshot) {
        const ptr0 = passStringToWasm0(snapshot, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.rewriter_restore(ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return Rewriter.__wrap(ret[0]);
    }
    /**
     * The settings, every key present.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {ResolvedSettings}
     */
    settings() {
        const ret = wasm.rewriter_settings(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The whole state as JSON (the core's `Snapshot` format), to continue elsewhere with
     * `Rewriter.restore`.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {string}
     */
    snapshot() {
        let deferred2_0;
        let deferred2_1;
        try {
            const ret = wasm.rewriter_snapshot(this.__wbg_ptr);
            var ptr1 = ret[0];
            var len1 = ret[1];
            if (ret[3]) {
                ptr1 = 0; len1 = 0;
                throw takeFromExternrefTable0(ret[2]);
            }
            deferred2_0 = ptr1;
            deferred2_1 = len1;
            return getStringFromWasm0(ptr1, len1);
        } finally {
            wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
        }
    }
    /**
     * A copy of the sources.
     *
     * # Errors
     * Throws `RewriteError` `closed` after `close()`.
     * @returns {Sources}
     */
    sources() {
        const ret = wasm.rewriter_sources(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return Sources.__wrap(ret[0]);
    }
    /**
     * Feeds a chunk that starts at raw input byte `byteOffset` (UTF-8 bytes of the input so
     * far); bytes already seen are ignored.
     *
     * # Errors
     * Throws as `write`, and `RewriteError` `gap` when the chunk starts after the input so far.
     * @param {number} byteOffset
     * @param {string | Uint8Array} chunk
     * @returns {Accepted}
     */
    writeAt(byteOffset, chunk) {
        const ret = wasm.rewriter_writeAt(this.__wbg_ptr, byteOffset, chunk);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Feeds chunk number `seq` (from 0); a chunk already seen is ignored (`"duplicate"`).
     *
     * # Errors
     * Throws as `write`, and `RewriteError` `gap` when `seq` skips a chunk (nothing changes).
     * @param {number} seq
     * @param {string | Uint8Array} chunk
     * @returns {Accepted}
     */
    writeSeq(seq, chunk) {
        const ret = wasm.rewriter_writeSeq(this.__wbg_ptr, seq, chunk);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Feeds the next chunk.
     *
     * # Errors
     * Throws `RewriteError` (`invalid_utf8` under `invalidUtf8: "error"`, `ended`, `failed`)
     * or `TypeError` (`invalid_chunk`).
     * @param {string | Uint8Array} chunk
     */
    write(chunk) {
        const ret = wasm.rewriter_write(this.__wbg_ptr, chunk);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
}
if (Symbol.dispose) Rewriter.prototype[Symbol.dispose] = Rewriter.prototype.free;

/**
 * The sources of a session, registered in rounds, in the order the model was shown them.
 *
 * Keep one `Sources` per session: append a round for every search, and give it to each
 * `Rewriter` (which takes a copy).
 */
export class Sources {
    static __wrap(ptr) {
        const obj = Object.create(Sources.prototype);
        obj.__wbg_ptr = ptr;
        SourcesFinalization.register(obj, obj.__wbg_ptr, obj);
        return obj;
    }
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        SourcesFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_sources_free(ptr, 0);
    }
    /**
     * Registers a round of sources and returns its 1-based number. Nothing is registered if
     * it throws.
     *
     * # Errors
     * Throws `SourceError` (`empty_id`, `duplicate_id`, `invalid_sources`).
     * @param {Source[]} list
     * @param {string | null} [query]
     * @returns {number}
     */
    appendRound(list, query) {
        var ptr0 = isLikeNone(query) ? 0 : passStringToWasm0(query, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        var len0 = WASM_VECTOR_LEN;
        const ret = wasm.sources_appendRound(this.__wbg_ptr, list, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * The n-th source (1-based) in the order the model was shown them.
     *
     * # Errors
     * Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
     * @param {number} rank
     * @returns {Source | undefined}
     */
    byRank(rank) {
        const ret = wasm.sources_byRank(this.__wbg_ptr, rank);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * A set of one round without a query.
     *
     * # Errors
     * Throws `SourceError` (`empty_id`, `duplicate_id`, `invalid_sources`).
     * @param {Source[]} list
     * @returns {Sources}
     */
    static fromArray(list) {
        const ret = wasm.sources_fromArray(list);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return Sources.__wrap(ret[0]);
    }
    /**
     * The source with this id.
     *
     * # Errors
     * Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
     * @param {string} id
     * @returns {Source | undefined}
     */
    get(id) {
        const ptr0 = passStringToWasm0(id, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.sources_get(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * How many sources there are.
     * @returns {number}
     */
    get length() {
        const ret = wasm.sources_length(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * An empty set.
     */
    constructor() {
        const ret = wasm.sources_new();
        this.__wbg_ptr = ret;
        SourcesFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * The round that first registered this id.
     * @param {string} id
     * @returns {number | undefined}
     */
    roundOf(id) {
        const ptr0 = passStringToWasm0(id, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.sources_roundOf(this.__wbg_ptr, ptr0, len0);
        return ret === Number.MAX_SAFE_INTEGER ? undefined : ret;
    }
    /**
     * The rounds in order (for `renderList`'s grouping).
     *
     * # Errors
     * Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
     * @returns {Round[]}
     */
    rounds() {
        const ret = wasm.sources_rounds(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * All sources in registration order.
     *
     * # Errors
     * Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
     * @returns {Source[]}
     */
    toArray() {
        const ret = wasm.sources_toArray(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
}
if (Symbol.dispose) Sources.prototype[Symbol.dispose] = Sources.prototype.free;

/**
 * The citation instruction for the prompt, with an example marker of these sources.
 *
 * # Errors
 * Throws `SettingsError` `unknown_name` for an unknown marker.
 * @param {Sources} sources
 * @param {PromptMarker} marker
 * @returns {string}
 */
export function citationInstruction(sources, marker) {
    let deferred2_0;
    let deferred2_1;
    try {
        _assertClass(sources, Sources);
        const ret = wasm.citationInstruction(sources.__wbg_ptr, marker);
        var ptr1 = ret[0];
        var len1 = ret[1];
        if (ret[3]) {
            ptr1 = 0; len1 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred2_0 = ptr1;
        deferred2_1 = len1;
        return getStringFromWasm0(ptr1, len1);
    } finally {
        wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
    }
}

/**
 * The context block for the prompt: each source on one line, labelled with the marker the
 * model should copy, its text cut to `maxCharsPerSource` characters.
 *
 * # Errors
 * Throws `SettingsError` `unknown_name` for an unknown marker.
 * @param {Sources} sources
 * @param {PromptMarker} marker
 * @param {number} maxCharsPerSource
 * @returns {string}
 */
export function contextBlock(sources, marker, maxCharsPerSource) {
    let deferred2_0;
    let deferred2_1;
    try {
        _assertClass(sources, Sources);
        const ret = wasm.contextBlock(sources.__wbg_ptr, marker, maxCharsPerSource);
        var ptr1 = ret[0];
        var len1 = ret[1];
        if (ret[3]) {
            ptr1 = 0; len1 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred2_0 = ptr1;
        deferred2_1 = len1;
        return getStringFromWasm0(ptr1, len1);
    } finally {
        wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
    }
}

/**
 * The default settings, every key present.
 *
 * # Errors
 * Throws `Error` `internal` only if a record cannot be converted to JSON (a bug).
 * @returns {ResolvedSettings}
 */
export function defaultSettings() {
    const ret = wasm.defaultSettings();
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Settings whose scanner recognises `marker` on top of `settings` (rank markers switch rank
 * mode on unless `settings` has one).
 *
 * # Errors
 * Throws `SettingsError`.
 * @param {PromptMarker} marker
 * @param {Settings | null} [settings]
 * @returns {ResolvedSettings}
 */
export function promptSettings(marker, settings) {
    const ret = wasm.promptSettings(marker, isLikeNone(settings) ? 0 : addToExternrefTable0(settings));
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}

/**
 * Renders a source list (`done.sources` or `listedSources()`) as text, markdown, footnotes,
 * HTML or JSON; with `rounds` (`sources.rounds()`), grouped by search round.
 *
 * # Errors
 * Throws `SettingsError` `unknown_name` for an unknown format, `SourceError`
 * `invalid_sources` for a malformed list.
 * @param {ListedSource[]} list
 * @param {ListFormat} format
 * @param {Round[] | null} [rounds]
 * @returns {string}
 */
export function renderList(list, format, rounds) {
    let deferred2_0;
    let deferred2_1;
    try {
        const ret = wasm.renderList(list, format, isLikeNone(rounds) ? 0 : addToExternrefTable0(rounds));
        var ptr1 = ret[0];
        var len1 = ret[1];
        if (ret[3]) {
            ptr1 = 0; len1 = 0;
            throw takeFromExternrefTable0(ret[2]);
        }
        deferred2_0 = ptr1;
        deferred2_1 = len1;
        return getStringFromWasm0(ptr1, len1);
    } finally {
        wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
    }
}

/**
 * Rewrites a whole answer at once: `{ text, events, numbering }`, adjacent texts merged.
 *
 * # Errors
 * Throws as `new Rewriter`, `write` and `end`.
 * @param {string} text
 * @param {Sources} sources
 * @param {RewriterOptions | null} [options]
 * @returns {Rewritten}
 */
export function rewrite(text, sources, options) {
    _assertClass(sources, Sources);
    const ptr0 = passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.rewrite(ptr0, len0, sources.__wbg_ptr, isLikeNone(options) ? 0 : addToExternrefTable0(options));
    if (ret[2]) {
        throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
}
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg___wbindgen_is_null_c22311b1cc228e3a: function(arg0) {
            const ret = arg0 === null;
            return ret;
        },
        __wbg___wbindgen_is_undefined_be5b34249ff1fc15: function(arg0) {
            const ret = arg0 === undefined;
            return ret;
        },
        __wbg___wbindgen_string_get_7ce8eee7fd327545: function(arg0, arg1) {
            const obj = arg1;
            const ret = typeof(obj) === 'string' ? obj : undefined;
            var ptr1 = isLikeNone(ret) ? 0 : passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            var len1 = WASM_VECTOR_LEN;
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
        },
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbg___wbindgen_typeof_ee4990276e02f607: function(arg0) {
            const ret = typeof arg0;
            return ret;
        },
        __wbg_instanceof_Error_74e3cca0c4a69161: function(arg0) {
            let result;
            try {
                result = arg0 instanceof Error;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_instanceof_Uint8Array_d7aeb0dcb3108fea: function(arg0) {
            let result;
            try {
                result = arg0 instanceof Uint8Array;
            } catch (_) {
                result = false;
            }
            const ret = result;
            return ret;
        },
        __wbg_length_186163212ffe79c3: function(arg0) {
            const ret = arg0.length;
            return ret;
        },
        __wbg_message_43d8c8f1d543a349: function(arg0) {
            const ret = arg0.message;
            return ret;
        },
        __wbg_new_37eb45aaf5eeb820: function() {
            const ret = new Array();
            return ret;
        },
        __wbg_new_787b9fb330d55d78: function(arg0, arg1) {
            const ret = new Error(getStringFromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_parse_c3f72b5a24f83c01: function() { return handleError(function (arg0, arg1) {
            const ret = JSON.parse(getStringFromWasm0(arg0, arg1));
            return ret;
        }, arguments); },
        __wbg_prototypesetcall_13162965d1fe7aa3: function(arg0, arg1, arg2) {
            Uint8Array.prototype.set.call(getArrayU8FromWasm0(arg0, arg1), arg2);
        },
        __wbg_set_2793479888329cb6: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = Reflect.set(arg0, arg1, arg2);
            return ret;
        }, arguments); },
        __wbg_set_name_822e3903f3184979: function(arg0, arg1, arg2) {
            arg0.name = getStringFromWasm0(arg1, arg2);
        },
        __wbg_stringify_0a0fbf2ef722380a: function() { return handleError(function (arg0) {
            const ret = JSON.stringify(arg0);
            return ret;
        }, arguments); },
        __wbindgen_generic_0000000000000001: function(arg0, arg1) {
            // Cast intrinsic for `Ref(String) -> Externref`.
            const ret = getStringFromWasm0(arg0, arg1);
            return ret;
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./citeflow_wasm_bg.js": import0,
    };
}

const ProviderStreamFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_providerstream_free(ptr, 1));
const RewriterFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_rewriter_free(ptr, 1));
const SourcesFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_sources_free(ptr, 1));

function addToExternrefTable0(obj) {
    const idx = wasm.__externref_table_alloc();
    wasm.__wbindgen_externrefs.set(idx, obj);
    return idx;
}

function _assertClass(instance, klass) {
    if (!(instance instanceof klass)) {
        throw new Error(`expected instance of ${klass.name}`);
    }
}

function getArrayU8FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}

let cachedDataViewMemory0 = null;
function getDataViewMemory0() {
    if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || (cachedDataViewMemory0.buffer.detached === undefined && cachedDataViewMemory0.buffer !== wasm.memory.buffer)) {
        cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
    }
    return cachedDataViewMemory0;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function handleError(f, args) {
    try {
        return f.apply(this, args);
    } catch (e) {
        const idx = addToExternrefTable0(e);
        wasm.__wbindgen_exn_store(idx);
    }
}

function isLikeNone(x) {
    return x === undefined || x === null;
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
const MAX_SAFARI_DECODE_BYTES = 2146435072;
let numBytesDecoded = 0;
function decodeText(bytes) {
    numBytesDecoded += bytes.length;
    if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
        cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
        cachedTextDecoder.decode();
        numBytesDecoded = bytes.length;
    }
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

let wasmModule, wasmInstance, wasm;
function __wbg_finalize_init(instance, module) {
    wasmInstance = instance;
    wasm = instance.exports;
    wasmModule = module;
    cachedDataViewMemory0 = null;
    cachedUint8ArrayMemory0 = null;
    wasm.__wbindgen_start();
    return wasm;
}

async function __wbg_load(module, imports) {
    if (typeof Response === 'function' && module instanceof Response) {
        if (!module.ok) {
            throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
        }

        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return await WebAssembly.instantiateStreaming(module, imports);
            } catch (e) {
                const validResponse = expectedResponseType(module.type);

                if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                    console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                } else { throw e; }
            }
        }

        const bytes = await module.arrayBuffer();
        return await WebAssembly.instantiate(bytes, imports);
    } else {
        const instance = await WebAssembly.instantiate(module, imports);

        if (instance instanceof WebAssembly.Instance) {
            return { instance, module };
        } else {
            return instance;
        }
    }

    function expectedResponseType(type) {
        switch (type) {
            case 'basic': case 'cors': case 'default': return true;
        }
        return false;
    }
}

function initSync(module) {
    if (wasm !== undefined) return wasm;


    if (module !== undefined) {
        if (Object.getPrototypeOf(module) === Object.prototype) {
            ({module} = module)
        } else {
            console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
        }
    }

    const imports = __wbg_get_imports();
    if (!(module instanceof WebAssembly.Module)) {
        module = new WebAssembly.Module(module);
    }
    const instance = new WebAssembly.Instance(module, imports);
    return __wbg_finalize_init(instance, module);
}

let __wbg_init_promise;
async function __wbg_init(module_or_path) {
    if (wasm !== undefined) return wasm;
    if (__wbg_init_promise === undefined) {
        __wbg_init_promise = __wbg_init_once(module_or_path);
        __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
    }
    return __wbg_init_promise;
}

async function __wbg_init_once(module_or_path) {

    if (module_or_path !== undefined) {
        if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
            ({module_or_path} = module_or_path)
        } else {
            console.warn('using deprecated parameters for the initialization function; pass a single object instead')
        }
    }

    if (module_or_path === undefined) {
        module_or_path = new URL('citeflow_wasm_bg.wasm', import.meta.url);
    }
    const imports = __wbg_get_imports();

    if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
        module_or_path = fetch(module_or_path);
    }

    const { instance, module } = await __wbg_load(await module_or_path, imports);

    return __wbg_finalize_init(instance, module);
}

export { initSync, __wbg_init as default };
