"""The ceiling: a bare ASGI app writing the same SSE bytes as the A2A server, nothing else.

No framework, no bus, no database: it parses the JSON-RPC request, then writes the workload's
events (the Task, WORKING, ``thinking``, per tool call a ``started`` and a ``completed``
artifact-update, the answer, COMPLETED) in the exact shapes this app's server sends, one
``http.response.body`` message per event, with ``json.dumps``. ``hold=<S>`` sleeps between the
frames of its one call. Whatever it costs per frame is the floor for any Python server here.

    uvicorn bench.raw_asgi:app --port 9300
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from project.bench_agent import TOOL, parse

MIME = "application/vnd.protolabs.tool-call-v1+json"
URI = "https://proto-labs.ai/a2a/ext/tool-call-v1"
HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
CARD = json.dumps(
    {
        "name": "raw ASGI ceiling",
        "description": "The benchmark's SSE bytes from a bare ASGI app.",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
).encode()
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["method"] == "GET":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": CARD})
        return
    request = json.loads(await _body(receive))
    message = request["params"]["message"]
    text = "\n".join(p["text"] for p in message["parts"] if "text" in p)
    k, p, hold = parse(text)
    pad = "x" * p
    rid = request.get("id")
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
    seq = 0

    async def emit(result: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        data = _dumps({"jsonrpc": "2.0", "id": rid, "result": result})
        await send(
            {
                "type": "http.response.body",
                "body": f"id: {seq}\ndata: {data}\n\n".encode(),
                "more_body": True,
            }
        )

    def status(state: str, words: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"state": state}
        if words is not None:
            body["message"] = {
                "messageId": uuid.uuid4().hex,
                "contextId": context_id,
                "taskId": task_id,
                "role": "ROLE_AGENT",
                "parts": [{"text": words}],
            }
        body["timestamp"] = _now()
        return {"statusUpdate": {"taskId": task_id, "contextId": context_id, "status": body}}

    def frame(data: dict[str, Any]) -> dict[str, Any]:
        return {
            "artifactUpdate": {
                "taskId": task_id,
                "contextId": context_id,
                "artifact": {
                    "artifactId": uuid.uuid4().hex,
                    "name": "tool-call",
                    "parts": [
                        {
                            "data": data,
                            "metadata": {"mimeType": MIME},
                            "mediaType": "application/json",
                        }
                    ],
                    "extensions": [URI],
                },
                "append": False,
                "lastChunk": False,
            }
        }

    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    history = {**message, "contextId": context_id, "taskId": task_id}
    await emit(
        {
            "task": {
                "id": task_id,
                "contextId": context_id,
                "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": _now()},
                "artifacts": [],
                "history": [history],
            }
        }
    )
    await emit(status("TASK_STATE_WORKING"))
    await emit(status("TASK_STATE_WORKING", "thinking"))
    for i in range(k):
        call_id = f"{task_id}:{i}"
        args = {"i": i, "t_emit": time.time(), "pad": pad}
        await emit(frame({"toolCallId": call_id, "name": TOOL, "phase": "started", "args": args}))
        if hold is not None:
            await asyncio.sleep(hold)
        result = {"i": i, "t_emit": time.time(), "pad": pad}
        await emit(
            frame({"toolCallId": call_id, "name": TOOL, "phase": "completed", "result": result})
        )
    answer = f"{k} tool calls done"
    await emit(
        {
            "artifactUpdate": {
                "taskId": task_id,
                "contextId": context_id,
                "artifact": {
                    "artifactId": uuid.uuid4().hex,
                    "name": "answer",
                    "parts": [{"text": answer}],
                },
                "append": False,
                "lastChunk": True,
            }
        }
    )
    await emit(status("TASK_STATE_COMPLETED", answer))
    await send({"type": "http.response.body", "body": b"", "more_body": False})
