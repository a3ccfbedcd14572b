"""An agent for the A2A conformance kit (a2aproject/a2a-tck, 1.0 line).

The kit drives behaviour with the message id's prefix (its ``scenarios/*.feature`` files); this
agent implements those scenarios with the plain executor interface. Serve it with
``A2A_DEMO_AGENT=tck`` (see docs/conformance.md).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncGenerator
from typing import Any

from a2a_toolcall.runtime import (
    AgentInput,
    AgentRejected,
    ArtifactUpdate,
    Event,
    InputRequest,
    Progress,
    Reply,
)

STREAMING_TIMEOUT = 2.0
FILE_PART = {
    "raw": base64.b64encode(b"tck").decode(),
    "mediaType": "text/plain",
    "filename": "output.txt",
}


async def tck_agent(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Behave as the kit's scenario for the message id's prefix asks."""
    prefix = task.message.message_id
    if prefix.startswith("tck-stream-artifact-chunked"):
        yield Progress("working")
        yield ArtifactUpdate([{"text": "chunk-1 "}], artifact_id="chunked", last_chunk=False)
        yield ArtifactUpdate([{"text": "chunk-2"}], artifact_id="chunked", append=True)
        yield Reply()
    elif prefix.startswith("test-resubscribe-message-id"):
        yield Progress("working")
        await asyncio.sleep(2 * STREAMING_TIMEOUT)
        yield Reply()
    elif prefix.startswith("tck-stream-artifact-text"):
        yield Progress("working")
        yield ArtifactUpdate([{"text": "Streamed text content"}])
        yield Reply()
    elif prefix.startswith("tck-stream-artifact-file"):
        yield Progress("working")
        yield ArtifactUpdate([FILE_PART])
        yield Reply()
    elif prefix.startswith("tck-stream-ordering-001"):
        yield Progress("working")
        yield ArtifactUpdate([{"text": "Ordered output"}])
        yield Reply()
    elif prefix.startswith("tck-artifact-file-url"):
        yield ArtifactUpdate(
            [
                {
                    "url": "https://example.com/output.txt",
                    "mediaType": "text/plain",
                    "filename": "output.txt",
                }
            ]
        )
        yield Reply()
    elif prefix.startswith("tck-input-required"):
        # Each answer whose message id asks for input again keeps the task waiting; any other
        # completes it (the kit's multi-turn history scenarios).
        answer = yield InputRequest("input required")
        while answer.message is not None and answer.message.message_id.startswith(
            "tck-input-required"
        ):
            answer = yield InputRequest("input required")
        yield Reply(text="Hello from TCK")
    elif prefix.startswith("tck-artifact-text"):
        yield ArtifactUpdate([{"text": "Generated text content"}])
        yield Reply()
    elif prefix.startswith("tck-artifact-file"):
        yield ArtifactUpdate([FILE_PART])
        yield Reply()
    elif prefix.startswith("tck-artifact-data"):
        yield ArtifactUpdate([{"data": {"key": "value", "count": 42}}])
        yield Reply()
    elif prefix.startswith("tck-reject-task"):
        raise AgentRejected("rejected")
    elif prefix.startswith("tck-stream-001"):
        yield Progress("working")
        yield ArtifactUpdate([{"text": "Stream hello from TCK"}])
        yield Reply()
    elif prefix.startswith("tck-stream-002"):
        yield Reply()
    elif prefix.startswith("tck-stream-003"):
        yield Progress("working")
        yield ArtifactUpdate([{"text": "Stream task lifecycle"}])
        yield Reply()
    elif prefix.startswith("tck-message-response"):
        yield Reply(text="Direct message response", as_message=True)
    else:  # tck-complete-task and anything else
        yield Reply(text="Hello from TCK")
