"""The demo project's ASGI application with Python's allocations traced (tracemalloc), for
tests that measure what the server holds: ``GET /__traced__`` answers the bytes Python has
allocated now, after a garbage collection.

Python's heap is where a server buffers a stream its client does not read (daphne's Twisted
buffers, asyncio's, the app's queues); the process's RSS also moves with the C allocator's
high-water marks, which these tests do not measure.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

tracemalloc.start(1)

from project.asgi import application as project_application  # noqa: E402


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] == "/__traced__":
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
        body = json.dumps({"current": current}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})
        return
    await project_application(scope, receive, send)
