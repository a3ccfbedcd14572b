"""The tool-call-v1 contract: frames, their DataPart, and a timeline reducer.

One frame describes one event in the life of one tool invocation; frames sharing a
``toolCallId`` describe that invocation (``started`` -> ``completed`` | ``failed``). A frame
travels as an A2A DataPart whose ``metadata.mimeType`` is :data:`TOOL_CALL_V1_MIME_TYPE`
(``mediaType`` stays ``application/json``, the transport type), inside an artifact-update
named ``tool-call`` on the live stream. See docs/wire.md.

Pure Python: stdlib and pydantic only. No Django, no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from a2a_toolcall.protocol.models import Message, Part

__all__ = [
    "CANCELLED_ERROR",
    "JSON_MEDIA_TYPE",
    "TOOL_CALL_ARTIFACT_NAME",
    "TOOL_CALL_V1_MIME_TYPE",
    "TOOL_CALL_V1_URI",
    "Contradiction",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallFrame",
    "ToolCallParseError",
    "ToolCallStarted",
    "ToolInvocation",
    "ToolState",
    "ToolTimeline",
    "emit_tool_call",
    "frame_from_wire",
    "is_cancelled_error",
    "parse_tool_call",
]

TOOL_CALL_V1_URI: Final = "https://proto-labs.ai/a2a/ext/tool-call-v1"
"""The extension URI an agent card declares and clients activate with ``A2A-Extensions``."""

TOOL_CALL_V1_MIME_TYPE: Final = "application/vnd.protolabs.tool-call-v1+json"
"""The DataPart discriminator, carried in ``metadata.mimeType``."""

JSON_MEDIA_TYPE: Final = "application/json"
"""The part's transport-level ``mediaType``; the discriminator is not put here."""

TOOL_CALL_ARTIFACT_NAME: Final = "tool-call"
"""The name of the artifact each frame is streamed in."""


class _Frame(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="ignore",  # forward compatible: a newer producer may add members
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        allow_inf_nan=False,
    )

    tool_call_id: str = Field(alias="toolCallId", min_length=1)
    """Stable id correlating the frames of one invocation."""
    name: str = Field(min_length=1)
    """The tool's name, e.g. ``github_create_issue``."""

    def to_wire(self) -> dict[str, Any]:
        """The frame as the JSON object on the wire (absent optional members omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> bytes:
        """:meth:`to_wire` as compact UTF-8 JSON text."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True)


class ToolCallStarted(_Frame):
    """The agent's reasoning step requested this tool; ``args`` are the parsed call arguments."""

    phase: Literal["started"] = "started"
    args: JsonValue = None


class ToolCallCompleted(_Frame):
    """The tool returned; ``result`` is its output."""

    phase: Literal["completed"] = "completed"
    result: JsonValue = None


class ToolCallFailed(_Frame):
    """The tool raised or reported an error; ``error`` is the message."""

    phase: Literal["failed"] = "failed"
    error: str | None = None


ToolCallFrame: TypeAlias = Annotated[
    ToolCallStarted | ToolCallCompleted | ToolCallFailed, Field(discriminator="phase")
]
"""A tool-call-v1 frame: the union discriminated on ``phase``."""

_FRAME: TypeAdapter[ToolCallStarted | ToolCallCompleted | ToolCallFailed] = TypeAdapter(
    ToolCallFrame
)
_FRAME_TYPES = (ToolCallStarted, ToolCallCompleted, ToolCallFailed)


