"""Run a LangGraph graph as an agent: live tool-call frames from its reasoning loop.

Any compiled graph whose state carries ``messages`` works: a ``create_agent`` /
``create_react_agent`` graph, a ``deepagents`` graph, or a hand-built ``StateGraph`` with a
``ToolNode``. The graph is streamed with ``astream(stream_mode="values", subgraphs=True)``;
each streamed snapshot's new messages become frames:

- an AI message with tool calls: one ``started`` frame per call (``toolCallId`` = the call's id;
  calls without a name are dropped), yielded together as one tool turn, so the runtime narrates
  the turn once;
- a tool message: ``failed`` if its ``status`` is ``"error"`` (``error`` = its content as text),
  else ``completed`` (``result`` = its content; JSON text holding an object or array is decoded).

Every message contributes once, however often snapshots repeat it: the first snapshot (the
conversation so far) is skipped, later ones by message id, sub-graph snapshots included. A
provider that leaves tool calls without ids gets ids made from the AI message's id and the
call's position, and a tool result without an id is matched to the oldest unanswered id-less
call of the same tool, so ``started`` and its outcome still share a ``toolCallId``.

Human in the loop: a run that stops on LangGraph's ``interrupt(value)`` (in a node, a tool or a
sub-graph) becomes A2A input-required, one :class:`InputRequest` per pending interrupt; the
answers resume the graph with ``Command(resume=...)`` on the same checkpoint thread, as often as
the graph asks. The frames of the whole task come from one extractor, so a tool started before
an interrupt and finished after it is one invocation.

Requires the ``langgraph`` extra: ``pip install "a2a-toolcall[langgraph]"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp, GraphRecursionError
from langgraph.types import Command, Interrupt

from a2a_toolcall.contract import ToolCallCompleted, ToolCallFailed, ToolCallStarted
from a2a_toolcall.protocol.models import Message, Role
from a2a_toolcall.runtime.events import (
    AgentError,
    AgentInput,
    Event,
    InputRequest,
    Reply,
    UserAnswer,
)
from a2a_toolcall.runtime.limits import bound, jsonable

__all__ = [
    "ABANDONED",
    "LangGraphAgent",
    "ToolFrameExtractor",
    "extract_tool_frames",
    "input_request",
    "message_text",
]

ABANDONED = "not run: the task that asked for it ended before it ran (canceled or failed)"
"""The result given to a tool call an abandoned run left unanswered, when its thread goes on."""

_QUESTION_KEYS = ("question", "prompt", "message", "text", "description")

Frame = ToolCallStarted | ToolCallCompleted | ToolCallFailed


def message_text(message: BaseMessage) -> str:
    """A message's text: its string content, or its text content blocks joined."""
    content = message.content
    if isinstance(content, str):
        return content
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    return "".join(texts)


def _synthetic_id(message: BaseMessage, index: int, position: int) -> str:
    return f"{message.id or f'message-{index}'}:{position}"


def _idless_calls(messages: Sequence[BaseMessage], end: int) -> list[tuple[str, str]]:
    """(name, synthesized id) of id-less tool calls before ``end`` still without a result."""
    open_calls: list[tuple[str, str]] = []
    for index in range(end):
        message = messages[index]
        if isinstance(message, AIMessage):
            for position, call in enumerate(message.tool_calls):
                if not call.get("id") and call.get("name"):
                    open_calls.append((call["name"], _synthetic_id(message, index, position)))
        elif isinstance(message, ToolMessage) and not message.tool_call_id:
            match = _match(open_calls, message.name)
            if match is not None:
                open_calls.remove(match)
    return open_calls


def _match(open_calls: list[tuple[str, str]], name: str | None) -> tuple[str, str] | None:
    for call in open_calls:
        if call[0] == name:
            return call
    return open_calls[0] if open_calls else None


