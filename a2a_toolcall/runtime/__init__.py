"""The producer side: agents, what they yield, and the runtime that publishes it on the bus."""

from a2a_toolcall.runtime.events import (
    Agent,
    AgentError,
    AgentInput,
    AgentRejected,
    ArtifactUpdate,
    Event,
    InputRequest,
    Progress,
    Reply,
    Resume,
    ToolCall,
    ToolResult,
    UserAnswer,
    is_retry_safe,
)
from a2a_toolcall.runtime.narration import humanize
from a2a_toolcall.runtime.runner import (
    THINKING,
    Runtime,
    build_request,
    ensure_in_process_runtime,
    runs_in_process,
)

__all__ = [
    "THINKING",
    "Agent",
    "AgentError",
    "AgentInput",
    "AgentRejected",
    "ArtifactUpdate",
    "Event",
    "InputRequest",
    "Progress",
    "Reply",
    "Resume",
    "Runtime",
    "ToolCall",
    "ToolResult",
    "UserAnswer",
    "build_request",
    "ensure_in_process_runtime",
    "humanize",
    "is_retry_safe",
    "runs_in_process",
]
