"""Agents the tests run through the runtime, in this process and in worker processes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import Any

from a2a_toolcall.runtime import AgentInput, Event, Progress, Reply, ToolCall

# Task ids whose parked tool got past its sleep: cancellation must keep this empty.
WOKE_UP: set[str] = set()


async def echo(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Narrates once, then replies with the text it got."""
    yield Progress("echoing", step=1, percent=50.0)
    yield Reply(text=task.text, data=[{"pid": os.getpid()}])


async def parked(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Starts a tool that sleeps for ``metadata['seconds']`` (default 60), then replies."""
    seconds = float(task.metadata.get("seconds", 60))

    async def park(seconds: float) -> str:
        await asyncio.sleep(seconds)
        WOKE_UP.add(task.task_id)
        return "woke up"

    result = yield ToolCall("park", {"seconds": seconds}, run=park)
    WOKE_UP.add(task.task_id)
    yield Reply(text=str(result.value))


async def whoami(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Takes a moment, then replies with the id of the process that ran it."""
    await asyncio.sleep(float(task.metadata.get("seconds", 0.2)))
    yield Reply(text=str(os.getpid()))
