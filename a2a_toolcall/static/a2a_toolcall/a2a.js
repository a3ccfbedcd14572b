// A small A2A 1.0 client for the browser: JSON-RPC over fetch, streams read as SSE.
//
// The wire is described in docs/server.md and docs/wire.md; the tool-call-v1 reading mirrors
// a2a_toolcall/contract.py (parse_tool_call). No DOM here: the page (live.js) uses it, and so
// can any other script.

import { SSEDecoder, readEvents } from "./sse.js";

/** The extension URI a client activates with the `A2A-Extensions` header. */
export const TOOL_CALL_V1_URI = "https://proto-labs.ai/a2a/ext/tool-call-v1";
/** The DataPart discriminator, carried in `metadata.mimeType`. */
export const TOOL_CALL_V1_MIME_TYPE = "application/vnd.protolabs.tool-call-v1+json";
export const A2A_VERSION = "1.0";

/** JSON-RPC error codes the page acts on (docs/server.md, "Errors"). */
export const TASK_NOT_FOUND = -32001;
export const TASK_NOT_CANCELABLE = -32002;
export const UNSUPPORTED_OPERATION = -32004;

const TERMINAL = new Set([
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
]);
const INTERRUPTED = new Set(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);

/** True for the states a task never leaves. */
export function isTerminal(state) {
  return TERMINAL.has(state);
}

/** True for the states that wait on the client (input or auth required). */
export function isInterrupted(state) {
  return INTERRUPTED.has(state);
}

/** "TASK_STATE_INPUT_REQUIRED" -> "input required". */
export function stateLabel(state) {
  return String(state || "TASK_STATE_UNSPECIFIED")
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replaceAll("_", " ");
}

/** The server answered with a JSON-RPC error (`code`, `message`, `data` as sent). */
export class JSONRPCError extends Error {
  constructor(error) {
    super(String(error?.message ?? "JSON-RPC error"));
    this.name = "JSONRPCError";
    this.code = error?.code;
    this.data = error?.data;
  }
}

/** The server answered with something other than a JSON-RPC response (HTTP status, body type). */
export class HTTPError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "HTTPError";
    this.status = status;
  }
}

/** The connection failed or a stream broke off: worth a retry. */
export class ConnectionLost extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = "ConnectionLost";
  }
}

/** A random hex id (crypto.randomUUID needs a secure context; getRandomValues does not). */
export function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A user message; with `taskId` (and `contextId`) it answers that task's question. */
export function userMessage(text, { taskId, contextId } = {}) {
  const message = { messageId: newId(), role: "ROLE_USER", parts: [{ text }] };
  if (taskId) message.taskId = taskId;
  if (contextId) message.contextId = contextId;
  return message;
}

