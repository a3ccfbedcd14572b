// Server-Sent Events: an incremental text/event-stream decoder.
//
// It follows WHATWG HTML "Interpreting an event stream"
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
// and mirrors a2a_toolcall/protocol/sse.py (SSEDecoder) rule for rule, so the browser reads a
// stream exactly as the Python clients and tests do. EventSource is not used: it can only GET,
// and A2A streams are answers to JSON-RPC POSTs.

// CRLF, a lone LF and a lone CR each end a line; the alternation order makes CRLF one line end.
const LINE_END = /\r\n|\r|\n/g;
const BOM = "\uFEFF";

/**
 * One dispatched event. `id` is the last event ID in effect at dispatch (it persists across
 * events once an `id` field sets it; null while the stream has sent none); `retry` is the
 * reconnection time set by a `retry` field in this event's own block, or null.
 * @typedef {{data: string, event: string, id: string | null, retry: number | null}} ServerSentEvent
 */

/** Incremental parser: `feed` chunks (all Uint8Array or all strings) as they arrive, then `close`. */
export class SSEDecoder {
  // The spec decodes with UTF-8 decode, which strips one leading BOM; ignoreBOM keeps the
  // decoder from doing it so both chunk types are handled by the same check in feed().
  #utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
  #atStart = true;
  #skipLF = false;
  #partial = [];
  // One value per data line: joining them with LF is the spec's buffer minus its final LF.
  #data = [];
  #eventType = "";
  #id = null;
  #blockRetry = null;
  #lastEventId = "";
  #retry = null;
  #closed = false;

  /** The value to send as `Last-Event-ID` when reconnecting ("" means send none). */
  get lastEventId() {
    return this.#lastEventId;
  }

  /** The latest reconnection time (ms) set by a `retry` field, or null. */
  get retry() {
    return this.#retry;
  }

  /**
   * Parse the next chunk; returns the events it completes (often none).
   * @param {Uint8Array | ArrayBuffer | string} chunk
   * @returns {ServerSentEvent[]}
   */
  feed(chunk) {
    if (this.#closed) throw new Error("SSEDecoder.feed() called after close()");
    let text = typeof chunk === "string" ? chunk : this.#utf8.decode(chunk, { stream: true });
    if (!text) return [];
    if (this.#atStart) {
      // Only the stream's very first character, and only one BOM.
      this.#atStart = false;
      if (text.startsWith(BOM)) text = text.slice(1);
    } else if (this.#skipLF && text[0] === "\n") {
      // The previous chunk ended in CR, already taken as a line end: this LF completes a CRLF.
      text = text.slice(1);
    }
    // A final CR ends its line at once rather than waiting for a possible LF (which could
    // delay an event indefinitely); remember to skip that LF if it comes.
    this.#skipLF = text.endsWith("\r");

    const events = [];
    let start = 0;
    for (const end of text.matchAll(LINE_END)) {
      let line = text.slice(start, end.index);
      if (this.#partial.length) {
        this.#partial.push(line);
        line = this.#partial.join("");
        this.#partial = [];
      }
      const event = this.#processLine(line);
      if (event !== null) events.push(event);
      start = end.index + end[0].length;
    }
    if (start < text.length) this.#partial.push(text.slice(start));
    return events;
  }

  /** End the stream: an incomplete event is discarded, as the spec says. Always returns []. */
  close() {
    this.#closed = true;
    this.#partial = [];
    this.#data = [];
    return [];
  }

  #processLine(line) {
    if (line === "") return this.#dispatch(); // a blank line dispatches the event
    if (line.startsWith(":")) return null; // a comment (e.g. ": keepalive")
    // Split at the first colon; a line without one is a field name with an empty value.
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    // Field names are compared literally, with no case folding.
    if (name === "event") {
      this.#eventType = value;
    } else if (name === "data") {
      this.#data.push(value);
    } else if (name === "id") {
      if (!value.includes("\0")) this.#id = value;
    } else if (name === "retry") {
      // Only ASCII digits count; the reconnection time is set even if the block never
      // dispatches. Integers beyond 2^53 are as meaningless as sse.py's over-long digit runs.
      if (/^[0-9]+$/.test(value) && Number.isSafeInteger(Number(value))) {
        this.#retry = this.#blockRetry = Number(value);
      }
    }
    // Any other field is ignored.
    return null;
  }

  #dispatch() {
    // The last event ID string takes the buffer's value at every blank line; the buffer is
    // not reset, so an id persists.
    this.#lastEventId = this.#id ?? "";
    const data = this.#data;
    const eventType = this.#eventType;
    const retry = this.#blockRetry;
    this.#data = [];
    this.#eventType = "";
    this.#blockRetry = null;
    if (data.length === 0) return null; // an empty data buffer dispatches nothing
    return { data: data.join("\n"), event: eventType || "message", id: this.#id, retry };
  }
}

/**
 * Decode a response body (a ReadableStream of bytes), yielding events as each one completes.
 * Errors of the underlying read (a dropped connection) propagate to the caller.
 * @param {ReadableStream<Uint8Array>} body
 * @param {SSEDecoder} [decoder]
 * @returns {AsyncGenerator<ServerSentEvent>}
 */
export async function* readEvents(body, decoder = new SSEDecoder()) {
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield* decoder.feed(value);
    }
  } finally {
    decoder.close();
    // Stops the download when the caller stops early; harmless on a finished body.
    reader.cancel().catch(() => {});
  }
}
