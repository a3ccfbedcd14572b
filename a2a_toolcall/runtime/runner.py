"""The runtime: takes work requests off the bus, runs agents, publishes what they do.

For each request the runtime subscribes to the task's control topics (cancel, input answers)
*before* publishing anything, publishes an immediate ``thinking`` narration, then drives the
agent: narration per tool turn, one toolframe per frame, input requests, and exactly one
response, after which nothing more is published for that task.

Cancel stops the agent for real: its asyncio task is cancelled where it is parked (tools it
runs are cancelled with it), every invocation still open gets a ``failed`` frame with error
"cancelled", and the response says canceled. A time budget (``TASK_TIME_LIMIT``, counting only
time not spent waiting for the user) is enforced the same way.

Work requests look like::

    {"cid": "<task id>", "agent": "<name or null>", "contextId": "...",
     "message": {<A2A 1.0 Message>}, "history": [<Message>...], "metadata": {...}}
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import socket
import uuid
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from pydantic import ValidationError

from a2a_toolcall.aio import Flag
from a2a_toolcall.bus import (
    CONTROL_TOPICS,
    TOPIC_ARTIFACT,
    TOPIC_CANCEL,
    TOPIC_INPUT_REQUEST,
    TOPIC_INPUT_RESPONSE,
    TOPIC_PROGRESS,
    TOPIC_RESEND,
    TOPIC_RESPONSE,
    TOPIC_TOOLFRAME,
    Bus,
    Envelope,
    Subscription,
    TaskPublisher,
    first_seq,
    group_name,
)
from a2a_toolcall.contract import (
    CANCELLED_ERROR,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallParseError,
    ToolCallStarted,
    frame_from_wire,
)
from a2a_toolcall.lifecycle import log_transition
from a2a_toolcall.protocol.models import Message, Part
from a2a_toolcall.runtime.events import (
    Agent,
    AgentError,
    AgentInput,
    AgentRejected,
    ArtifactUpdate,
    InputRequest,
    Progress,
    Reply,
    Resume,
    ToolCall,
    ToolResult,
    UserAnswer,
    is_retry_safe,
)
from a2a_toolcall.runtime.limits import bound, bound_text, jsonable
from a2a_toolcall.runtime.narration import Humanizer, humanize

__all__ = [
    "CANCELLED",
    "THINKING",
    "Runtime",
    "build_request",
    "ensure_in_process_runtime",
    "runs_in_process",
]

logger = logging.getLogger(__name__)

THINKING: Final = "thinking"
"""The narration published the instant a task starts, before the agent yields anything."""

CANCELLED: Final = CANCELLED_ERROR
"""The error of a tool invocation still open when its task is cancelled (the contract's rule)."""

SERVE_RETRY_DELAY: Final = 1.0
"""Seconds the runtime waits after the bus failed to hand it work, before it asks again."""

StopKind = Literal["cancel", "timeout", "shutdown", "park"]
Frame = ToolCallStarted | ToolCallCompleted | ToolCallFailed


def build_request(
    cid: str,
    message: Message,
    *,
    agent: str | None = None,
    context_id: str | None = None,
    history: Sequence[Message] = (),
    metadata: Mapping[str, Any] | None = None,
    attempt: int = 1,
    resume: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The work request the server sends for a task (msgpack-safe).

    ``attempt``: which run of the task (a retry or a resume is a new one, claimed anew);
    ``resume``: for a task resumed from its checkpoint, ``{"checkpoint", "question", "text",
    "parts", "message"}`` (the answer as the user sent it)."""
    group_name(TOPIC_RESPONSE, cid)  # fail early on a task id the bus cannot carry
    request: dict[str, Any] = {
        "cid": cid,
        "agent": agent,
        "contextId": context_id,
        "message": message.to_wire(),
        "history": [m.to_wire() for m in history],
        "metadata": dict(metadata or {}),
    }
    if attempt != 1:
        request["attempt"] = attempt
    if resume is not None:
        request["resume"] = dict(resume)
    return request


def _jsonable(value: Any) -> Any:
    # Tool args and results reach the wire as JSON: tuples become lists, datetimes ISO text,
    # anything else unknown its str().
    return jsonable(value)


class Claims(Protocol):
    """Where a runtime claims its tasks and keeps them (the task store's
    :class:`~a2a_toolcall.store.StoreClaims`): what makes each task run once, never after a
    cancel, and lets other processes see when its runtime is gone."""

    async def claim(self, cid: str, runtime_id: str, attempt: int) -> bool:
        """Take task ``cid`` for run ``attempt``: True for exactly one runtime. (A class
        whose claim also stores a submitted task as working says so with a true
        ``marks_working`` attribute: its recorder then shows it working without a write.)"""
        ...

    async def renew(self, runtime_id: str, ids: Sequence[str]) -> set[str]:
        """Renew the leases on ``ids``; the ids still held."""
        ...

    async def waiting(self, limit: int) -> list[dict[str, Any]]:
        """Work requests of up to ``limit`` tasks waiting for a runtime."""
        ...


class _Stopped(Exception):
    def __init__(self, kind: StopKind, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(slots=True)
class _AwaitInput:
    request: InputRequest


@dataclass(slots=True)
class _Done:
    response: dict[str, Any]


class _TaskRun:
    """One task being run: its publisher, open invocations, pending questions."""

    __slots__ = (
        "agent",
        "asking",
        "cid",
        "driver",
        "finished",
        "open_calls",
        "publisher",
        "questions",
        "resends",
        "responded",
        "runtime",
        "stop",
        "task",
    )

    def __init__(self, runtime: Runtime, cid: str, agent: Agent, task: AgentInput) -> None:
        self.runtime = runtime
        self.cid = cid
        self.agent = agent
        self.task = task
        self.publisher: TaskPublisher = runtime.bus.publisher(
            cid, first_seq=first_seq(task.attempt)
        )
        self.open_calls: dict[str, str] = {}  # toolCallId -> name
        self.questions: dict[str, asyncio.Future[UserAnswer]] = {}
        self.stop: _Stopped | None = None
        self.driver: asyncio.Task[dict[str, Any]] | None = None
        self.responded = False
        self.finished = Flag()  # a consumer confirmed it has every envelope
        self.resends: set[asyncio.Task[Any]] = set()
        self.asking: InputRequest | None = None

    # --- lifecycle --------------------------------------------------------------------------

    async def execute(self) -> dict[str, Any]:
        # On the app's in-memory layer the control messages are handed to _on_control as they
        # arrive (no task waits for them); elsewhere a watcher task reads them.
        control = self.runtime.bus.subscribe(self.cid, CONTROL_TOPICS, on_envelope=self._control)
        await control.__aenter__()
        watcher: asyncio.Task[None] | None = None
        try:
            # Subscribed first: a cancel or a resend request sent after this line is heard.
            await self.publisher.publish(
                TOPIC_PROGRESS,
                {
                    "text": THINKING,
                    # Who runs it, for the recorder (its lifecycle log, a retry's decision).
                    "runtime": {
                        "id": self.runtime.runtime_id,
                        "attempt": self.task.attempt,
                        "retrySafe": is_retry_safe(self.agent),
                        # Its claim stored the task as working: the recorder need not.
                        "workingStored": self.runtime.marks_working,
                    },
                },
            )
            self.driver = asyncio.ensure_future(self._drive())
            if not control.calls_back:
                watcher = asyncio.ensure_future(self._watch(control))
            try:
                response = await self.driver
            except asyncio.CancelledError:
                if self.stop is None:
                    raise
                response = self._stopped_response(self.stop)
            await self._close_open_calls(response)
            await self.publisher.publish(TOPIC_RESPONSE, response)
            await self.publisher.flush()
            self.responded = True
        except BaseException:
            await self._release(control, watcher)
            raise
        # Keep answering resend requests until the consumer confirms it has everything.
        self.runtime._linger(self, control, watcher)
        return response

    async def linger(self, seconds: float) -> None:
        """Wait until a consumer says it has every envelope, or ``seconds`` pass."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.finished.wait()

    async def _release(self, control: Subscription, watcher: asyncio.Task[None] | None) -> None:
        self.publisher.close()  # no longer speaks for a runtime at work on the task
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        if self.resends:
            await asyncio.gather(*self.resends, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.publisher.flush()
        await control.aclose()

    def request_stop(self, kind: StopKind, reason: str) -> None:
        """Stop the agent where it is parked (cancel, time budget, shutdown)."""
        if self.responded or self.stop is not None:
            return
        self.stop = _Stopped(kind, reason)
        if self.driver is not None and not self.driver.done():
            self.driver.cancel(reason)

    @staticmethod
    def _stopped_response(stop: _Stopped) -> dict[str, Any]:
        if stop.kind == "cancel":
            return {"status": "canceled", "reason": stop.reason}
        if stop.kind == "park":
            return {"status": "parked", "reason": stop.reason}
        return {"status": "failed", "error": stop.reason}

    @property
    def parkable(self) -> bool:
        """Waiting for the user's answer to a question that came with a checkpoint: the task
        can be left to resume elsewhere rather than waited for or failed."""
        return self.asking is not None and self.asking.checkpoint is not None

    async def _close_open_calls(self, response: dict[str, Any]) -> None:
        if not self.open_calls or response["status"] == "parked":
            # Parked: a call open across the question (a tool that asked) goes on with the resume.
            return
        if response["status"] == "canceled":
            error = CANCELLED
        elif self.stop is not None:
            error = f"{CANCELLED}: {self.stop.reason}"
        elif response["status"] == "failed":
            error = "abandoned: the agent failed before this tool finished"
        else:
            error = "abandoned: the agent replied before this tool finished"
        for call_id, name in list(self.open_calls.items()):
            await self._publish_frame(ToolCallFailed(tool_call_id=call_id, name=name, error=error))

    async def _watch(self, control: Subscription) -> None:
        async for envelope in control:
            self._control(envelope)

    def _control(self, envelope: Envelope) -> None:
        try:
            self._on_control(envelope)
        except Exception:
            logger.exception("task %s: bad control message %.200r", self.cid, envelope)

    def _on_control(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if envelope.topic == TOPIC_CANCEL:
            reason = payload.get("reason")
            self.request_stop(
                "cancel", reason if isinstance(reason, str) and reason else "canceled by the client"
            )
        elif envelope.topic == TOPIC_INPUT_RESPONSE:
            future = self.questions.get(str(payload.get("requestId")))
            if future is None or future.done():
                logger.warning("task %s: an answer to no open question: %.200r", self.cid, payload)
                return
            parts = tuple(
                Part.model_validate(p) for p in payload.get("parts") or () if isinstance(p, dict)
            )
            message = payload.get("message")
            future.set_result(
                UserAnswer(
                    text=str(payload.get("text") or ""),
                    parts=parts,
                    message=Message.model_validate(message) if isinstance(message, dict) else None,
                )
            )
        elif envelope.topic == TOPIC_RESEND:
            if isinstance(payload.get("ack"), int):
                self.publisher.acknowledge(payload["ack"])
            answer: Coroutine[Any, Any, Any] | None = None
            if payload.get("probe") is True:
                answer = self.publisher.sync()
            elif isinstance(payload.get("from"), int):
                answer = self.publisher.resend(payload["from"])
            if answer is not None:
                sending = asyncio.ensure_future(answer)
                self.resends.add(sending)
                sending.add_done_callback(self.resends.discard)
            if payload.get("done"):
                self.finished.set()

    # --- driving the agent ------------------------------------------------------------------

    async def _drive(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        try:
            stream = self.agent(self.task)
        except Exception as exc:
            return self._failure(exc)
        asend = getattr(stream, "asend", None)
        to_send: Any = None
        # One deadline for the whole run (not a timer per event), held while the agent waits
        # for the user's answer: only time spent working counts against the budget.
        deadline = asyncio.timeout(self.runtime.time_limit)
        try:
            try:
                async with deadline:
                    while True:
                        if to_send is not None and asend is None:
                            raise AgentError(
                                "this agent is an async iterator without asend(); it cannot "
                                "receive tool results or answers (write it as an async generator)"
                            )
                        event = await (asend(to_send) if asend is not None else anext(stream))
                        to_send = None
                        outcome = await self._handle(event)
                        if isinstance(outcome, _Done):
                            return outcome.response
                        if isinstance(outcome, _AwaitInput):
                            when = deadline.when()
                            left = None if when is None else when - loop.time()
                            deadline.reschedule(None)
                            to_send = await self._ask(outcome.request)
                            deadline.reschedule(None if left is None else loop.time() + left)
                        else:
                            to_send = outcome
            except TimeoutError:
                if not deadline.expired():
                    raise  # the agent's own TimeoutError: a failure like any other
                self.stop = _Stopped(
                    "timeout",
                    f"the agent exceeded its time budget of {self.runtime.time_limit:g} s "
                    "and was stopped",
                )
                return self._stopped_response(self.stop)
        except StopAsyncIteration:
            return {"status": "failed", "error": "the agent finished without a reply"}
        except Exception as exc:
            return self._failure(exc)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(BaseException):
                    await aclose()

    def _failure(self, exc: Exception) -> dict[str, Any]:
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]  # a TaskGroup of tools wraps what went wrong
        if isinstance(exc, AgentError):
            return {"status": "failed", "error": self._text(str(exc) or "the agent failed")}
        if isinstance(exc, AgentRejected):
            reason = str(exc) or "the agent rejected the task"
            return {"status": "rejected", "reason": self._text(reason)}
        logger.exception("task %s: the agent raised", self.cid)
        error = f"the agent failed: {type(exc).__name__}: {exc}"
        return {"status": "failed", "error": self._text(error)}

    async def _handle(self, event: Any) -> Any:
        if isinstance(event, Reply):
            return _Done(self._reply(event))
        if isinstance(event, Progress):
            await self._publish_progress(event)
            return None
        if isinstance(event, ToolCall):
            return (await self._run_tools([event]))[0]
        if isinstance(event, InputRequest):
            return _AwaitInput(event)
        if isinstance(event, ArtifactUpdate):
            await self._publish_artifact(event)
            return None
        if (
            isinstance(event, list | tuple)
            and event
            and all(isinstance(e, ToolCall) for e in event)
        ):
            return await self._run_tools(list(event))
        frames = self._as_frames(event)
        if frames is not None:
            await self._publish_turn(frames)
            return None
        raise AgentError(
            f"the agent yielded {type(event).__name__}, which is not an event (Progress, "
            "ToolCall, a tool-call frame, ArtifactUpdate, InputRequest or Reply)"
        )

    @staticmethod
    def _as_frames(event: Any) -> list[Frame] | None:
        items = event if isinstance(event, list | tuple) else [event]
        if not items:
            return None
        try:
            return [frame_from_wire(item) for item in items]
        except ToolCallParseError as exc:
            if any(isinstance(i, dict) and "phase" in i for i in items):
                raise AgentError(f"the agent yielded an invalid tool-call frame: {exc}") from None
            return None

    def _reply(self, reply: Reply) -> dict[str, Any]:
        parts = [self._part(p) for p in reply.parts]
        parts += [Part(data=_jsonable(value)).to_wire() for value in reply.data]
        response: dict[str, Any] = {"status": "completed"}
        if reply.text is not None:
            response["text"] = self._text(reply.text)
        if parts:
            response["parts"] = parts
        if reply.as_message:
            response["asMessage"] = True
        return response

    async def _ask(self, request: InputRequest) -> UserAnswer:
        request_id = uuid.uuid4().hex
        future: asyncio.Future[UserAnswer] = asyncio.get_running_loop().create_future()
        self.questions[request_id] = future
        payload: dict[str, Any] = {
            "requestId": request_id,
            "question": self._text(request.question),
        }
        if request.meta:
            payload["meta"] = _jsonable(request.meta)
        if request.checkpoint is not None:
            payload["checkpoint"] = _jsonable(request.checkpoint)
        try:
            await self.publisher.publish(TOPIC_INPUT_REQUEST, payload)
            self.asking = request
            return await future
        finally:
            self.asking = None
            del self.questions[request_id]

    # --- publishing -------------------------------------------------------------------------

    def _text(self, text: Any) -> str:
        """Agent text (narration, a question, an answer, an error) as valid Unicode, capped at
        ``TEXT_VALUE_LIMIT`` with the truncation marker."""
        return bound_text(text, self.runtime.text_limit)

    def _part(self, part: Any) -> dict[str, Any]:
        """An agent's part (a Part or its JSON) made safe for the wire: its text capped, its data
        and metadata JSON (see runtime/limits.py); a part that is not one becomes a marked text
        part, not a failed task."""
        try:
            if isinstance(part, Part):
                wire = part.to_wire()
            elif isinstance(part, Mapping):
                wire = dict(part)
            else:
                raise ValueError(f"a part is an object, not {type(part).__name__}")
            if isinstance(wire.get("text"), str):
                wire["text"] = self._text(wire["text"])
            for key in ("data", "metadata"):
                if key in wire:
                    wire[key] = _jsonable(wire[key])
            return Part.model_validate(wire).to_wire()
        except (ValidationError, ValueError, TypeError) as exc:
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Part(text=self._text(f"[not a valid part: {problem}]")).to_wire()

    async def _publish_progress(self, progress: Progress) -> None:
        payload: dict[str, Any] = {"text": self._text(progress.text)}
        if progress.step is not None:
            payload["step"] = progress.step
        if progress.percent is not None:
            payload["percent"] = progress.percent
        if progress.meta:
            payload["meta"] = _jsonable(progress.meta)
        await self.publisher.publish(TOPIC_PROGRESS, payload)

    async def _publish_artifact(self, update: ArtifactUpdate) -> None:
        artifact: dict[str, Any] = {
            "artifactId": update.artifact_id or uuid.uuid4().hex,
            "parts": [self._part(p) for p in update.parts],
        }
        for key, value in (
            ("name", update.name),
            ("description", update.description),
            ("metadata", update.metadata),
        ):
            if value is not None:
                artifact[key] = _jsonable(value)
        await self.publisher.publish(
            TOPIC_ARTIFACT,
            {"artifact": artifact, "append": update.append, "lastChunk": update.last_chunk},
        )

    async def _narrate(self, calls: Sequence[tuple[str, Any]]) -> None:
        try:
            text = self.runtime.humanizer(calls)
        except Exception:
            logger.exception("the narration humanizer failed; using the built-in one")
            text = humanize(calls)
        if text:
            await self.publisher.publish(TOPIC_PROGRESS, {"text": text})

    async def _publish_turn(self, frames: list[Frame]) -> None:
        starts = [(f.name, f.args) for f in frames if isinstance(f, ToolCallStarted)]
        if starts:
            await self._narrate(starts)
        for frame in frames:
            await self._publish_frame(frame)

    async def _publish_frame(self, frame: Frame) -> None:
        # Track before sending: if the send is interrupted, the invocation is still closed
        # later with a failed frame (clients tolerate an outcome without its start).
        if isinstance(frame, ToolCallStarted):
            self.open_calls[frame.tool_call_id] = frame.name
        else:
            self.open_calls.pop(frame.tool_call_id, None)
        # Publishing only numbers and queues the frame (the publisher sends it in the
        # background): a cancel cannot cut it in half.
        await self.publisher.publish(TOPIC_TOOLFRAME, {"frame": frame.to_wire()})

    async def _run_tools(self, calls: list[ToolCall]) -> list[ToolResult]:
        ids = [call.id or uuid.uuid4().hex for call in calls]
        await self._narrate([(call.name, call.args) for call in calls])
        for call, call_id in zip(calls, ids, strict=True):
            await self._publish_frame(
                ToolCallStarted(
                    tool_call_id=call_id,
                    name=call.name,
                    args=bound(call.args, self.runtime.value_limit),
                )
            )
        async with asyncio.TaskGroup() as group:
            runs = [
                group.create_task(self._run_tool(call, call_id))
                for call, call_id in zip(calls, ids, strict=True)
            ]
        return [run.result() for run in runs]

    async def _run_tool(self, call: ToolCall, call_id: str) -> ToolResult:
        try:
            if call.run is None:
                raise AgentError(f"ToolCall {call.name!r} has no run function")
            value = await _invoke(call.run, call.args)
        except Exception as exc:  # a failing tool fails the invocation, not the task
            error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, AgentError) else str(exc)
            error = self._text(error)
            await self._publish_frame(
                ToolCallFailed(tool_call_id=call_id, name=call.name, error=error)
            )
            return ToolResult(id=call_id, name=call.name, ok=False, error=error)
        await self._publish_frame(
            ToolCallCompleted(
                tool_call_id=call_id, name=call.name, result=bound(value, self.runtime.value_limit)
            )
        )
        return ToolResult(id=call_id, name=call.name, ok=True, value=value)


async def _invoke(run: Callable[..., Any], args: Any) -> Any:
    if isinstance(args, dict):
        call = functools.partial(run, **args)
    else:
        call = functools.partial(run, args)
    if inspect.iscoroutinefunction(run):
        return await call()
    result = await asyncio.to_thread(call)
    if inspect.isawaitable(result):
        return await result
    return result


class Runtime:
    """Runs agents for work requests from the bus, in this process.

    Arguments default to the settings (``AGENTS``, ``DEFAULT_AGENT``, ``TASK_TIME_LIMIT``,
    ``WORKER_CONCURRENCY``, ``HUMANIZER``/``NARRATION_RULES``) and the configured bus.
    """

    def __init__(
        self,
        *,
        bus: Bus | None = None,
        agents: Mapping[str, Agent] | None = None,
        default_agent: str | None = None,
        time_limit: float | None = None,
        concurrency: int | None = None,
        humanizer: Humanizer | None = None,
        retain: float | None = None,
        claims: Claims | None = None,
    ) -> None:
        from a2a_toolcall.conf import get_setting
        from a2a_toolcall.runtime.narration import get_humanizer
        from a2a_toolcall.runtime.registry import load_agents

        self.bus = bus or Bus()
        self.agents: dict[str, Agent] = dict(agents) if agents is not None else load_agents()
        self.default_agent = (
            default_agent or get_setting("DEFAULT_AGENT") or next(iter(self.agents), None)
        )
        self.time_limit = float(time_limit or get_setting("TASK_TIME_LIMIT"))
        self.concurrency = int(concurrency or get_setting("WORKER_CONCURRENCY"))
        self.humanizer = humanizer or get_humanizer()
        self.retain = float(get_setting("RETAIN_AFTER_RESPONSE") if retain is None else retain)
        self.value_limit = int(get_setting("FRAME_VALUE_LIMIT"))
        self.text_limit = int(get_setting("TEXT_VALUE_LIMIT"))
        self._runs: dict[str, _TaskRun] = {}
        self._lingering: set[asyncio.Task[None]] = set()
        self._lingering_ids: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._claiming: set[asyncio.Task[None]] = set()
        """Work requests taken from the bus whose claim is on its way (not yet running)."""
        self._serving: asyncio.Task[None] | None = None
        self.runtime_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """This runtime, as its claims name it."""
        self._claims = claims
        self.held: set[str] = set()
        """Tasks claimed in the task store and not yet ended here: their leases are renewed."""
        self._slots: asyncio.Semaphore | None = None

    @property
    def marks_working(self) -> bool:
        """Whether this runtime's claims store a submitted task as working (the task store's
        do): its recorder then hands the working status out without writing it first."""
        return self._claims is not None and getattr(self._claims, "marks_working", False) is True

    @property
    def uses_store(self) -> bool:
        """Whether tasks are claimed in the task store (with leases), not only on the bus."""
        return self._claims is not None

    async def claim(self, cid: str, attempt: int = 1) -> bool:
        """Claim task ``cid`` (run ``attempt``) before running it: with ``claims`` (the task
        store's atomic claim, which a cancel before pickup wins, and the first lease), else the
        bus's claim against duplicate deliveries."""
        if self._claims is None:
            return await self.bus.claim(cid)
        if not await self._claims.claim(cid, self.runtime_id, attempt):
            return False
        self.held.add(cid)
        log_transition(cid, "claimed", runtime_id=self.runtime_id, attempt=attempt)
        return True

    async def renew_leases(self) -> None:
        """Renew the leases of the tasks held here; stop any this runtime no longer holds (it
        was ended, or taken over, elsewhere: it must not run on)."""
        if not self.held or self._claims is None:
            return
        held = set(self.held)
        kept = await self._claims.renew(self.runtime_id, sorted(held))
        for cid in held - kept:
            self.held.discard(cid)
            run = self._runs.get(cid)
            if run is not None:
                logger.warning(
                    "task %s: no longer held by this runtime (ended or taken over elsewhere); "
                    "stopping it",
                    cid,
                    extra={"task_id": cid},
                )
                run.request_stop("shutdown", "the task was taken from this runtime")

    async def pick_up_waiting(self) -> int:
        """Claim and start tasks waiting in the task store for a runtime (their wake-up on the
        bus was lost, or came before this runtime started), as many as there are free slots;
        how many were started."""
        if self._claims is None or not self.is_serving or self._slots is None:
            return 0
        free = self.concurrency - len(self._tasks)
        if free <= 0:
            return 0
        requests = await self._claims.waiting(free)
        # Claimed all at once, so that they go to the task store together (one transaction for
        # the lot): one after another, a runtime that starts with a burst of tasks waiting
        # took a commit per task before their agents ran.
        won = await asyncio.gather(
            *(self.claim(request["cid"], _attempt(request)) for request in requests),
            return_exceptions=True,
        )
        started = 0
        interrupted: BaseException | None = None
        for request, claimed in zip(requests, won, strict=True):
            if isinstance(claimed, BaseException):
                if not isinstance(claimed, Exception):
                    interrupted = claimed  # after the tasks won are started: they are held
                    continue
                logger.error(
                    "the agent runtime could not claim waiting task %s",
                    request["cid"],
                    exc_info=claimed,
                    extra={"task_id": request["cid"]},
                )
                continue
            if claimed:
                self._spawn(request, slots=self._slots, acquired=False)
                started += 1
        if interrupted is not None:
            raise interrupted
        return started

    # --- one task ---------------------------------------------------------------------------

    async def run(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """Run one work request to its response (which is also published); None if unusable."""
        cid = request.get("cid")
        try:
            if not isinstance(cid, str):
                raise ValueError("no task id")
            group_name(TOPIC_RESPONSE, cid)
        except ValueError:
            logger.error("dropping a work request with an unusable task id: %.200r", request)
            return None
        try:
            return await self._run(cid, request)
        finally:
            if cid not in self._lingering_ids:
                self.held.discard(cid)

    async def _run(self, cid: str, request: Mapping[str, Any]) -> dict[str, Any] | None:
        attempt = _attempt(request)
        try:
            task = AgentInput(
                task_id=cid,
                context_id=request.get("contextId"),
                message=Message.model_validate(request.get("message")),
                history=tuple(Message.model_validate(m) for m in request.get("history") or ()),
                metadata=dict(request.get("metadata") or {}),
                resume=_resume(request.get("resume")),
                attempt=attempt,
            )
        except (ValidationError, TypeError, ValueError) as exc:
            return await self._reject(cid, f"the work request is invalid: {exc}", attempt)
        name = request.get("agent") or self.default_agent
        agent = self.agents.get(name) if isinstance(name, str) else None
        if agent is None:
            known = ", ".join(sorted(self.agents)) or "none"
            return await self._reject(
                cid, f"no agent named {name!r} is registered (registered: {known})", attempt
            )
        run = _TaskRun(self, cid, agent, task)
        self._runs[cid] = run
        try:
            return await run.execute()
        finally:
            self._runs.pop(cid, None)

    def _linger(
        self, run: _TaskRun, control: Subscription, watcher: asyncio.Task[None] | None
    ) -> None:
        # Until the consumer has every envelope the task stays held (its lease renewed): the
        # runtime is still what the task's recording depends on.
        self._lingering_ids.add(run.cid)

        async def linger() -> None:
            try:
                await run.linger(self.retain)
            finally:
                self._lingering_ids.discard(run.cid)
                self.held.discard(run.cid)
                await run._release(control, watcher)

        task = asyncio.ensure_future(linger())
        self._lingering.add(task)
        task.add_done_callback(self._lingering.discard)

    async def _reject(self, cid: str, error: str, attempt: int = 1) -> dict[str, Any]:
        response = {"status": "failed", "error": error}
        publisher = self.bus.publisher(cid, first_seq=first_seq(attempt))
        await publisher.publish(TOPIC_RESPONSE, response)
        await publisher.flush()
        return response

    # --- serving ----------------------------------------------------------------------------

    async def serve(self) -> None:
        """Take work requests until cancelled, at most ``concurrency`` tasks at once."""
        slots = self._slots = asyncio.Semaphore(self.concurrency)
        if self._claims is not None:
            try:
                await self.pick_up_waiting()
            except Exception:
                logger.exception("could not look for tasks waiting in the task store")
        while True:
            await slots.acquire()
            try:
                request = await self.bus.receive_request()
            except Exception:
                # A layer fault (Redis gone, say) must not end the loop in silence: said once
                # with its cause, then the loop goes on taking work.
                slots.release()
                logger.exception(
                    "the agent runtime could not take work from the bus; retrying in %.0f s",
                    SERVE_RETRY_DELAY,
                )
                await asyncio.sleep(SERVE_RETRY_DELAY)
                continue
            except BaseException:
                slots.release()
                raise
            # Claimed in a task of its own while the loop takes the next request: the claims
            # of a burst of work go to the task store together (one transaction for those made
            # at once) rather than one after another.
            claiming = asyncio.ensure_future(self._claim_then_spawn(request, slots))
            self._claiming.add(claiming)
            claiming.add_done_callback(self._claiming.discard)

    async def _claim_then_spawn(self, request: Mapping[str, Any], slots: asyncio.Semaphore) -> None:
        """Claim the task of ``request`` and start it, holding the slot the serve loop took for
        it (given back when it is not run)."""
        cid = request.get("cid")
        spawned = False
        try:
            if isinstance(cid, str) and not await self.claim(cid, _attempt(request)):
                logger.info(
                    "task %s: not claimed (canceled before pickup, or taken by another "
                    "runtime); not run here",
                    cid,
                )
                return
            self._spawn(request, slots=slots, acquired=True)
            spawned = True
        except Exception:
            # A claim fault (the database gone, say): said with its cause. The task stays
            # submitted in the store, where a runtime's pickup finds it.
            logger.exception("the agent runtime could not claim task %s", cid)
        finally:
            if not spawned:
                slots.release()

    def _spawn(
        self, request: Mapping[str, Any], *, slots: asyncio.Semaphore, acquired: bool
    ) -> None:
        task = asyncio.ensure_future(self._run_logged(request, None if acquired else slots))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if acquired:
            task.add_done_callback(lambda _: slots.release())

    async def _run_logged(
        self, request: Mapping[str, Any], slots: asyncio.Semaphore | None = None
    ) -> None:
        try:
            if slots is not None:
                async with slots:
                    await self.run(request)
            else:
                await self.run(request)
        except Exception:
            logger.exception("task %s: the runtime failed", request.get("cid"))

    def start(self) -> asyncio.Task[None]:
        """Serve in the background on the running loop (idempotent)."""
        if self._serving is None or self._serving.done():
            self._serving = asyncio.ensure_future(self.serve())
        return self._serving

    @property
    def is_serving(self) -> bool:
        """True while the background serve loop runs."""
        return self._serving is not None and not self._serving.done()

    @property
    def running_tasks(self) -> list[str]:
        """Ids of the tasks running now."""
        return list(self._runs)

    async def stop_taking_work(self) -> None:
        """Stop the serve loop: no new work is taken; running tasks go on."""
        if self._serving is not None:
            self._serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving
        # Work taken but not yet claimed is not started either.
        claiming = list(self._claiming)
        for task in claiming:
            task.cancel()
        for task in claiming:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def drain(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` seconds for the running tasks to end (a task waiting for an
        answer with a checkpoint is not waited for: it is parked at shutdown); the ids of those
        still running."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._tasks and loop.time() < deadline:
            if self._runs and all(run.parkable for run in self._runs.values()):
                break
            await asyncio.wait(set(self._tasks), timeout=min(0.2, deadline - loop.time()))
        return [cid for cid, run in self._runs.items() if not run.parkable]

    async def shutdown(self, reason: str = "the agent runtime is shutting down") -> None:
        """Stop taking work, fail the running tasks with ``reason`` (park those waiting for an
        answer with a checkpoint: they resume elsewhere), wait for their responses."""
        if self._serving is not None:
            self._serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving
        # Work taken but not yet claimed is not started either.
        claiming = list(self._claiming)
        for task in claiming:
            task.cancel()
        for task in claiming:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for run in list(self._runs.values()):
            run.request_stop("park" if run.parkable else "shutdown", reason)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for task in list(self._lingering):
            task.cancel()
        if self._lingering:
            await asyncio.gather(*self._lingering, return_exceptions=True)


def _attempt(request: Mapping[str, Any]) -> int:
    attempt = request.get("attempt", 1)
    return (
        attempt if isinstance(attempt, int) and not isinstance(attempt, bool) and attempt > 0 else 1
    )


def _resume(raw: Any) -> Resume | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValueError("resume must be an object")
    message = raw.get("message")
    answer = UserAnswer(
        text=str(raw.get("text") or ""),
        parts=tuple(Part.model_validate(p) for p in raw.get("parts") or () if isinstance(p, dict)),
        message=Message.model_validate(message) if isinstance(message, dict) else None,
    )
    return Resume(
        answer=answer, checkpoint=raw.get("checkpoint"), question=str(raw.get("question") or "")
    )


_IN_PROCESS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Runtime] = (
    weakref.WeakKeyDictionary()
)


def runs_in_process() -> bool:
    """Whether the runtime runs in the web process (``RUN_IN_PROCESS``; auto: in-memory layer)."""
    from channels.layers import InMemoryChannelLayer

    from a2a_toolcall.conf import get_setting

    setting = get_setting("RUN_IN_PROCESS")
    if setting is not None:
        return bool(setting)
    return isinstance(Bus().request_layer, InMemoryChannelLayer)


def ensure_in_process_runtime(
    claims: Claims | None = None,
) -> Runtime | None:
    """Start the in-process runtime on this event loop if it should run here and is not running.

    Called by the A2A views before they publish work; returns the runtime, or None when work
    goes to worker processes. ``claim``: the runtime's claim hook when it is created here.
    """
    if not runs_in_process():
        return None
    loop = asyncio.get_running_loop()
    runtime = _IN_PROCESS.get(loop)
    if runtime is None:
        runtime = _IN_PROCESS[loop] = Runtime(claims=claims)
    runtime.start()
    return runtime