/** The text parts of a message (or a list of parts), joined by line breaks. */
export function textOf(message) {
  const parts = Array.isArray(message) ? message : message?.parts;
  if (!Array.isArray(parts)) return "";
  return parts
    .filter((p) => p && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}

/** The schemes an agent's URL may be linked with: anything else is shown as text. */
const LINK_PROTOCOLS = new Set(["http:", "https:"]);

/**
 * `value` as a link target when it is an absolute http(s) URL (its normalised `href`), else
 * null. Agent output is hostile input: a file part's `url` may be `javascript:`, `data:`,
 * `vbscript:`, relative or malformed, and is then shown as text. Read with the URL parser, as
 * the browser would follow it (`" JavaScript:"` and `"java\tscript:"` are javascript: URLs),
 * never matched on its first characters; the Python side is `a2a_toolcall.untrusted`.
 */
export function httpURL(value) {
  if (typeof value !== "string") return null;
  let url;
  try {
    url = new URL(value); // no base: a relative URL throws
  } catch {
    return null;
  }
  return LINK_PROTOCOLS.has(url.protocol) && url.hostname !== "" ? url.href : null;
}

// --- tool-call-v1 -----------------------------------------------------------------------------

const PHASES = new Set(["started", "completed", "failed"]);

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * A valid frame as a fresh object (absent and null optional members omitted), or null.
 * Unknown members are dropped, as the Python reader ignores them.
 */
export function validFrame(payload) {
  if (!isObject(payload)) return null;
  const { toolCallId, name, phase } = payload;
  if (typeof toolCallId !== "string" || !toolCallId) return null;
  if (typeof name !== "string" || !name) return null;
  if (!PHASES.has(phase)) return null;
  const frame = { toolCallId, name, phase };
  if (phase === "started" && payload.args != null) frame.args = payload.args;
  if (phase === "completed" && payload.result != null) frame.result = payload.result;
  if (phase === "failed" && payload.error != null) {
    if (typeof payload.error !== "string") return null;
    frame.error = payload.error;
  }
  return frame;
}

function fromUriMetadata(metadata) {
  return isObject(metadata) && TOOL_CALL_V1_URI in metadata
    ? validFrame(metadata[TOOL_CALL_V1_URI])
    : null;
}

function fromPart(part) {
  if (!isObject(part)) return null;
  const metadata = part.metadata;
  if (!isObject(metadata) || metadata.mimeType !== TOOL_CALL_V1_MIME_TYPE) {
    return fromUriMetadata(metadata);
  }
  if ("data" in part) return validFrame(part.data); // A2A 1.0 and 0.3
  const content = part.content; // the JS SDK's in-memory form
  if (isObject(content) && content.$case === "data") return validFrame(content.value);
  return null;
}

/**
 * The first valid tool-call-v1 frame among `parts` (a list of parts, or a message with
 * `parts`/`metadata`), or null. Lenient like contract.parse_tool_call: never throws.
 */
export function parseToolCall(parts) {
  if (isObject(parts)) {
    const found = fromUriMetadata(parts.metadata);
    if (found !== null) return found;
    parts = parts.parts;
  }
  if (!Array.isArray(parts)) return null;
  for (const part of parts) {
    const found = fromPart(part);
    if (found !== null) return found;
  }
  return null;
}

// --- the client -------------------------------------------------------------------------------

/**
 * One item of a stream: the JSON-RPC `result` (a StreamResponse: `task`, `statusUpdate`,
 * `artifactUpdate` or `message`) and the SSE `id` of its event (null when it had none).
 * @typedef {{id: string | null, result: object}} StreamItem
 */

/** JSON-RPC calls to one A2A endpoint, in the 1.0 dialect, with tool-call-v1 activated. */
export class A2AClient {
  #nextId = 1;

  /**
   * @param {string} endpoint the JSON-RPC URL (e.g. "/a2a/")
   * @param {{fetch?: typeof fetch, headers?: Record<string, string>}} [options] `headers` go
   *   with every request (e.g. `X-CSRFToken`, which the endpoint asks of session callers)
   */
  constructor(endpoint, { fetch: fetchImpl, headers = {} } = {}) {
    this.endpoint = endpoint;
    this.fetch = fetchImpl ?? globalThis.fetch.bind(globalThis);
    this.headers = { ...headers };
  }

  async #post(method, params, { accept, headers = {}, signal } = {}) {
    const body = JSON.stringify({ jsonrpc: "2.0", id: this.#nextId++, method, params });
    try {
      return await this.fetch(this.endpoint, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: accept,
          "A2A-Version": A2A_VERSION,
          "A2A-Extensions": TOOL_CALL_V1_URI,
          ...this.headers,
          ...headers,
        },
        body,
        cache: "no-store",
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ConnectionLost(`could not reach ${this.endpoint}: ${error.message}`, error);
    }
  }

  async #jsonResult(response) {
    let message;
    try {
      message = await response.json();
    } catch (error) {
      throw new HTTPError(response.status, `HTTP ${response.status}: the answer is not JSON`);
    }
    if (!isObject(message)) {
      throw new HTTPError(response.status, `HTTP ${response.status}: not a JSON-RPC response`);
    }
    if (isObject(message.error)) throw new JSONRPCError(message.error);
    if (!("result" in message)) {
      throw new HTTPError(response.status, `HTTP ${response.status}: not a JSON-RPC response`);
    }
    return message.result;
  }

  #checkStatus(response) {
    // Every A2A error is a JSON-RPC error with HTTP 200; anything else is the HTTP layer's.
    if (response.ok || (response.headers.get("Content-Type") || "").includes("json")) return;
    throw new HTTPError(
      response.status,
      `HTTP ${response.status} ${response.statusText}`.trim() + ` from ${this.endpoint}`,
    );
  }

  /** Call a method and return its result; throws JSONRPCError, HTTPError or ConnectionLost. */
  async call(method, params, { signal } = {}) {
    const response = await this.#post(method, params, { accept: "application/json", signal });
    this.#checkStatus(response);
    return this.#jsonResult(response);
  }

  /**
   * Call a streaming method and yield its events as they arrive (see StreamItem). Returns when
   * the server ends the stream; throws ConnectionLost if the connection breaks, JSONRPCError if
   * the server refuses the call or sends an error event.
   * @returns {AsyncGenerator<StreamItem>}
   */
  async *stream(method, params, { lastEventId, signal } = {}) {
    const headers = lastEventId ? { "Last-Event-ID": lastEventId } : {};
    const response = await this.#post(method, params, {
      accept: "text/event-stream",
      headers,
      signal,
    });
    this.#checkStatus(response);
    if (!(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      // A refused call is answered with a plain JSON-RPC error, not a stream.
      await this.#jsonResult(response);
      throw new HTTPError(response.status, `${method} did not answer with an event stream`);
    }
    const events = readEvents(response.body, new SSEDecoder());
    try {
      for (;;) {
        let next;
        try {
          next = await events.next();
        } catch (error) {
          if (signal?.aborted) throw error;
          throw new ConnectionLost(`the ${method} stream broke off: ${error.message}`, error);
        }
        if (next.done) return;
        let message;
        try {
          message = JSON.parse(next.value.data);
        } catch (error) {
          throw new HTTPError(response.status, `${method} sent an event that is not JSON`);
        }
        if (!isObject(message)) {
          throw new HTTPError(response.status, `${method} sent an event that is not an object`);
        }
        if (isObject(message.error)) throw new JSONRPCError(message.error);
        yield { id: next.value.id, result: message.result };
      }
    } finally {
      // Closes the body when the caller stops reading early.
      await events.return();
    }
  }

  /** SendStreamingMessage: a new task, or the answer to a task's question. */
  sendStreamingMessage(message, { signal } = {}) {
    return this.stream("SendStreamingMessage", { message }, { signal });
  }

  /** SubscribeToTask: the task as it is, then what follows `lastEventId` (or the snapshot). */
  subscribeToTask(id, { lastEventId, signal } = {}) {
    return this.stream("SubscribeToTask", { id }, { lastEventId, signal });
  }

  /** GetTask: the task, with its tool-call summary in `metadata[TOOL_CALL_V1_URI]`. */
  getTask(id, { historyLength, signal } = {}) {
    const params = historyLength == null ? { id } : { id, historyLength };
    return this.call("GetTask", params, { signal });
  }

  /** CancelTask: returns the task once canceled. */
  cancelTask(id, { signal } = {}) {
    return this.call("CancelTask", { id }, { signal });
  }
}

/** The tool-call summary a task carries in its metadata (docs/server.md), or []. */
export function toolCallSummary(task) {
  const summary = task?.metadata?.[TOOL_CALL_V1_URI]?.toolCalls;
  return Array.isArray(summary) ? summary : [];
}
