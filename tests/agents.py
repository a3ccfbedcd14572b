"""Agents the tests run through the runtime, in this process and in worker processes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import Any

from a2a_toolcall.protocol.models import Part
from a2a_toolcall.runtime import (
    AgentInput,
    ArtifactUpdate,
    Event,
    InputRequest,
    Progress,
    Reply,
    ToolCall,
)

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


SECRET = "s3cr3t-hunter2"
"""Under a default secret key name (``api_key``) in every data value ``leaky`` hands out."""
PIN = "pin-8642"
"""Under ``pin``: redacted only when REDACT_KEYS names it."""
CARD = "4111 1111 1111 1111"
"""A value the tests' REDACT_HOOK masks in every string that holds it."""
TEXT = f"free text stays as written: api_key {CARD}"
"""In ``leaky``'s free text (narration, question, answer, text parts), never cleaned."""


def leaked(kind: str) -> dict[str, Any]:
    """A value carrying a secret, a pin and a card number; ``leak`` says where it was handed out."""
    return {"leak": kind, "api_key": SECRET, "auth": {"pin": PIN}, "card": CARD}


async def leaky(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Hands out :func:`leaked` values in every kind of data an agent can: narration and
    question ``meta``, tool args and results, artifact and reply data parts and metadata.

    ``metadata['asMessage']`` makes the reply a direct message rather than an artifact.
    """
    yield Progress(TEXT, meta=leaked("progress"))
    yield ToolCall("lookup", leaked("args"), run=lambda **_: leaked("result"))
    yield ArtifactUpdate(
        [
            Part(data=leaked("artifact-data"), metadata=leaked("artifact-part-meta")),
            {"text": TEXT, "metadata": leaked("artifact-text-meta")},
        ],
        name="report",
        metadata=leaked("artifact-meta"),
    )
    yield InputRequest(TEXT, meta={"choices": [leaked("question-meta")]})
    yield Reply(
        text=TEXT,
        data=[leaked("reply-data")],
        parts=[
            Part(data=leaked("reply-part"), metadata=leaked("reply-part-meta")),
            Part(text=TEXT, metadata=leaked("reply-text-meta")),
        ],
        as_message=bool(task.metadata.get("asMessage")),
    )


LONG_TOOL_NAME = "look_up_the_quarterly_revenue_of_every_region_in_every_currency_we_report_in"
"""A tool name far wider than a phone's screen, for the live page's layout tests."""
LONG_URL = "https://reports.example.com/" + "/".join(f"part-{i}-of-the-report" for i in range(12))
LONG_WORD = "Rechtsschutzversicherungsgesellschaften" * 4
"""One word, no break opportunity, four times as wide as a phone."""


async def report(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Says how far it is (``Progress(percent=...)``: 0, 60 and 100) around one tool whose name,
    args and result are all very long; a number in the message is how many seconds it stays at
    60 % (default 1.5)."""
    words = [w for w in task.text.split() if w.replace(".", "", 1).isdigit()]
    hold = float(words[0]) if words else 1.5
    yield Progress("starting the report", percent=0.0)
    result = yield ToolCall(
        LONG_TOOL_NAME,
        {"source": LONG_URL, "note": LONG_WORD, "regions": [f"region-{i}" for i in range(40)]},
        run=lambda **args: {"url": args["source"], "word": args["note"], "total": 10**12},
    )
    yield Progress("writing the report", percent=60.0)
    await asyncio.sleep(hold)
    yield Progress("report written", percent=100.0)
    yield Reply(text=f"Report: {result.value['url']} {LONG_WORD}")


COUNTER_KEY = "a2a-test-charges:{task_id}"
"""The Redis key ``charging`` counts its tool's calls under: a side effect outside the app."""


async def charging(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Calls a side-effecting tool once (it counts its calls in Redis), then replies."""
    import redis.asyncio as redis

    async def charge_card(amount: int) -> str:
        client = redis.Redis(host="127.0.0.1", port=6379)
        try:
            await client.incr(COUNTER_KEY.format(task_id=task.task_id))
        finally:
            await client.aclose()
        return f"charged {amount}"

    result = yield ToolCall("charge_card", {"amount": 5}, run=charge_card)
    yield Reply(text=str(result.value))


async def retrying(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Declared safe to run again: on its first attempt its tool sleeps for
    ``metadata['seconds']`` (default 60, time to kill its worker); on a retry it returns at once.
    Replies with the attempt that finished."""
    seconds = float(task.metadata.get("seconds", 60)) if task.attempt == 1 else 0.0

    async def lookup(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"looked up on attempt {task.attempt}"

    result = yield ToolCall("lookup", {"seconds": seconds}, run=lookup)
    yield Reply(text=str(result.value))


retrying.retry_safe = True  # type: ignore[attr-defined]


async def resumable(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """A plain agent that resumes from a checkpoint: it runs a tool, asks which city, and keeps
    what it needs to go on in the question's checkpoint. Resumed (in any process), it replies
    from the checkpoint and the answer without running anything again."""
    if task.resume is not None:
        found = task.resume.checkpoint["found"]
        yield Reply(text=f"{found}; next: {task.resume.answer.text} (attempt {task.attempt})")
        return

    async def forecast(city: str) -> str:
        return f"sunny in {city}"

    result = yield ToolCall("forecast", {"city": "Oslo"}, run=forecast)
    city = yield InputRequest("Which city next?", checkpoint={"found": result.value})
    yield Reply(text=f"{result.value}; next: {city} (attempt {task.attempt})")


class Unprintable:
    """An object whose ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text for you")


UNSAFE_VALUES: dict[str, Any] = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "big": 2**70,
    "huge": 10**5000,
    "bytes": b"\x00\x01\x02",
    "unprintable": Unprintable(),
    "surrogate": "a\ud800b",
}
"""Values JSON cannot carry, as a model that read a hostile page might return them."""

LONG_NARRATION = "n" * 5_000_000
"""A 5 MB narration line."""


async def unsafe(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Hands out every value of :data:`UNSAFE_VALUES` as tool args, a tool result, narration
    meta, a question's meta, an artifact's data and the reply's data; narrates 5 MB; replies
    with text holding a lone surrogate. The task must complete."""
    yield Progress(LONG_NARRATION, meta=dict(UNSAFE_VALUES))
    result = yield ToolCall("echo_back", dict(UNSAFE_VALUES), run=lambda **kw: dict(kw))
    yield ArtifactUpdate(
        parts=[{"data": dict(UNSAFE_VALUES)}, {"url": 5}, {"text": "ok \ud800"}], name="odd"
    )
    answer = yield InputRequest("continue? \ud800", meta={"nan": float("nan")})
    yield Reply(text=f"done {answer} \ud800", data=[result.value, UNSAFE_VALUES["huge"]])


FIREHOSE_RESULT = "r" * 30_000
"""One tool result: 30 KB of JSON on the wire."""


async def firehose(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """As many tool calls as the message's text says (default 400, about 12 MB of frames),
    each returning :data:`FIREHOSE_RESULT`, as fast as the runtime takes them."""
    count = int(task.text) if task.text.strip().isdigit() else 400
    for number in range(count):
        yield ToolCall("fetch_page", {"n": number}, run=lambda **_: FIREHOSE_RESULT)
    yield Reply(text=f"{count} pages")
