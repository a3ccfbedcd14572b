// The live timeline page: send a message, watch the agent's tools run, answer its questions.
//
// Every element with `data-a2a-live` becomes a LiveTimeline (see templates/a2a_toolcall/
// widget.html for the markup it expects; configuration is in data attributes, so the page
// needs no inline script and works under a strict Content-Security-Policy). Everything shown
// comes from the A2A endpoint: docs/browser.md describes the behaviour.
//
// What an agent says is hostile input (a model can be made to return any string or URL): it
// goes into the page as text only (textContent, text nodes, never innerHTML), and a URL of its
// is a link only when it is an http(s) one (httpURL); anything else is shown as text.

import {
  A2AClient,
  ConnectionLost,
  HTTPError,
  JSONRPCError,
  TASK_NOT_CANCELABLE,
  UNSUPPORTED_OPERATION,
  httpURL,
  isInterrupted,
  isTerminal,
  parseToolCall,
  stateLabel,
  textOf,
  toolCallSummary,
  userMessage,
} from "./a2a.js";
import { CANCELLED_ERROR, COMPLETED, FAILED, PENDING, Timeline } from "./timeline.js";

/** Waits before each resubscribe after a dropped stream; reset by every event received. */
const RECONNECT_DELAYS_MS = [250, 500, 1000, 2000, 4000];
/** What a proxy answers while the server behind it restarts: worth another try. */
const RETRY_HTTP_STATUSES = new Set([502, 503, 504]);
const TICK_MS = 250;
const MAX_ANNOUNCEMENTS = 50;
/** A row's preview is one line: the DOM keeps no more of a long result than a line can show. */
const PREVIEW_CHARS = 240;

/** Row states as words, so a row reads the same without its icon or colour. */
const ROW_LABELS = {
  [PENDING]: "running",
  [COMPLETED]: "done",
  [FAILED]: "failed",
  cancelled: "cancelled",
  unfinished: "no outcome",
};

const ROLES = [
  "ask",
  "message",
  "send",
  "cancel",
  "error",
  "state",
  "narration",
  "outcome",
  "task-link",
  "timeline",
  "question",
  "question-text",
  "reply",
  "dialogue",
  "answer",
  "answer-body",
  "announcer",
];
/** Parts a widget copied from an older markup may lack: that feature is then not shown. */
const OPTIONAL_ROLES = ["progress"];