class ToolCallParseError(ValueError):
    """A part claims to be tool-call-v1 (by MIME or metadata key) but its payload is invalid."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where = where
        self.problems = problems
        super().__init__(f"{where}: " + "; ".join(problems))


def frame_from_wire(payload: Any) -> ToolCallStarted | ToolCallCompleted | ToolCallFailed:
    """Validate a frame payload (a dict as on the wire) or return a frame unchanged.

    Raises :class:`ToolCallParseError` naming each offending field, e.g.
    ``frame: toolCallId: Field required``.
    """
    if isinstance(payload, _FRAME_TYPES):
        return payload
    try:
        return _FRAME.validate_python(payload)
    except ValidationError as exc:
        raise ToolCallParseError("frame", _describe(exc)) from None


def _describe(exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        # Drop the union tag from locations ("started.args" -> "args") for a readable path.
        loc = [str(p) for p in err["loc"] if p not in {"started", "completed", "failed"}]
        problems.append(f"{'.'.join(loc) or '(payload)'}: {err['msg']}")
    return problems


def emit_tool_call(
    frame: ToolCallStarted | ToolCallCompleted | ToolCallFailed | Mapping[str, Any],
) -> Part:
    """Build the A2A 1.0 DataPart carrying ``frame`` (a frame model or a dict, validated).

    On the wire: ``{"data": {...frame...}, "metadata": {"mimeType": TOOL_CALL_V1_MIME_TYPE},
    "mediaType": "application/json"}``.
    """
    # A frame model was validated when it was made (and is frozen); a dict is validated here.
    valid = (
        frame
        if isinstance(frame, ToolCallStarted | ToolCallCompleted | ToolCallFailed)
        else frame_from_wire(frame)
    )
    return Part(
        data=valid.to_wire(),
        metadata={"mimeType": TOOL_CALL_V1_MIME_TYPE},
        media_type=JSON_MEDIA_TYPE,
    )


def parse_tool_call(
    parts: Any, *, strict: bool = False
) -> ToolCallStarted | ToolCallCompleted | ToolCallFailed | None:
    """The first valid tool-call-v1 frame among ``parts``, or None.

    ``parts`` is a list of parts (our :class:`Part` models or dicts) or a message (a
    :class:`Message` or a dict with ``parts``/``metadata``). Understood shapes:

    - A2A 1.0: ``{"data": frame, "metadata": {"mimeType": MIME}, "mediaType": ...}``;
    - A2A 0.3: ``{"kind": "data", "data": frame, "metadata": {"mimeType": MIME}}``;
    - the JS SDK's in-memory form: ``{"content": {"$case": "data", "value": frame}, ...}``;
    - the URI-keyed metadata form of ``protolabs-a2a`` 0.3: ``metadata[TOOL_CALL_V1_URI] = frame``
      on a message (checked before its parts) or on a part.

    Lenient by default: anything malformed (wrong types, invalid payload under the right MIME)
    is skipped and the function never raises. With ``strict=True`` a part or message that
    claims to be tool-call-v1 but does not validate raises :class:`ToolCallParseError`, and so
    does input that is neither a list of parts nor a message.
    """
    try:
        return _scan(parts, strict)
    except ToolCallParseError:
        if strict:
            raise
        return None
    except Exception:  # the lenient parser promises never to raise, whatever the input
        if strict:
            raise
        return None


def _scan(parts: Any, strict: bool) -> ToolCallStarted | ToolCallCompleted | ToolCallFailed | None:
    if isinstance(parts, Message):
        parts = parts.to_wire()
    if isinstance(parts, Mapping):
        # A message: the URI-keyed metadata form comes first, then its parts.
        found = _from_uri_metadata(parts.get("metadata"), "message", strict)
        if found is not None:
            return found
        parts = parts.get("parts")
        if parts is None:
            return None
    if isinstance(parts, str | bytes) or not isinstance(parts, Iterable):
        if strict:
            raise ToolCallParseError(
                "parts", [f"expected a list of parts or a message, got {type(parts).__name__}"]
            )
        return None
    for index, part in enumerate(parts):
        found = _from_part(part, f"parts[{index}]", strict)
        if found is not None:
            return found
    return None


def _from_part(
    part: Any, where: str, strict: bool
) -> ToolCallStarted | ToolCallCompleted | ToolCallFailed | None:
    if isinstance(part, Part):
        if part.metadata is None or part.metadata.get("mimeType") != TOOL_CALL_V1_MIME_TYPE:
            return _from_uri_metadata(part.metadata, where, strict)
        return _validated(part.data, f"{where}.data", strict)
    if not isinstance(part, Mapping):
        return None
    metadata = part.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("mimeType") != TOOL_CALL_V1_MIME_TYPE:
        return _from_uri_metadata(metadata, where, strict)
    if "data" in part:
        return _validated(part["data"], f"{where}.data", strict)
    content = part.get("content")
    if isinstance(content, Mapping) and content.get("$case") == "data":
        return _validated(content.get("value"), f"{where}.content.value", strict)
    if strict:
        raise ToolCallParseError(where, ["a tool-call-v1 part must be a data part"])
    return None


def _from_uri_metadata(
    metadata: Any, where: str, strict: bool
) -> ToolCallStarted | ToolCallCompleted | ToolCallFailed | None:
    if not isinstance(metadata, Mapping) or TOOL_CALL_V1_URI not in metadata:
        return None
    return _validated(metadata[TOOL_CALL_V1_URI], f"{where}.metadata[{TOOL_CALL_V1_URI}]", strict)


def _validated(
    payload: Any, where: str, strict: bool
) -> ToolCallStarted | ToolCallCompleted | ToolCallFailed | None:
    try:
        return _FRAME.validate_python(payload)
    except ValidationError as exc:
        if strict:
            raise ToolCallParseError(where, _describe(exc)) from None
        return None


# --- the timeline reducer --------------------------------------------------------------------

CANCELLED_ERROR: Final = "cancelled"
"""The error of an invocation closed by its task's stop (docs/agents.md, "Failing, cancel"): the
runtime sends a ``failed`` frame whose error is this, or this plus ``": <reason>"`` (a time
budget, a shutdown)."""


def is_cancelled_error(error: str | None) -> bool:
    """True for the error of a ``failed`` frame that means "cancelled", not "the tool failed".

    The one rule, shared by the clients and the admin: such a call was stopped with its task,
    so it is shown as cancelled and not counted as a failure.
    """
    return error is not None and (
        error == CANCELLED_ERROR or error.startswith(f"{CANCELLED_ERROR}: ")
    )


class ToolState(enum.StrEnum):
    """Where one invocation stands."""

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Two frames of one invocation that disagree; the first-seen outcome is kept."""

    tool_call_id: str
    kept: str
    ignored: str
    detail: str


