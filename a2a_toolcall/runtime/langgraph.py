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

Requires the ``langgraph`` extra: ``pip install "a2a-toolcall[langgraph]"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.errors import GraphRecursionError

from a2a_toolcall.contract import ToolCallCompleted, ToolCallFailed, ToolCallStarted
from a2a_toolcall.protocol.models import Message, Role
from a2a_toolcall.runtime.events import AgentError, AgentInput, Event, Reply
from a2a_toolcall.runtime.limits import bound

__all__ = [
    "LangGraphAgent",
    "ToolFrameExtractor",
    "extract_tool_frames",
    "message_text",
]

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


class LangGraphAgent:
    """An agent (for ``A2A_TOOLCALL['AGENTS']``) that runs a compiled LangGraph graph.

    With a checkpointer, the A2A ``contextId`` is the graph's ``thread_id``: a follow-up message
    in the same context continues the conversation, and only the new message is sent in.
    Without one, the task's history is sent along. ``recursion_limit`` defaults to the
    ``LANGGRAPH_RECURSION_LIMIT`` setting and the frame size bound to ``FRAME_VALUE_LIMIT``.
    """

    def __init__(
        self,
        graph: Any,
        *,
        recursion_limit: int | None = None,
        value_limit: int | None = None,
        messages_key: str = "messages",
        structured_key: str = "structured_response",
    ) -> None:
        self.graph = graph
        self.recursion_limit = recursion_limit
        self.value_limit = value_limit
        self.messages_key = messages_key
        self.structured_key = structured_key

    def _settings(self) -> tuple[int, int]:
        from a2a_toolcall.conf import get_setting

        recursion = self.recursion_limit or int(get_setting("LANGGRAPH_RECURSION_LIMIT"))
        limit = self.value_limit or int(get_setting("FRAME_VALUE_LIMIT"))
        return recursion, limit

    async def __call__(self, task: AgentInput) -> AsyncGenerator[Event, Any]:
        recursion, limit = self._settings()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        config: dict[str, Any] = {
            "recursion_limit": recursion,
            "callbacks": [_LiveOutcomes(queue, limit)],
        }
        if getattr(self.graph, "checkpointer", None) is not None:
            config["configurable"] = {"thread_id": task.context_id or task.task_id}
            inputs = [_to_langchain(task.message)]
        else:
            inputs = [_to_langchain(m) for m in (*task.history, task.message)]
        run = asyncio.ensure_future(self._stream({self.messages_key: inputs}, config, queue))
        extractor = ToolFrameExtractor(limit=limit)
        started: set[str] = set()
        finished: set[str] = set()
        early: dict[str, Frame] = {}  # outcomes heard before their start was streamed
        final: dict[str, Any] = {}
        try:
            while True:
                kind, item = await queue.get()
                if kind == "snapshot":
                    namespace, state = item
                    for turn in extractor.feed(state.get(self.messages_key) or [], namespace):
                        frames = self._fresh(turn, started, finished, early)
                        if frames:
                            yield frames
                    if not namespace:
                        final = state
                elif kind == "outcome":
                    frame: Frame = item
                    if frame.tool_call_id in finished:
                        continue
                    if frame.tool_call_id not in started:
                        early.setdefault(frame.tool_call_id, frame)
                        continue
                    finished.add(frame.tool_call_id)
                    yield frame
                elif kind == "error":
                    raise item
                else:  # "done"
                    break
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
            if not run.done():
                run.cancel()  # cancel reaches the graph and the tools it is running
            with contextlib.suppress(BaseException):
                await run
        messages = final.get(self.messages_key) or []
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        structured = final.get(self.structured_key)
        yield Reply(
            text=message_text(answer) if answer is not None else None,
            data=[_structured(structured)] if structured is not None else (),
        )

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
        if call_id and not isinstance(error, asyncio.CancelledError):
            failed = ToolCallFailed(
                tool_call_id=call_id, name=name, error=f"{type(error).__name__}: {error}"
            )
            self.queue.put_nowait(("outcome", failed))


def _structured(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value