def _result(content: Any, limit: int | None) -> Any:
    if isinstance(content, str):
        stripped = content.strip()
        if stripped[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                content = json.loads(stripped)
    return bound(content, limit)


def message_frames(
    messages: Sequence[BaseMessage], index: int, *, limit: int | None = None
) -> list[Frame]:
    """The frames message ``index`` of ``messages`` contributes (see the module docstring)."""
    message = messages[index]
    if isinstance(message, AIMessage):
        frames: list[Frame] = []
        for position, call in enumerate(message.tool_calls):
            if not call.get("name"):
                continue  # nameless calls are dropped, as in the reference
            frames.append(
                ToolCallStarted(
                    tool_call_id=call.get("id") or _synthetic_id(message, index, position),
                    name=call["name"],
                    args=bound(call.get("args"), limit),
                )
            )
        return frames
    if isinstance(message, ToolMessage):
        call_id: str = message.tool_call_id
        tool: str | None = message.name
        if not call_id:
            match = _match(_idless_calls(messages, index), tool)
            if match is None:
                return []
            tool, call_id = tool or match[0], match[1]
        name = tool or _name_of(messages, index, call_id) or "tool"
        if message.status == "error":
            return [ToolCallFailed(tool_call_id=call_id, name=name, error=message_text(message))]
        return [
            ToolCallCompleted(
                tool_call_id=call_id, name=name, result=_result(message.content, limit)
            )
        ]
    return []


def _name_of(messages: Sequence[BaseMessage], end: int, call_id: str) -> str | None:
    for message in reversed(messages[:end]):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") == call_id:
                    return call.get("name")
    return None


def extract_tool_frames(
    messages: Sequence[BaseMessage], cursor: int, *, limit: int | None = None
) -> tuple[list[Frame], int]:
    """The frames of ``messages[cursor:]``, and the new cursor (``len(messages)``).

    Call it with each streamed snapshot and the cursor it returned last: each message then
    contributes exactly once.
    """
    frames: list[Frame] = []
    for index in range(cursor, len(messages)):
        frames += message_frames(messages, index, limit=limit)
    return frames, len(messages)


class ToolFrameExtractor:
    """Turns the snapshots of a streamed run (root graph and sub-graphs) into tool turns."""

    def __init__(self, *, limit: int | None = None) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._cursors: dict[tuple[str, ...], int] = {}
        self._started = False

    def feed(
        self, messages: Sequence[BaseMessage], namespace: tuple[str, ...] = ()
    ) -> list[list[Frame]]:
        """The tool turns new in this snapshot: each AI message's calls, each tool result."""
        if not namespace and not self._started:
            # The first snapshot is the conversation so far: nothing in it is news.
            self._started = True
            self._seen.update(self._key(m, namespace, i) for i, m in enumerate(messages))
            self._cursors[namespace] = len(messages)
            return []
        cursor = self._cursors.get(namespace, 0)
        if len(messages) < cursor:  # a sub-graph run started again
            cursor = 0
        self._cursors[namespace] = len(messages)
        turns = []
        for index in range(cursor, len(messages)):
            key = self._key(messages[index], namespace, index)
            if key in self._seen:
                continue
            self._seen.add(key)
            frames = message_frames(messages, index, limit=self.limit)
            if frames:
                turns.append(frames)
        return turns

    @staticmethod
    def _key(message: BaseMessage, namespace: tuple[str, ...], index: int) -> str:
        return message.id or f"{'/'.join(namespace)}#{index}"


def _to_langchain(message: Message) -> BaseMessage:
    parts = []
    for part in message.parts:
        if part.text is not None:
            parts.append(part.text)
        elif part.kind == "data":
            parts.append(json.dumps(part.data, ensure_ascii=False))
        elif part.url is not None:
            parts.append(part.url)
    text = "\n".join(parts)
    if message.role is Role.AGENT:
        return AIMessage(content=text, id=message.message_id)
    return HumanMessage(content=text, id=message.message_id)


def input_request(interrupt: Interrupt) -> InputRequest:
    """The question an ``interrupt(value)`` asks the user.

    A text value is the question. A dict names it under ``question`` (or ``prompt``,
    ``message``, ``text``, ``description``) and may offer ``choices``; the choices, the
    interrupt's id and the whole value travel in the request's ``meta`` for clients that show them.
    """
    value = interrupt.value
    meta: dict[str, Any] = {"interruptId": interrupt.id}
    question: str | None = None
    if isinstance(value, str):
        question = value.strip() or None
    elif isinstance(value, dict):
        question = next(
            (value[k].strip() for k in _QUESTION_KEYS if isinstance(value.get(k), str)), None
        )
        choices = value.get("choices")
        if isinstance(choices, list | tuple) and choices:
            meta["choices"] = [str(choice) for choice in choices]
    if value is not None and not isinstance(value, str):
        meta["value"] = jsonable(value)
    if not question:
        question = (
            json.dumps(meta["value"], ensure_ascii=False)
            if "value" in meta
            else "The agent needs your input to go on."
        )
    return InputRequest(question=question, meta=meta)


def _close_dangling_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with every unanswered tool call answered by an ``ABANDONED`` error result.

    Chat models refuse a history where a tool call has no result, so a conversation carried on
    from a run that stopped between a tool call and its result first gets one.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    closed: list[BaseMessage] = []
    for message in messages:
        closed.append(message)
        if isinstance(message, AIMessage):
            closed += [
                ToolMessage(
                    ABANDONED,
                    tool_call_id=call["id"],
                    name=call.get("name"),
                    status="error",
                )
                for call in message.tool_calls
                if call.get("id") and call["id"] not in answered
            ]
    return closed


class _TaskStream:
    """What one task's graph runs share: what was already published, and the last state."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.extractor = ToolFrameExtractor(limit=limit)
        self.started: set[str] = set()
        self.finished: set[str] = set()
        self.early: dict[str, Frame] = {}  # outcomes heard before their start was streamed
        self.final: dict[str, Any] = {}
        self.interrupted = False


class LangGraphAgent:
    """An agent (for ``A2A_TOOLCALL['AGENTS']``) that runs a compiled LangGraph graph.

    With the graph's own checkpointer, the A2A ``contextId`` names the graph's ``thread_id``: a
    follow-up message in the same context continues the conversation, and only the new message is
    sent in. A graph compiled without one gets an ``InMemorySaver`` so that ``interrupt`` works,
    on a thread of its own per task (deleted when the task ends), and the task's history is sent
    along. ``recursion_limit`` defaults to the ``LANGGRAPH_RECURSION_LIMIT`` setting and the frame
    size bound to ``FRAME_VALUE_LIMIT``.

    ``checkpointer`` gives the graph a checkpointer (as compiling it with one does), or an async
    function returning one: it is awaited once, before the first task, on the event loop the
    agent runs on, for savers that must be made there (``AsyncPostgresSaver`` and its pool).
    """

    def __init__(
        self,
        graph: Any,
        *,
        recursion_limit: int | None = None,
        value_limit: int | None = None,
        messages_key: str = "messages",
        structured_key: str = "structured_response",
        checkpointer: BaseCheckpointSaver[Any]
        | Callable[[], Awaitable[BaseCheckpointSaver[Any]]]
        | None = None,
    ) -> None:
        self.make_checkpointer: Callable[[], Awaitable[BaseCheckpointSaver[Any]]] | None = None
        if isinstance(checkpointer, BaseCheckpointSaver):
            graph = graph.copy(update={"checkpointer": checkpointer})
        elif checkpointer is not None:
            self.make_checkpointer = checkpointer
        own = getattr(graph, "checkpointer", None)
        self.keeps_conversation = isinstance(own, BaseCheckpointSaver) or checkpointer is not None
        """Whether the graph has a checkpointer of the user's (a thread per A2A context)."""
        self.task_saver: InMemorySaver | None = None
        if own is None and checkpointer is None and callable(getattr(graph, "copy", None)):
            # Resuming an interrupt needs the interrupted run's checkpoint.
            self.task_saver = InMemorySaver()
            graph = graph.copy(update={"checkpointer": self.task_saver})
        self.graph = graph
        self.recursion_limit = recursion_limit
        self.value_limit = value_limit
        self.messages_key = messages_key
        self.structured_key = structured_key
        self._made: asyncio.Future[BaseCheckpointSaver[Any]] | None = None

    async def _ensure_checkpointer(self) -> None:
        """Make the checkpointer once (tasks arriving meanwhile wait; a failure is retried)."""
        if self.make_checkpointer is None:
            return
        if self._made is None:
            self._made = asyncio.ensure_future(self.make_checkpointer())
        try:
            # Shielded: a task canceled while waiting must not cancel what the others wait for.
            saver = await asyncio.shield(self._made)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._made = None
            raise AgentError(
                f"the agent's checkpointer could not be made: {type(exc).__name__}: {exc} (it "
                "is tried again with the next task)"
            ) from exc
        if self.make_checkpointer is not None:
            self.graph = self.graph.copy(update={"checkpointer": saver})
            self.make_checkpointer = None

    def _settings(self) -> tuple[int, int]:
        from a2a_toolcall.conf import get_setting

        recursion = self.recursion_limit or int(get_setting("LANGGRAPH_RECURSION_LIMIT"))
        limit = self.value_limit or int(get_setting("FRAME_VALUE_LIMIT"))
        return recursion, limit

    async def conversation_thread(self, context: str) -> tuple[str, list[BaseMessage]]:
        """The checkpoint thread a new task of conversation ``context`` runs on.

        Returns the thread id and the messages to carry into it. The thread is ``context``
        unless a run on it never finished (canceled while waiting for an answer, failed, or
        still running in another task): a new task must not land in the middle of that run,
        so it continues on ``context~2`` (then ``~3``...), seeded with the conversation so far,
        every unanswered tool call closed with an ``ABANDONED`` error result.
        """
        thread, generation = context, 1
        carried: list[BaseMessage] = []
        while True:
            state = await self.graph.aget_state({"configurable": {"thread_id": thread}})
            if not state.next:
                return thread, [] if state.values else carried
            carried = _close_dangling_calls(state.values.get(self.messages_key) or [])
            generation += 1
            thread = f"{context}~{generation}"

    @property
    def durable(self) -> bool:
        """Whether the graph's checkpoints outlive this process (a checkpointer of the user's
        that is not in memory, e.g. ``AsyncPostgresSaver``): its questions then carry a
        checkpoint, and a task waiting for an answer survives the loss of its worker."""
        if self.make_checkpointer is not None:
            return True  # made on first use: a saver that must be made on the loop (a database's)
        saver = getattr(self.graph, "checkpointer", None)
        return (
            self.keeps_conversation
            and isinstance(saver, BaseCheckpointSaver)
            and not isinstance(saver, InMemorySaver)
        )

    async def __call__(self, task: AgentInput) -> AsyncGenerator[Event, Any]:
        recursion, limit = self._settings()
        await self._ensure_checkpointer()
        stream = _TaskStream(limit)
        inputs: Any = None
        answered: list[str] = []
        if task.resume is not None:
            thread, answered = await self._resume_point(task, stream)
        elif self.keeps_conversation:
            thread, carried = await self.conversation_thread(task.context_id or task.task_id)
            inputs = {self.messages_key: [*carried, _to_langchain(task.message)]}
        else:
            thread = f"a2a-task:{task.task_id}"
            inputs = {
                self.messages_key: [
                    *map(_to_langchain, task.history),
                    _to_langchain(task.message),
                ]
            }
        configurable = {"thread_id": thread}
        durable = self.durable
        try:
            while True:
                if inputs is not None:
                    async with contextlib.aclosing(
                        self._run(inputs, configurable, recursion, stream)
                    ) as events:
                        async for event in events:
                            yield event
                interrupts = await self._pending_interrupts(configurable, stream)
                if not interrupts:
                    break
                answers, answered = answered, []
                for interrupt in interrupts[len(answers) :]:
                    request = input_request(interrupt)
                    if durable:
                        # Enough to go on from here in another process (see _resume_point).
                        checkpoint = {"thread": thread, "answers": list(answers)}
                        request = dataclasses.replace(request, checkpoint=checkpoint)
                    answer: UserAnswer = yield request
                    answers.append(answer.text)
                # One interrupt takes the answer itself; several (parallel branches) a map by id.
                inputs = Command(
                    resume=answers[0]
                    if len(interrupts) == 1
                    else {i.id: a for i, a in zip(interrupts, answers, strict=True)}
                )
        except GraphRecursionError:
            raise AgentError(
                f"the agent stopped after {recursion} steps without an answer (the recursion "
                "limit; raise LANGGRAPH_RECURSION_LIMIT if the task needs more)"
            ) from None
        except AgentError:
            raise
        except Exception as exc:
            raise AgentError(f"the agent failed: {type(exc).__name__}: {exc}") from exc
        finally:
            if self.task_saver is not None:
                with contextlib.suppress(Exception):
                    await self.task_saver.adelete_thread(thread)
        messages = stream.final.get(self.messages_key) or []
        answer_message = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        structured = stream.final.get(self.structured_key)
        yield Reply(
            text=message_text(answer_message) if answer_message is not None else None,
            data=[_structured(structured)] if structured is not None else (),
        )

    async def _resume_point(self, task: AgentInput, stream: _TaskStream) -> tuple[str, list[str]]:
        """Where a resumed task goes on: the checkpoint's thread and the answers so far (the new
        one last). Tool calls the interrupted run left open are this run's to report."""
        assert task.resume is not None
        checkpoint = task.resume.checkpoint if isinstance(task.resume.checkpoint, dict) else {}
        thread = checkpoint.get("thread")
        if not isinstance(thread, str) or not thread:
            raise AgentError("the task cannot be resumed: its checkpoint names no graph thread")
        earlier = checkpoint.get("answers")
        answers = [str(a) for a in earlier] if isinstance(earlier, list) else []
        state = await self.graph.aget_state({"configurable": {"thread_id": thread}})
        if not state.interrupts:
            raise AgentError(
                f"the task cannot be resumed: graph thread {thread!r} is not waiting for an answer"
            )
        messages = state.values.get(self.messages_key) or []
        answered_ids = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        for message in messages:
            if isinstance(message, AIMessage):
                stream.started.update(
                    str(call["id"])
                    for call in message.tool_calls
                    if call.get("id") and call["id"] not in answered_ids
                )
        return thread, [*answers, task.resume.answer.text]

    async def _pending_interrupts(
        self, configurable: dict[str, Any], stream: _TaskStream
    ) -> Sequence[Interrupt]:
        """The interrupts the run stopped on (sub-graphs' and parallel branches' included)."""
        if self.keeps_conversation or self.task_saver is not None:
            state = await self.graph.aget_state({"configurable": configurable})
            return tuple(state.interrupts)
        if stream.interrupted:
            raise AgentError(
                "the graph called interrupt() but has no checkpointer to resume from (it was "
                "compiled with checkpointer=False); compile it without that argument, or with "
                "a checkpointer"
            )
        return ()

    async def _run(
        self, inputs: Any, configurable: dict[str, Any], recursion: int, stream: _TaskStream
    ) -> AsyncGenerator[list[Frame] | Frame, Any]:
        """One graph run (the first, or a resume) to its end or its next interrupt."""
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        config: dict[str, Any] = {
            "recursion_limit": recursion,
            "callbacks": [_LiveOutcomes(queue, stream.limit)],
            "configurable": configurable,
        }
        run = asyncio.ensure_future(self._stream(inputs, config, queue))
        try:
            while True:
                kind, item = await queue.get()
                if kind == "snapshot":
                    namespace, state = item
                    for turn in stream.extractor.feed(
                        state.get(self.messages_key) or [], namespace
                    ):
                        frames = self._fresh(turn, stream.started, stream.finished, stream.early)
                        if frames:
                            yield frames
                    if state.get("__interrupt__"):
                        stream.interrupted = True
                    if not namespace:
                        stream.final = state
                elif kind == "outcome":
                    frame: Frame = item
                    if frame.tool_call_id in stream.finished:
                        continue
                    if frame.tool_call_id not in stream.started:
                        stream.early.setdefault(frame.tool_call_id, frame)
                        continue
                    stream.finished.add(frame.tool_call_id)
                    yield frame
                elif kind == "error":
                    raise item
                else:  # "done"
                    break
        finally:
            if not run.done():
                run.cancel()  # cancel reaches the graph and the tools it is running
            with contextlib.suppress(BaseException):
                await run

    @staticmethod
    def _fresh(
        turn: list[Frame], started: set[str], finished: set[str], early: dict[str, Frame]
    ) -> list[Frame]:
        """The frames of a streamed turn not already sent live, plus outcomes held back."""
        fresh: list[Frame] = []
        for frame in turn:
            if isinstance(frame, ToolCallStarted):
                if frame.tool_call_id in started:
                    continue
                started.add(frame.tool_call_id)
                fresh.append(frame)
                held = early.pop(frame.tool_call_id, None)
                if held is not None:
                    finished.add(frame.tool_call_id)
                    fresh.append(held)
            elif frame.tool_call_id not in finished:
                finished.add(frame.tool_call_id)
                fresh.append(frame)
        return fresh

    async def _stream(
        self, inputs: dict[str, Any], config: dict[str, Any], queue: asyncio.Queue[tuple[str, Any]]
    ) -> None:
        try:
            async for namespace, state in self.graph.astream(
                inputs, config, stream_mode="values", subgraphs=True
            ):
                if isinstance(state, dict):
                    queue.put_nowait(("snapshot", (namespace, state)))
        except Exception as exc:
            queue.put_nowait(("error", exc))
        else:
            queue.put_nowait(("done", None))


class _LiveOutcomes(AsyncCallbackHandler):
    """Reports each tool's outcome the moment it returns or raises.

    A ``ToolNode`` running several tools writes their results to the graph state only when the
    last one is done; the tool callbacks fire as each finishes, so a fast tool's check appears
    while a slow one is still running. The snapshot's copy is then recognised and skipped.
    """

    def __init__(self, queue: asyncio.Queue[tuple[str, Any]], limit: int) -> None:
        self.queue = queue
        self.limit = limit
        self.names: dict[Any, str] = {}

    async def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: Any, **kwargs: Any
    ) -> None:
        self.names[run_id] = str((serialized or {}).get("name") or kwargs.get("name") or "tool")

    async def on_tool_end(self, output: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.names.pop(run_id, None)
        if isinstance(output, ToolMessage) and output.tool_call_id:
            frames = message_frames([output], 0, limit=self.limit)
            for frame in frames:
                self.queue.put_nowait(("outcome", frame))

    async def on_tool_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        name = self.names.pop(run_id, "tool")
        call_id = kwargs.get("tool_call_id")
        # An interrupt() inside the tool is a pause, not a failure: the tool runs again on resume.
        if call_id and not isinstance(error, asyncio.CancelledError | GraphBubbleUp):
            failed = ToolCallFailed(
                tool_call_id=call_id, name=name, error=f"{type(error).__name__}: {error}"
            )
            self.queue.put_nowait(("outcome", failed))


def _structured(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value
