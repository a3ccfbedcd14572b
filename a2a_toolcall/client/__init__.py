"""A Python client for any A2A server, with live tool-call-v1 timelines.

::

    from a2a_toolcall.client import A2AClient, ToolFrame

    async with A2AClient("http://127.0.0.1:8000/") as client:
        run = client.stream("what is 6*7 and the time in Tokyo")
        async for event in run:
            if isinstance(event, ToolFrame):
                print(event.call.name, event.call.state)
        print(run.state.answer_text)

Pure Python over ``httpx`` (install ``a2a-toolcall[client]``); no Django. The events and the
run state live in :mod:`a2a_toolcall.client.events`, the HTTP side in
:mod:`a2a_toolcall.client.http`, the terminal client in :mod:`a2a_toolcall.client.terminal`.
"""

from a2a_toolcall.client.errors import (
    A2AConnectionError,
    A2AHTTPError,
    ClientError,
    NotAnA2AServerError,
    ProtocolViolationError,
)
from a2a_toolcall.client.events import (
    ArtifactUpdate,
    ClientEvent,
    DirectMessage,
    Finished,
    InputRequest,
    Narration,
    Reconnecting,
    RunState,
    StatusChange,
    TaskSnapshot,
    ToolFrame,
)
from a2a_toolcall.contract import ToolInvocation, ToolState, ToolTimeline
from a2a_toolcall.protocol.jsonrpc import A2AError

try:
    from a2a_toolcall.client.http import A2AClient, TaskRun, user_message
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the installed extras
    if exc.name != "httpx":
        raise
    raise ModuleNotFoundError(
        "a2a_toolcall.client needs httpx: pip install 'a2a-toolcall[client]'", name="httpx"
    ) from exc

__all__ = [
    "A2AClient",
    "A2AConnectionError",
    "A2AError",
    "A2AHTTPError",
    "ArtifactUpdate",
    "ClientError",
    "ClientEvent",
    "DirectMessage",
    "Finished",
    "InputRequest",
    "Narration",
    "NotAnA2AServerError",
    "ProtocolViolationError",
    "Reconnecting",
    "RunState",
    "StatusChange",
    "TaskRun",
    "TaskSnapshot",
    "ToolFrame",
    "ToolInvocation",
    "ToolState",
    "ToolTimeline",
    "user_message",
]
