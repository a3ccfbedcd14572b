"""The floor under an idle A2A stream on this site: a plain Django streaming response.

``POST /floor/`` takes the same ``bench hold=<S>`` SendStreamingMessage request as the A2A
endpoint and answers through the same handler, middleware and server, with a
``StreamingHttpResponse`` of its own: the Task event, one tool-call-v1 ``started`` frame, then
``asyncio.sleep(S)``. No task is stored, no agent runs, nothing is recorded: what a held
stream costs here is what Django's request and streaming response cost, whatever the app
does. The demo site's URLs follow it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from bench.raw_asgi import MIME, URI
from project.bench_agent import TOOL, parse
from project.urls import urlpatterns as site_urlpatterns


def _event(seq: int, rid: Any, result: dict[str, Any]) -> bytes:
    data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, separators=(",", ":"))
    return f"id: {seq}\ndata: {data}\n\n".encode()


async def _events(request: dict[str, Any]) -> AsyncIterator[bytes]:
    message = request["params"]["message"]
    _, pad, hold = parse("\n".join(p["text"] for p in message["parts"] if "text" in p))
    rid = request.get("id")
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
    yield _event(
        1,
        rid,
        {
            "task": {
                "id": task_id,
                "contextId": context_id,
                "status": {"state": "TASK_STATE_SUBMITTED"},
                "history": [{**message, "contextId": context_id, "taskId": task_id}],
            }
        },
    )
    data = {
        "toolCallId": f"{task_id}:0",
        "name": TOOL,
        "phase": "started",
        "args": {"i": 0, "t_emit": time.time(), "pad": "x" * pad},
    }
    part = {"data": data, "metadata": {"mimeType": MIME}, "mediaType": "application/json"}
    artifact = {"artifactId": uuid.uuid4().hex, "name": "tool-call", "parts": [part]}
    update = {
        "taskId": task_id,
        "contextId": context_id,
        "artifact": {**artifact, "extensions": [URI]},
    }
    yield _event(2, rid, {"artifactUpdate": update})
    await asyncio.sleep(hold or 0)


@csrf_exempt
async def floor(request: HttpRequest) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        _events(json.loads(request.body)), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


urlpatterns = [path("floor/", floor), *site_urlpatterns]
