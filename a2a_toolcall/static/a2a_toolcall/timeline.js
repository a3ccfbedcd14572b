// The tool timeline: frames, in arrival order, reduced to one invocation per toolCallId.
//
// Mirrors a2a_toolcall/contract.py (ToolTimeline) so a page and a Python client agree on what
// a stream meant: an outcome may arrive before its start, a frame may arrive twice (ignored),
// and contradictory frames are recorded, not thrown; the first-seen outcome is kept.

export const PENDING = "pending";
export const COMPLETED = "completed";
export const FAILED = "failed";

/**
 * The error of an invocation closed by its task's stop (runtime/runner.py CANCELLED): the
 * runtime sends a `failed` frame whose error is this, or this plus ": <reason>" (a time budget,
 * a shutdown).
 */
export const CANCELLED_ERROR = "cancelled";

/**
 * True for the error of a `failed` frame that means "cancelled", not "the tool failed": the
 * rule of contract.is_cancelled_error, shared by every client and the admin.
 */
export function isCancelledError(error) {
  return (
    typeof error === "string" &&
    (error === CANCELLED_ERROR || error.startsWith(`${CANCELLED_ERROR}: `))
  );
}

/** JSON equality, as pydantic compares JSON values (object key order does not matter). */
export function sameJSON(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    return a === b || (a == null && b == null);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((v, i) => sameJSON(v, b[i]));
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && sameJSON(a[k], b[k]));
}

/** One tool invocation as stitched from its frames (and, maybe, a server summary). */
export class ToolInvocation {
  constructor(toolCallId, name, order) {
    this.toolCallId = toolCallId;
    this.name = name;
    this.order = order;
    this.args = null;
    this.state = PENDING;
    this.result = null;
    this.error = null;
    this.hasStarted = false;
    /** Times (ms, caller's clock) given with the started and the outcome frames. */
    this.startedAt = null;
    this.finishedAt = null;
    /** The duration the server measured (its summary's `durationMs`), preferred when known. */
    this.serverDurationMs = null;
    this.frames = 0;
    this.contradictions = [];
  }

  /** True once a `completed` or `failed` frame arrived. */
  get isFinished() {
    return this.state !== PENDING;
  }

  /** True when it failed only because its task was stopped (see isCancelledError). */
  get isCancelled() {
    return this.state === FAILED && isCancelledError(this.error);
  }

  /**
   * Milliseconds from start to outcome, on one clock per invocation: the gap between the
   * timestamped frames when both were seen (the caller's clock, so the final figure continues
   * the count shown while it ran), else the server's figure; while running, the time elapsed
   * until `now` (if given). Else null.
   */
  durationMs(now = null) {
    if (this.startedAt !== null && this.finishedAt !== null) {
      return Math.max(0, this.finishedAt - this.startedAt);
    }
    if (this.serverDurationMs !== null) return this.serverDurationMs;
    if (this.startedAt !== null && !this.isFinished && now !== null) {
      return Math.max(0, now - this.startedAt);
    }
    return null;
  }
}

/**
 * What one `feed` or `merge` changed: `isNew` (a row to add), `started` (args now known),
 * `finished` (the outcome now known). All false for a duplicate.
 * @typedef {{call: ToolInvocation, isNew: boolean, started: boolean, finished: boolean}} Change
 */

export class Timeline {
  #calls = new Map();

  constructor() {
    /** @type {{toolCallId: string, kept: string, ignored: string, detail: string}[]} */
    this.contradictions = [];
  }

  /**
   * Apply one valid frame (see a2a.js validFrame) observed at time `at`.
   * @returns {Change}
   */
  feed(frame, at = null) {
    const { call, isNew } = this.#callFor(frame.toolCallId, frame.name);
    call.frames += 1;
    let started = false;
    let finished = false;
    if (frame.phase === "started") {
      if (call.hasStarted) {
        if (!sameJSON(frame.args ?? null, call.args)) {
          this.#contradict(call, "started", "started", "a second start with other args");
        }
      } else {
        call.hasStarted = started = true;
        call.args = frame.args ?? null;
        call.startedAt = at;
      }
    } else {
      const value = frame.phase === "completed" ? (frame.result ?? null) : (frame.error ?? null);
      finished = this.#finish(call, frame.phase, value, at);
    }
    return { call, isNew, started, finished };
  }

  /**
   * Merge one row of a task's tool-call summary (docs/server.md: toolCallId, name, state
   * pending/completed/failed, args, result, error, durationMs). It fills in what the frames
   * have not shown yet; a state never goes back from finished to pending.
   * @returns {Change | null} null for a row that is not a valid summary entry
   */
  merge(entry) {
    if (entry === null || typeof entry !== "object") return null;
    const { toolCallId, name, state } = entry;
    if (typeof toolCallId !== "string" || !toolCallId || typeof name !== "string" || !name) {
      return null;
    }
    if (![PENDING, COMPLETED, FAILED].includes(state)) return null;
    const { call, isNew } = this.#callFor(toolCallId, name);
    let started = false;
    let finished = false;
    if (!call.hasStarted) {
      // A summary row exists only for a call that was seen; its args are the started frame's.
      call.hasStarted = started = true;
      call.args = entry.args ?? null;
    }
    if (state !== PENDING) {
      const value = state === COMPLETED ? (entry.result ?? null) : (entry.error ?? null);
      finished = this.#finish(call, state, value, null);
    }
    if (typeof entry.durationMs === "number" && state !== PENDING) {
      call.serverDurationMs = entry.durationMs;
    }
    return { call, isNew, started, finished };
  }

  #callFor(toolCallId, name) {
    let call = this.#calls.get(toolCallId);
    if (call === undefined) {
      call = new ToolInvocation(toolCallId, name, this.#calls.size);
      this.#calls.set(toolCallId, call);
      return { call, isNew: true };
    }
    if (name !== call.name) this.#contradict(call, call.name, name, "frames name different tools");
    return { call, isNew: false };
  }

  #finish(call, phase, value, at) {
    if (call.isFinished) {
      const same = phase === COMPLETED ? sameJSON(value, call.result) : value === call.error;
      if (phase !== call.state) {
        this.#contradict(call, call.state, phase, "two different outcomes");
      } else if (!same) {
        this.#contradict(
          call,
          call.state,
          phase,
          "the outcome was repeated with a different payload",
        );
      }
      return false;
    }
    call.state = phase;
    if (phase === COMPLETED) call.result = value;
    else call.error = value;
    call.finishedAt = at;
    return true;
  }

  #contradict(call, kept, ignored, detail) {
    const found = { toolCallId: call.toolCallId, kept, ignored, detail };
    call.contradictions.push(found);
    this.contradictions.push(found);
  }

  /** The invocations in first-seen order. */
  [Symbol.iterator]() {
    return this.#calls.values();
  }

  get size() {
    return this.#calls.size;
  }

  get(toolCallId) {
    return this.#calls.get(toolCallId);
  }

  has(toolCallId) {
    return this.#calls.has(toolCallId);
  }

  /** Invocations with no outcome yet, in first-seen order. */
  get pending() {
    return [...this.#calls.values()].filter((c) => c.state === PENDING);
  }
}