function formatDuration(ms) {
  if (ms === null) return "";
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

function pretty(value) {
  return value === null || value === undefined ? "(none)" : JSON.stringify(value, null, 2);
}

/** A value on one line: a string as it is, anything else as compact JSON; cut to a line. */
function oneLine(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
}

/** A percent from a status update's metadata (runtime Progress(percent=...)), or null. */
function percentOf(metadata) {
  const percent = metadata?.percent;
  if (typeof percent !== "number" || !Number.isFinite(percent)) return null;
  return Math.min(100, Math.max(0, percent));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A file part of the answer: a link when its URL is http(s), else its name and URL as text. */
function filePart(part) {
  const paragraph = element("p", "a2a-answer-file");
  const name = part.filename ? String(part.filename) : "";
  const href = httpURL(part.url);
  if (href !== null) {
    // noreferrer: the page's address (with ?task=) is none of the linked site's business.
    const link = element("a", "", name || part.url);
    link.href = href;
    link.rel = "noopener noreferrer";
    paragraph.append(link);
  } else {
    if (name) paragraph.append(element("span", "a2a-file-name", name), ": ");
    paragraph.append(element("code", "a2a-unlinked-url", part.url));
  }
  return paragraph;
}

/** The task the page follows: its rows, its answer, where its stream got to. */
class Session {
  constructor() {
    this.taskId = null;
    this.contextId = null;
    this.state = null;
    this.timeline = new Timeline();
    /** toolCallId -> the row's elements: one row per invocation, never two. */
    this.rows = new Map();
    /** artifactId -> {name, parts}: the answer artifacts. */
    this.artifacts = new Map();
    this.lastEventId = "";
    /** The open stream's AbortController, or null. */
    this.stream = null;
    /** A terminal or interrupted state arrived: the server closes the stream after it. */
    this.streamOver = false;
    /** A terminal state arrived. */
    this.ended = false;
    /** When it arrived (caller's clock): a call left running stops counting there. */
    this.endedAt = null;
    this.reconciled = false;
    this.question = null;
    this.hasRequest = false;
  }
}

/**
 * The CSRF header for the widget's endpoint: the endpoint checks it for callers its session
 * cookie identifies (a logged-in user, or an anonymous visitor's session). Sent to this site's
 * own origin only: another site's endpoint has no use for this site's token.
 */
function csrfHeaders(root) {
  const token = (root.dataset.csrfToken || "").trim();
  if (!token || !root.dataset.endpoint) return {};
  let endpoint;
  try {
    endpoint = new URL(root.dataset.endpoint, document.baseURI);
  } catch {
    return {}; // no URL at all: the client's calls fail and say so
  }
  return endpoint.origin === window.location.origin ? { "X-CSRFToken": token } : {};
}

export class LiveTimeline {
  /**
   * @param {HTMLElement} root the `[data-a2a-live]` element (attributes: `data-endpoint`,
   *   optional `data-task` to follow an existing task, `data-csrf-token` for the endpoint)
   * @param {{client?: A2AClient}} [options]
   */
  constructor(root, { client } = {}) {
    this.root = root;
    this.client =
      client ?? new A2AClient(root.dataset.endpoint, { headers: csrfHeaders(root) });
    this.parts = {};
    for (const role of ROLES) {
      const node = root.querySelector(`[data-role="${role}"]`);
      if (node === null) {
        throw new Error(
          `a2a live timeline: the widget has no [data-role="${role}"] element; ` +
            "include a2a_toolcall/widget.html or copy its markup",
        );
      }
      this.parts[role] = node;
    }
    for (const role of OPTIONAL_ROLES) {
      this.parts[role] = root.querySelector(`[data-role="${role}"]`);
    }
    this.session = null;
    this.ticker = null;
    this.parts.ask.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = this.parts.message.value.trim();
      if (!text) return;
      this.parts.message.value = "";
      this.send(text);
    });
    this.parts.question.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = this.parts.reply.value.trim();
      if (text) this.answer(text);
    });
    this.parts.cancel.addEventListener("click", () => this.cancel());
  }

  /** Follow the task named by `data-task`, if any. */
  start() {
    const taskId = (this.root.dataset.task || "").trim();
    if (taskId) this.attach(taskId);
  }

  // --- the three ways to start following a task ----------------------------------------------

  /** Send `text` as a new task and follow its stream. */
  async send(text) {
    const session = this.#newSession();
    session.hasRequest = true;
    this.#say("You", text);
    this.#setNarration("sending");
    await this.#follow(session, {
      open: (signal) => this.client.sendStreamingMessage(userMessage(text), { signal }),
      subscribes: false,
      trustSnapshot: true,
    });
  }

  /** Follow an existing task (SubscribeToTask; GetTask if it has already ended). */
  async attach(taskId) {
    const session = this.#newSession();
    this.#noteTask(session, taskId, null);
    this.#setNarration("connecting");
    await this.#follow(session, {
      open: (signal) => this.client.subscribeToTask(taskId, { signal }),
      subscribes: true,
      trustSnapshot: true,
    });
  }

  /** Answer the question of the followed task; its stream continues the same timeline. */
  async answer(text) {
    const session = this.session;
    if (session === null || session.taskId === null || session.question === null) return;
    this.#hideQuestion(session);
    this.parts.error.hidden = true;
    this.parts.reply.value = "";
    this.#say("You", text);
    this.#setNarration("sending your answer");
    const message = userMessage(text, { taskId: session.taskId, contextId: session.contextId });
    await this.#follow(session, {
      open: (signal) => this.client.sendStreamingMessage(message, { signal }),
      subscribes: false,
      // The stream starts with the task as it was when the answer arrived (still waiting for
      // input): only the events after it say where the task is now.
      trustSnapshot: false,
    });
  }

  /** Ask the server to cancel the followed task (CancelTask). */
  async cancel() {
    const session = this.session;
    if (session === null || session.taskId === null || session.ended) return;
    this.parts.cancel.disabled = true;
    this.#announce("canceling the task");
    try {
      const task = await this.client.cancelTask(session.taskId);
      if (session === this.session) this.#applyTask(session, task, { status: true });
    } catch (error) {
      if (session !== this.session) return;
      if (error instanceof JSONRPCError && error.code === TASK_NOT_CANCELABLE) {
        this.#showError(`The task could not be canceled: ${error.message}`);
      } else {
        this.#showError(this.#describe(error));
      }
    } finally {
      this.parts.cancel.disabled = false;
      this.#renderControls();
    }
  }

  // --- streams and reconnecting --------------------------------------------------------------

  async #follow(session, { open, subscribes, trustSnapshot }) {
    session.streamOver = false;
    let failures = 0;
    let reconnecting = false;
    for (;;) {
      let broke = null;
      const controller = new AbortController();
      session.stream = controller;
      this.#renderControls();
      try {
        for await (const { id, result } of open(controller.signal)) {
          if (session !== this.session) return;
          if (reconnecting) {
            reconnecting = false;
            this.#announce("reconnected");
          }
          if (id) {
            session.lastEventId = id;
            this.root.dataset.lastEventId = id;
            failures = 0;
          }
          this.#apply(session, result, trustSnapshot);
          if (session.streamOver) break;
        }
      } catch (error) {
        if (session !== this.session || controller.signal.aborted) return;
        if (
          subscribes &&
          error instanceof JSONRPCError &&
          error.code === UNSUPPORTED_OPERATION &&
          session.taskId !== null
        ) {
          // Subscribing to a task that has ended: its final state is in GetTask.
          await this.#loadFinal(session);
          return;
        }
        const retry =
          error instanceof ConnectionLost ||
          (error instanceof HTTPError && RETRY_HTTP_STATUSES.has(error.status));
        if (!retry) {
          this.#fail(session, error);
          return;
        }
        broke = error;
      } finally {
        if (session.stream === controller) session.stream = null;
        this.#renderControls();
      }
      if (session !== this.session || session.streamOver || controller.signal.aborted) return;
      // The stream ended, or broke, before a terminal or interrupted state: the server (or
      // something between it and us) closed it. Resubscribe from the last event seen.
      if (session.taskId === null) {
        // Nothing to resubscribe to: the server never named the task.
        this.#fail(session, broke ?? new ConnectionLost("the stream ended before the task started"));
        return;
      }
      if (failures >= RECONNECT_DELAYS_MS.length) {
        this.#fail(
          session,
          new ConnectionLost(
            `the stream was lost ${failures} times in a row; reload the page to follow the task`,
          ),
        );
        return;
      }
      const delay = RECONNECT_DELAYS_MS[failures];
      failures += 1;
      reconnecting = true;
      this.#announce("connection lost, reconnecting");
      this.#setNarration(`connection lost; reconnecting (attempt ${failures})`);
      await sleep(delay);
      if (session !== this.session || session.ended) return;
      const lastEventId = session.lastEventId || undefined;
      open = (signal) => this.client.subscribeToTask(session.taskId, { lastEventId, signal });
      subscribes = true;
      // The replay after Last-Event-ID carries the states; the snapshot before it may be ahead
      // of the events replayed, so only its tool summary and answer are taken.
      trustSnapshot = false;
    }
  }

  async #loadFinal(session) {
    try {
      const task = await this.client.getTask(session.taskId);
      if (session !== this.session) return;
      session.reconciled = true;
      this.#applyTask(session, task, { status: true, quiet: true });
      const calls = [...session.timeline];
      const cancelled = calls.filter((c) => c.isCancelled).length;
      const failed = calls.filter((c) => c.state === FAILED).length - cancelled;
      this.#announce(
        `task ${stateLabel(session.state)}: ${calls.length} tool call` +
          `${calls.length === 1 ? "" : "s"}, ${failed} failed` +
          (cancelled ? `, ${cancelled} cancelled` : ""),
      );
    } catch (error) {
      if (session === this.session) this.#fail(session, error);
    }
  }

  /** After the end, take the server's durations (and anything a dropped stream missed). */
  async #reconcile(session) {
    if (session.reconciled) return;
    session.reconciled = true;
    try {
      const task = await this.client.getTask(session.taskId, { historyLength: 0 });
      if (session === this.session) this.#applyTask(session, task, { status: false, quiet: true });
    } catch (error) {
      // The page already shows the outcome; only the durations stay the browser's measure.
      console.warn("a2a live timeline: could not reload the finished task", error);
    }
  }

  // --- applying events -----------------------------------------------------------------------

  #apply(session, result, trustSnapshot) {
    if (result?.task) {
      this.#applyTask(session, result.task, { status: trustSnapshot });
    } else if (result?.statusUpdate) {
      const update = result.statusUpdate;
      this.#noteTask(session, update.taskId, update.contextId);
      this.#applyStatus(session, update.status, { metadata: update.metadata });
    } else if (result?.artifactUpdate) {
      const update = result.artifactUpdate;
      this.#noteTask(session, update.taskId, update.contextId);
      this.#applyArtifact(session, update.artifact, update.append === true, {});
    } else if (result?.message) {
      // A direct reply, with no task: the answer is the message.
      this.#keepArtifact(session, {
        artifactId: "message",
        name: "answer",
        parts: result.message.parts ?? [],
      });
      session.streamOver = session.ended = true;
      this.#setNarration("");
    }
  }

  #applyTask(session, task, { status, quiet = false }) {
    this.#noteTask(session, task.id, task.contextId);
    if (!session.hasRequest && Array.isArray(task.history)) {
      const request = task.history.find((m) => m?.role === "ROLE_USER");
      if (request) {
        session.hasRequest = true;
        this.#say("You", textOf(request));
      }
    }
    for (const entry of toolCallSummary(task)) {
      this.#track(session, session.timeline.merge(entry), { quiet });
    }
    for (const artifact of task.artifacts ?? []) {
      this.#applyArtifact(session, artifact, false, { quiet });
    }
    if (status && task.status) this.#applyStatus(session, task.status, { quiet });
  }

  #applyStatus(session, status, { quiet = false, metadata = null }) {
    const state = status?.state;
    if (!state) return;
    const text = textOf(status.message);
    const changed = state !== session.state;
    session.state = state;
    this.root.dataset.state = stateLabel(state);
    this.parts.state.textContent = stateLabel(state);
    if (state === "TASK_STATE_INPUT_REQUIRED") {
      session.streamOver = true;
      this.#setNarration("");
      const question = text || "The agent needs more input.";
      if (session.question !== question) this.#ask(session, question);
    } else if (state === "TASK_STATE_AUTH_REQUIRED") {
      session.streamOver = true;
      this.#setNarration(text || "the agent needs authorization, which this page cannot give");
      if (changed) this.#announce("task needs authorization");
    } else if (!isTerminal(state)) {
      if (session.question !== null) this.#hideQuestion(session);
      if (text) this.#setNarration(text);
      const percent = percentOf(metadata);
      if (percent !== null) this.#setProgress(percent);
    }
    if (isTerminal(state) && !session.ended) {
      session.ended = session.streamOver = true;
      session.endedAt = performance.now();
      session.stream?.abort();
      this.#hideQuestion(session);
      this.#setNarration("");
      this.#setProgress(null);
      if (state === "TASK_STATE_COMPLETED") {
        // A direct reply comes as the completed status's message, with no answer artifact.
        if (session.artifacts.size === 0 && text) {
          this.#keepArtifact(session, { artifactId: "status", name: "answer", parts: [{ text }] });
        }
      } else if (text) {
        this.parts.outcome.textContent = `Task ${stateLabel(state)}: ${text}`;
        this.parts.outcome.hidden = false;
      }
      for (const call of session.timeline) this.#renderRow(session, call);
      this.#stopTicker();
      if (!quiet) this.#announce(`task ${stateLabel(state)}`);
      this.#reconcile(session);
    }
    this.#renderControls();
  }

  #applyArtifact(session, artifact, append, { quiet = false }) {
    if (!artifact) return;
    const frame = parseToolCall(artifact.parts);
    if (frame !== null) {
      this.#track(session, session.timeline.feed(frame, performance.now()), { quiet });
    } else {
      this.#keepArtifact(session, artifact, append);
    }
  }

  #keepArtifact(session, artifact, append = false) {
    const id = artifact.artifactId ?? `artifact-${session.artifacts.size}`;
    const parts = Array.isArray(artifact.parts) ? artifact.parts : [];
    const kept = session.artifacts.get(id);
    if (append && kept) kept.parts.push(...parts);
    else session.artifacts.set(id, { name: artifact.name ?? "", parts: [...parts] });
    this.#renderAnswer(session);
  }

  #noteTask(session, taskId, contextId) {
    if (taskId && session.taskId === null) {
      session.taskId = taskId;
      this.root.dataset.taskId = taskId;
      const link = this.parts["task-link"];
      const url = new URL(window.location.href);
      url.search = new URLSearchParams({ task: taskId }).toString();
      url.hash = "";
      link.querySelector("a").href = url.toString();
      link.querySelector("code").textContent = taskId;
      link.hidden = false;
      if ("updateUrl" in this.root.dataset) {
        // The page's own address names the task too, so a reload follows it (LiveView reads
        // `?task=`); replaced, not pushed: Back leaves the page rather than the task.
        const address = new URL(window.location.href);
        if (address.searchParams.get("task") !== taskId) {
          address.searchParams.set("task", taskId);
          window.history.replaceState(window.history.state, "", address);
        }
      }
    }
    if (contextId && session.contextId === null) session.contextId = contextId;
  }

  // --- rendering -----------------------------------------------------------------------------

  #newSession() {
    if (this.session?.stream) this.session.stream.abort();
    this.#stopTicker();
    const session = new Session();
    this.session = session;
    for (const role of ["timeline", "dialogue", "answer-body", "announcer"]) {
      this.parts[role].replaceChildren();
    }
    for (const role of ["answer", "outcome", "error", "question", "task-link"]) {
      this.parts[role].hidden = true;
    }
    this.parts.state.textContent = "starting";
    this.#setProgress(null);
    for (const key of ["taskId", "state", "lastEventId", "lost"]) delete this.root.dataset[key];
    return session;
  }

  #track(session, change, { quiet = false }) {
    if (change === null) return;
    const { call, isNew, finished } = change;
    this.#renderRow(session, call);
    if (!quiet) {
      if (finished) this.#announce(`${call.name} ${ROW_LABELS[this.#viewState(session, call)]}`);
      else if (isNew) this.#announce(`${call.name} ${ROW_LABELS[PENDING]}`);
    }
    if (!session.ended && !call.isFinished && call.startedAt !== null) this.#startTicker();
  }

  #viewState(session, call) {
    if (call.state === PENDING && session.ended) return "unfinished";
    // Stopped with its task (a cancel, a time budget, a shutdown): not a failure of the tool.
    if (call.isCancelled) return "cancelled";
    return call.state;
  }

  /** A call's duration: still counting while it runs, stopped where the task ended. */
  #duration(session, call) {
    return formatDuration(call.durationMs(session.endedAt ?? performance.now()));
  }

  #renderRow(session, call) {
    let row = session.rows.get(call.toolCallId);
    if (row === undefined) {
      row = this.#makeRow(call);
      session.rows.set(call.toolCallId, row);
      this.parts.timeline.append(row.item);
    }
    const state = this.#viewState(session, call);
    row.item.dataset.state = state;
    row.label.textContent = ROW_LABELS[state];
    row.duration.textContent = this.#duration(session, call);
    // The row counts on the browser's clock; the server's own measure, once known, on hover.
    row.duration.title =
      call.serverDurationMs === null
        ? ""
        : `measured by the server: ${formatDuration(call.serverDurationMs)}`;
    row.args.textContent = pretty(call.args);
    if (call.state === FAILED) {
      row.summary.textContent = "args and error";
      row.outcomeLabel.textContent = "Error";
      row.outcome.textContent = call.error ?? "(no message)";
      // A cancelled row's label already says "cancelled": only a reason is worth a preview.
      const error = call.isCancelled ? call.error.slice(CANCELLED_ERROR.length + 2) : call.error;
      row.preview.textContent = oneLine(error ?? "(no message)");
    } else {
      row.summary.textContent = "args and result";
      row.outcomeLabel.textContent = "Result";
      row.outcome.textContent =
        call.state === COMPLETED ? pretty(call.result) : `(${ROW_LABELS[state]})`;
      row.preview.textContent = call.state === COMPLETED ? oneLine(call.result ?? "(none)") : "";
    }
  }

  #makeRow(call) {
    const item = element("li", "a2a-call");
    item.dataset.toolCallId = call.toolCallId;
    item.dataset.name = call.name;
    const line = element("div", "a2a-call-line");
    const icon = element("span", "a2a-icon");
    icon.setAttribute("aria-hidden", "true");
    const name = element("span", "a2a-call-name", call.name);
    name.title = `${call.name} (${call.toolCallId})`;
    const label = element("span", "a2a-call-state");
    const preview = element("span", "a2a-call-preview");
    const duration = element("span", "a2a-call-duration");
    line.append(icon, name, label, preview, duration);
    const details = element("details", "a2a-call-details");
    // The full value is one click away: on the preview (the summary is the keyboard's way).
    preview.addEventListener("click", () => {
      details.open = !details.open;
    });
    const summary = element("summary");
    const args = element("pre", "a2a-args");
    const outcomeLabel = element("p", "a2a-io-label");
    const outcome = element("pre", "a2a-outcome");
    details.append(summary, element("p", "a2a-io-label", "Arguments"), args, outcomeLabel, outcome);
    item.append(line, details);
    return { item, label, preview, duration, summary, args, outcomeLabel, outcome };
  }

  #renderAnswer(session) {
    const body = this.parts["answer-body"];
    body.replaceChildren();
    for (const { parts } of session.artifacts.values()) {
      for (const part of parts) {
        if (typeof part?.text === "string") {
          body.append(element("p", "a2a-answer-text", part.text));
        } else if (part && "data" in part) {
          body.append(element("pre", "a2a-answer-data", pretty(part.data)));
        } else if (typeof part?.url === "string") {
          body.append(filePart(part));
        } else if (part && "raw" in part) {
          body.append(element("p", "", `(a file${part.filename ? `: ${part.filename}` : ""})`));
        }
      }
    }
    this.parts.answer.hidden = body.childElementCount === 0;
  }

  #ask(session, question) {
    session.question = question;
    this.#say("Agent asks", question);
    this.parts["question-text"].textContent = question;
    this.parts.question.hidden = false;
    this.#announce(`input required: ${question}`);
    this.parts.reply.focus();
  }

  #hideQuestion(session) {
    session.question = null;
    this.parts.question.hidden = true;
  }

  #say(who, text) {
    const line = element("p", "a2a-said");
    line.append(element("strong", "", `${who}: `), document.createTextNode(text));
    this.parts.dialogue.append(line);
  }

  #setNarration(text) {
    this.parts.narration.textContent = text;
  }

  /** Show the agent's percent done (null hides the bar). */
  #setProgress(percent) {
    const progress = this.parts.progress;
    if (!progress) return;
    const bar = progress.querySelector("progress");
    if (percent === null) {
      progress.hidden = true;
      bar?.removeAttribute("value");
      return;
    }
    const shown = `${Math.round(percent)}%`;
    if (bar) {
      bar.value = percent;
      bar.textContent = shown;
    }
    const label = progress.querySelector("[data-percent]");
    if (label) label.textContent = shown;
    progress.hidden = false;
  }

  #renderControls() {
    const session = this.session;
    const streaming = session?.stream != null;
    this.parts.send.disabled = streaming;
    this.parts.cancel.hidden = !(session && session.taskId !== null && !session.ended);
    if (streaming) this.root.dataset.streaming = "true";
    else delete this.root.dataset.streaming;
  }

  #announce(text) {
    const announcer = this.parts.announcer;
    announcer.append(element("p", "", text));
    while (announcer.childElementCount > MAX_ANNOUNCEMENTS) announcer.firstElementChild.remove();
  }

  #describe(error) {
    if (error instanceof JSONRPCError) return `Error ${error.code}: ${error.message}`;
    if (error instanceof HTTPError) return error.message;
    if (error instanceof ConnectionLost) return `Connection lost: ${error.message}`;
    console.error(error);
    return `Unexpected error: ${error?.message ?? error}`;
  }

  #showError(text) {
    this.parts.error.textContent = text;
    this.parts.error.hidden = false;
  }

  #fail(session, error) {
    this.#showError(this.#describe(error));
    // The page has stopped listening: spinners would claim progress it no longer sees.
    this.root.dataset.lost = "true";
    this.#setNarration("");
    this.#stopTicker();
    this.#renderControls();
  }

  #startTicker() {
    if (this.ticker !== null) return;
    this.ticker = setInterval(() => {
      const session = this.session;
      const running = session && !session.ended ? session.timeline.pending : [];
      if (running.length === 0) {
        this.#stopTicker();
        return;
      }
      // Only the elapsed time changes: the rest of a running row (maybe open) stays as it is.
      for (const call of running) {
        const row = session.rows.get(call.toolCallId);
        if (row) row.duration.textContent = this.#duration(session, call);
      }
    }, TICK_MS);
  }

  #stopTicker() {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
  }
}

for (const root of document.querySelectorAll("[data-a2a-live]")) {
  root.querySelector("[data-role=static-missing]")?.remove(); // the script did load
  try {
    new LiveTimeline(root).start();
  } catch (error) {
    console.error(error); // e.g. markup missing a part: the other widgets still start
  }
}