@dataclass(slots=True)
class ToolInvocation:
    """One tool invocation as stitched from its frames.

    ``started_at``/``finished_at`` are the timestamps given with the ``started`` and terminal
    frames (e.g. the runtime's emission time); ``first_seen``/``last_seen`` those of the first
    and last frame of any kind. ``has_started`` is False while only the outcome has arrived.
    """

    tool_call_id: str
    name: str
    order: int
    args: JsonValue = None
    state: ToolState = ToolState.PENDING
    result: JsonValue = None
    error: str | None = None
    has_started: bool = False
    started_at: float | None = None
    finished_at: float | None = None
    first_seen: float | None = None
    last_seen: float | None = None
    frames: int = 0
    contradictions: list[Contradiction] = field(default_factory=list)

    @property
    def is_finished(self) -> bool:
        """True once a ``completed`` or ``failed`` frame arrived."""
        return self.state is not ToolState.PENDING

    @property
    def is_cancelled(self) -> bool:
        """True when it failed only because its task was stopped (:func:`is_cancelled_error`)."""
        return self.state is ToolState.FAILED and is_cancelled_error(self.error)

    @property
    def duration(self) -> float | None:
        """Seconds from the ``started`` frame to the outcome, when both carried timestamps."""
        if self.started_at is None or self.finished_at is None:
            return None
        return max(0.0, self.finished_at - self.started_at)


