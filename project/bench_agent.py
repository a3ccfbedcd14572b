"""The benchmark workload (docs/benchmarks.md), served when ``A2A_DEMO_AGENT=bench``.

- ``bench k=<K> pad=<P>``: K tool calls with no sleep, each a ``started`` frame with args
  ``{"i": i, "t_emit": time.time(), "pad": "x" * P}`` then a ``completed`` frame for the same id
  with the same shape of result, then a text answer; ``toolCallId`` is ``<taskId>:<i>``.
- ``bench hold=<S>``: one ``started`` frame, ``asyncio.sleep(S)``, the ``completed`` frame, the
  answer (idle streams, for memory per open stream).

The same workload is implemented for the official a2a-sdk server (``bench/sdk_server.py``) and
as raw SSE bytes (``bench/raw_asgi.py``), so the three are measured on identical streams.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from a2a_toolcall.contract import ToolCallCompleted, ToolCallStarted
from a2a_toolcall.runtime import AgentError, AgentInput, Event, Reply

WORKLOAD = re.compile(
    r"^bench(?:\s+k=(?P<k>\d+)\s+pad=(?P<pad>\d+)|\s+hold=(?P<hold>\d+(?:\.\d+)?))$"
)
TOOL = "bench"


def parse(text: str) -> tuple[int, int, float | None]:
    """``(K, P, None)`` for ``bench k=K pad=P``, ``(1, 0, S)`` for ``bench hold=S``."""
    match = WORKLOAD.match(text.strip())
    if match is None:
        raise AgentError(
            f"not a benchmark request: {text[:80]!r} (bench k=<K> pad=<P> | bench hold=<S>)"
        )
    if match["hold"] is not None:
        return 1, 0, float(match["hold"])
    return int(match["k"]), int(match["pad"]), None


def payload(i: int, pad: str) -> dict[str, Any]:
    """The args of a started frame and the result of a completed one."""
    return {"i": i, "t_emit": time.time(), "pad": pad}


async def bench_agent(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Emit the workload's frames as fast as the runtime takes them, then answer."""
    k, p, hold = parse(task.text)
    pad = "x" * p
    for i in range(k):
        call_id = f"{task.task_id}:{i}"
        yield ToolCallStarted(tool_call_id=call_id, name=TOOL, args=payload(i, pad))
        if hold is not None:
            await asyncio.sleep(hold)
        yield ToolCallCompleted(tool_call_id=call_id, name=TOOL, result=payload(i, pad))
    yield Reply(text=f"{k} tool calls done")


def silent(calls: Sequence[tuple[str, Any]]) -> str:
    """A humanizer that narrates nothing: the benchmark streams frames only, like its peers."""
    return ""
