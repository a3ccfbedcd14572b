"""The A2A wire layer: 1.0 models, the JSON-RPC envelope and errors, the 0.3 dialect, SSE.

Pure Python (stdlib + pydantic); nothing here imports Django or does I/O.
"""

from a2a_toolcall.protocol.jsonrpc import (
    A2AError,
    ErrorCode,
    JsonRpcRequest,
    error_response,
    parse_request,
    success_response,
)
from a2a_toolcall.protocol.models import (
    AgentCard,
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = [
    "A2AError",
    "AgentCard",
    "Artifact",
    "ErrorCode",
    "JsonRpcRequest",
    "Message",
    "Part",
    "Role",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "error_response",
    "parse_request",
    "success_response",
]