class ToolTimeline:
    """Reduces frames, in arrival order, into :class:`ToolInvocation` rows keyed by toolCallId.

    Tolerant by design, as a live client must be: an outcome may arrive before its start, a
    frame may arrive twice (ignored), and contradictory frames (completed then failed, a
    different result, a different name) are recorded in :attr:`contradictions` rather than
    raised; the first-seen outcome is kept.
    """

    def __init__(self, frames: Iterable[Any] = ()) -> None:
        self._calls: dict[str, ToolInvocation] = {}
        self.contradictions: list[Contradiction] = []
        for frame in frames:
            self.feed(frame)

    def feed(self, frame: Any, at: float | None = None) -> ToolInvocation:
        """Apply one frame (a frame model or its wire dict) observed at time ``at``."""
        valid = frame_from_wire(frame)
        call = self._calls.get(valid.tool_call_id)
        if call is None:
            call = ToolInvocation(valid.tool_call_id, valid.name, order=len(self._calls))
            self._calls[valid.tool_call_id] = call
        elif valid.name != call.name:
            self._contradict(call, call.name, valid.name, "frames name different tools")
        call.frames += 1
        if at is not None:
            if call.first_seen is None:
                call.first_seen = at
            call.last_seen = at
        if isinstance(valid, ToolCallStarted):
            self._start(call, valid, at)
        else:
            self._finish(call, valid, at)
        return call

    def _start(self, call: ToolInvocation, frame: ToolCallStarted, at: float | None) -> None:
        if call.has_started:
            if frame.args != call.args:
                self._contradict(call, "started", "started", "a second start with other args")
            return
        call.has_started = True
        call.args = frame.args
        call.started_at = at

    def _finish(
        self, call: ToolInvocation, frame: ToolCallCompleted | ToolCallFailed, at: float | None
    ) -> None:
        if call.is_finished:
            same = (
                frame.result == call.result
                if isinstance(frame, ToolCallCompleted)
                else frame.error == call.error
            )
            if frame.phase != call.state.value:
                self._contradict(call, call.state.value, frame.phase, "two different outcomes")
            elif not same:
                self._contradict(
                    call,
                    call.state.value,
                    frame.phase,
                    "the outcome was repeated with a different payload",
                )
            return
        if isinstance(frame, ToolCallCompleted):
            call.state = ToolState.COMPLETED
            call.result = frame.result
        else:
            call.state = ToolState.FAILED
            call.error = frame.error
        call.finished_at = at

    def _contradict(self, call: ToolInvocation, kept: str, ignored: str, detail: str) -> None:
        found = Contradiction(call.tool_call_id, kept, ignored, detail)
        call.contradictions.append(found)
        self.contradictions.append(found)

    def __iter__(self) -> Iterator[ToolInvocation]:
        return iter(self._calls.values())

    def __len__(self) -> int:
        return len(self._calls)

    def __getitem__(self, tool_call_id: str) -> ToolInvocation:
        return self._calls[tool_call_id]

    def __contains__(self, tool_call_id: object) -> bool:
        return tool_call_id in self._calls

    def get(self, tool_call_id: str) -> ToolInvocation | None:
        """The invocation with this id, or None."""
        return self._calls.get(tool_call_id)

    @property
    def pending(self) -> list[ToolInvocation]:
        """Invocations still running (no outcome yet), in first-seen order."""
        return [c for c in self._calls.values() if c.state is ToolState.PENDING]

    @property
    def completed(self) -> list[ToolInvocation]:
        """Invocations that completed, in first-seen order."""
        return [c for c in self._calls.values() if c.state is ToolState.COMPLETED]

    @property
    def failed(self) -> list[ToolInvocation]:
        """Invocations that failed, in first-seen order (the cancelled ones too)."""
        return [c for c in self._calls.values() if c.state is ToolState.FAILED]

    @property
    def cancelled(self) -> list[ToolInvocation]:
        """Invocations their task's stop closed (:attr:`ToolInvocation.is_cancelled`)."""
        return [c for c in self._calls.values() if c.is_cancelled]
