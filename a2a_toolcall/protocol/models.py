"""A2A 1.0 wire models: the proto3-JSON shapes of ``specification/a2a.proto`` (package lf.a2a.v1).

Pure Python (pydantic only). Every model is a frozen value; JSON names are camelCase, enums
travel as their proto names (``TASK_STATE_WORKING``), absent optional fields are omitted
(never ``null``). Parsing is tolerant in the proto3-JSON way: unknown members are ignored,
snake_case member names and integer enum values are accepted. Output only ever carries the
fields the spec defines, so it parses into the official SDK's protobuf types with unknown
fields disallowed (``tests/test_protocol_oracle.py`` proves it).

Serialisation sits on the per-frame hot path: ``to_json()`` is pydantic-core's Rust
serialiser with no Python hooks, except on :class:`Part`, which needs one to keep an explicit
``"data": null``.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Artifact",
    "AuthenticationInfo",
    "AuthorizationCodeOAuthFlow",
    "CancelTaskRequest",
    "ClientCredentialsOAuthFlow",
    "DeleteTaskPushNotificationConfigRequest",
    "DeviceCodeOAuthFlow",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "HTTPAuthSecurityScheme",
    "ImplicitOAuthFlow",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "Message",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlows",
    "OpenIdConnectSecurityScheme",
    "Part",
    "PasswordOAuthFlow",
    "Role",
    "SecurityRequirement",
    "SecurityScheme",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SendMessageResponse",
    "StreamResponse",
    "StringList",
    "SubscribeToTaskRequest",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskPushNotificationConfig",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "Timestamp",
    "WireModel",
    "format_timestamp",
    "parse_timestamp",
]

JsonObject = dict[str, JsonValue]


class WireModel(BaseModel):
    """Base of every A2A 1.0 wire model: frozen, camelCase on the wire, empties omitted."""

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # JSON has no NaN/Infinity; proto3 JSON rejects them too. Fail at the edge.
        allow_inf_nan=False,
        ser_json_inf_nan="null",
    )

    def to_wire(self) -> dict[str, Any]:
        """The proto3-JSON object for this value, as plain Python data."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> bytes:
        """The proto3-JSON text for this value, compact UTF-8 on one line."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True)

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        """Validate proto3-JSON data (already decoded from JSON) into this model."""
        return cls.model_validate(data)

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        """Validate proto3-JSON text into this model."""
        return cls.model_validate_json(data)


class _ProtoEnum(StrEnum):
    """A proto enum carried by name; its proto number is also accepted on input."""

    _numbers: ClassVar[dict[int, str]]

    @classmethod
    def _missing_(cls, value: object) -> _ProtoEnum | None:
        # proto3 JSON parsers must accept the integer value of an enum as well as its name.
        if isinstance(value, int) and not isinstance(value, bool):
            name = cls._numbers.get(value)
            if name is not None:
                return cls(name)
        return None


class TaskState(_ProtoEnum):
    """``lf.a2a.v1.TaskState``."""

    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    @property
    def is_terminal(self) -> bool:
        """True for the states a task never leaves (spec: completed, failed, canceled, rejected)."""
        return self in _TERMINAL_STATES

    @property
    def is_interrupted(self) -> bool:
        """True for the states that wait on the client (input or auth required)."""
        return self in _INTERRUPTED_STATES


TaskState._numbers = {
    0: "TASK_STATE_UNSPECIFIED",
    1: "TASK_STATE_SUBMITTED",
    2: "TASK_STATE_WORKING",
    3: "TASK_STATE_COMPLETED",
    4: "TASK_STATE_FAILED",
    5: "TASK_STATE_CANCELED",
    6: "TASK_STATE_INPUT_REQUIRED",
    7: "TASK_STATE_REJECTED",
    8: "TASK_STATE_AUTH_REQUIRED",
}
_TERMINAL_STATES = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
_INTERRUPTED_STATES = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})


class Role(_ProtoEnum):
    """``lf.a2a.v1.Role``."""

    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


Role._numbers = {0: "ROLE_UNSPECIFIED", 1: "ROLE_USER", 2: "ROLE_AGENT"}


# --- scalar wire types -----------------------------------------------------------------------

# RFC 3339 as proto3 JSON writes google.protobuf.Timestamp: "Z" or an offset, 0-9 fraction digits.
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def format_timestamp(moment: datetime) -> str:
    """Render an aware datetime as a proto3-JSON Timestamp (UTC, ``Z``, millisecond precision)."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware; use datetime.now(UTC)")
    # isoformat, not strftime: four-digit years below 1000 too ("0999-...", as RFC 3339 has
    # them; strftime writes "999-..."), and it is the faster of the two.
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def parse_timestamp(value: str) -> datetime:
    """Parse a proto3-JSON Timestamp into an aware datetime (sub-microsecond digits dropped)."""
    text = value.strip()
    if not _RFC3339.match(text):
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}")
    head, _, tail = text.partition(".")
    if tail:
        digits = re.match(r"\d+", tail)
        assert digits is not None  # guaranteed by _RFC3339
        frac = digits.group(0)
        text = f"{head}.{frac[:6].ljust(6, '0')}{tail[len(frac) :]}"
    return datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))


def _coerce_timestamp(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_timestamp(value)
    return value


def _check_timestamp(value: str) -> str:
    try:
        if not _RFC3339.match(value):
            raise ValueError(value)
        # The calendar too (month 13 or second 99 match the pattern), and a UTC equivalent.
        parse_timestamp(value).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(
            "must be an RFC 3339 timestamp such as '2026-01-31T12:00:00.000Z'"
        ) from None
    return value


Timestamp = Annotated[str, BeforeValidator(_coerce_timestamp), AfterValidator(_check_timestamp)]


def _reject_bool(value: Any) -> Any:
    # proto3 JSON writes int32 as a number (or its decimal text); true is not one.
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    return value


Int32 = Annotated[int, BeforeValidator(_reject_bool), Field(ge=-(2**31), le=2**31 - 1)]
"""A proto3 ``int32``: a number (or its text) within 32 bits; booleans refused."""
"""A ``google.protobuf.Timestamp`` kept as its exact RFC 3339 text (a datetime is accepted too)."""


def _check_base64(value: str) -> str:
    # proto3 JSON accepts standard or URL-safe base64, padded or not.
    text = value.replace("-", "+").replace("_", "/")
    try:
        base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("must be base64 (standard or URL-safe alphabet)") from None
    return value


def _coerce_bytes(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


Base64 = Annotated[str, BeforeValidator(_coerce_bytes), AfterValidator(_check_base64)]
"""A proto ``bytes`` field, kept as its base64 text (``bytes`` are accepted and encoded)."""


# --- content ---------------------------------------------------------------------------------

_CONTENT_FIELDS = ("text", "raw", "url", "data")


class Part(WireModel):
    """``Part``: exactly one of ``text``, ``raw`` (base64), ``url`` or ``data`` (any JSON)."""

    text: str | None = None
    raw: Base64 | None = None
    url: str | None = None
    data: JsonValue = None
    metadata: JsonObject | None = None
    filename: str | None = None
    media_type: str | None = None

    @model_validator(mode="after")
    def _one_content(self) -> Self:
        present = [
            name
            for name in _CONTENT_FIELDS
            if getattr(self, name) is not None
            or (name == "data" and "data" in self.model_fields_set)
        ]
        if len(present) != 1:
            found = ", ".join(present) if present else "none"
            raise ValueError(f"a Part holds exactly one of text, raw, url, data (found: {found})")
        return self

    @model_serializer(mode="wrap")
    def _keep_null_data(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        out = handler(self)
        # `data` is a google.protobuf.Value: JSON null is a legitimate value, distinct from absent.
        if self.data is None and "data" in self.model_fields_set and isinstance(out, dict):
            out["data"] = None
        return out

    @property
    def raw_bytes(self) -> bytes | None:
        """The decoded ``raw`` content, or None when this is not a raw part."""
        if self.raw is None:
            return None
        text = self.raw.replace("-", "+").replace("_", "/")
        return base64.b64decode(text + "=" * (-len(text) % 4))

    @property
    def kind(self) -> str:
        """Which content member is set: ``text``, ``raw``, ``url`` or ``data``."""
        for name in ("text", "raw", "url"):
            if getattr(self, name) is not None:
                return name
        return "data"


class Message(WireModel):
    """``Message``: one turn of the conversation between user and agent."""

    message_id: str
    context_id: str | None = None
    task_id: str | None = None
    role: Role
    parts: list[Part] = Field(default_factory=list)
    metadata: JsonObject | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


class Artifact(WireModel):
    """``Artifact``: an output of the task, made of parts."""

    artifact_id: str
    name: str | None = None
    description: str | None = None
    parts: list[Part] = Field(default_factory=list)
    metadata: JsonObject | None = None
    extensions: list[str] | None = None


class TaskStatus(WireModel):
    """``TaskStatus``: the state, an optional message about it, and when it was entered."""

    state: TaskState
    message: Message | None = None
    timestamp: Timestamp | None = None


class Task(WireModel):
    """``Task``: the unit of work the agent performs for a message."""

    id: str
    context_id: str | None = None
    status: TaskStatus
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    metadata: JsonObject | None = None


class TaskStatusUpdateEvent(WireModel):
    """``TaskStatusUpdateEvent``: a streamed change of the task's status (1.0 has no ``final``)."""

    task_id: str
    context_id: str
    status: TaskStatus
    metadata: JsonObject | None = None


class TaskArtifactUpdateEvent(WireModel):
    """``TaskArtifactUpdateEvent``: a streamed artifact or artifact chunk."""

    task_id: str
    context_id: str
    artifact: Artifact
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: JsonObject | None = None


def _exactly_one(model: BaseModel, names: tuple[str, ...], what: str) -> None:
    present = [name for name in names if getattr(model, name) is not None]
    if len(present) != 1:
        options = ", ".join(to_camel(name) for name in names)
        found = ", ".join(to_camel(name) for name in present) if present else "none"
        raise ValueError(f"{what} holds exactly one of {options} (found: {found})")


class StreamResponse(WireModel):
    """``StreamResponse``: one streamed result, exactly one of its four payloads."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None

    @model_validator(mode="after")
    def _one_payload(self) -> Self:
        _exactly_one(
            self, ("task", "message", "status_update", "artifact_update"), "a StreamResponse"
        )
        return self


class SendMessageResponse(WireModel):
    """``SendMessageResponse``: the task, or a direct message reply."""

    task: Task | None = None
    message: Message | None = None

    @model_validator(mode="after")
    def _one_payload(self) -> Self:
        _exactly_one(self, ("task", "message"), "a SendMessageResponse")
        return self


# --- push notifications (declared so requests parse; this server does not support them) -------


class AuthenticationInfo(WireModel):
    """``AuthenticationInfo`` for push notification delivery."""

    scheme: str
    credentials: str | None = None


class TaskPushNotificationConfig(WireModel):
    """``TaskPushNotificationConfig``."""

    tenant: str | None = None
    id: str | None = None
    task_id: str | None = None
    url: str
    token: str | None = None
    authentication: AuthenticationInfo | None = None


# --- requests --------------------------------------------------------------------------------


class SendMessageConfiguration(WireModel):
    """``SendMessageConfiguration``."""

    accepted_output_modes: list[str] | None = None
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: Int32 | None = None
    return_immediately: bool | None = None


class SendMessageRequest(WireModel):
    """Params of ``SendMessage`` and ``SendStreamingMessage``."""

    tenant: str | None = None
    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: JsonObject | None = None


class GetTaskRequest(WireModel):
    """Params of ``GetTask``."""

    tenant: str | None = None
    id: str
    history_length: Int32 | None = None


class ListTasksRequest(WireModel):
    """Params of ``ListTasks``."""

    tenant: str | None = None
    context_id: str | None = None
    status: TaskState | None = None
    page_size: Int32 | None = None
    page_token: str | None = None
    history_length: Int32 | None = None
    status_timestamp_after: Timestamp | None = None
    include_artifacts: bool | None = None


class ListTasksResponse(WireModel):
    """Result of ``ListTasks``; all four members are always written (the spec requires them)."""

    tasks: list[Task] = Field(default_factory=list)
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


class CancelTaskRequest(WireModel):
    """Params of ``CancelTask``."""

    tenant: str | None = None
    id: str
    metadata: JsonObject | None = None


class SubscribeToTaskRequest(WireModel):
    """Params of ``SubscribeToTask``."""

    tenant: str | None = None
    id: str


class GetTaskPushNotificationConfigRequest(WireModel):
    """Params of ``GetTaskPushNotificationConfig``."""

    tenant: str | None = None
    task_id: str
    id: str


class DeleteTaskPushNotificationConfigRequest(WireModel):
    """Params of ``DeleteTaskPushNotificationConfig``."""

    tenant: str | None = None
    task_id: str
    id: str


class ListTaskPushNotificationConfigsRequest(WireModel):
    """Params of ``ListTaskPushNotificationConfigs``."""

    tenant: str | None = None
    task_id: str
    page_size: Int32 | None = None
    page_token: str | None = None


class ListTaskPushNotificationConfigsResponse(WireModel):
    """Result of ``ListTaskPushNotificationConfigs``."""

    configs: list[TaskPushNotificationConfig] | None = None
    next_page_token: str | None = None


class GetExtendedAgentCardRequest(WireModel):
    """Params of ``GetExtendedAgentCard``."""

    tenant: str | None = None


# --- agent card ------------------------------------------------------------------------------


class AgentInterface(WireModel):
    """``AgentInterface``: where and how the agent is reached (binding ``JSONRPC`` here)."""

    url: str
    protocol_binding: str
    tenant: str | None = None
    protocol_version: str


class AgentProvider(WireModel):
    """``AgentProvider``: the organisation behind the agent."""

    url: str
    organization: str


class AgentExtension(WireModel):
    """``AgentExtension``: an extension the agent supports, declared in its card."""

    uri: str
    description: str | None = None
    required: bool | None = None
    params: JsonObject | None = None


class AgentCapabilities(WireModel):
    """``AgentCapabilities``."""

    streaming: bool | None = None
    push_notifications: bool | None = None
    extensions: list[AgentExtension] | None = None
    extended_agent_card: bool | None = None


class StringList(WireModel):
    """``StringList``: the scopes of one scheme in a security requirement."""

    values: list[str] | None = Field(default=None, alias="list")


class SecurityRequirement(WireModel):
    """``SecurityRequirement``: scheme name to required scopes."""

    schemes: dict[str, StringList] | None = None


class AgentSkill(WireModel):
    """``AgentSkill``: one capability the agent advertises."""

    id: str
    name: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    examples: list[str] | None = None
    input_modes: list[str] | None = None
    output_modes: list[str] | None = None
    security_requirements: list[SecurityRequirement] | None = None


class AgentCardSignature(WireModel):
    """``AgentCardSignature``: a JWS signature over the card."""

    protected: str
    signature: str
    header: JsonObject | None = None


class APIKeySecurityScheme(WireModel):
    """``APIKeySecurityScheme``."""

    description: str | None = None
    location: str
    name: str


class HTTPAuthSecurityScheme(WireModel):
    """``HTTPAuthSecurityScheme``."""

    description: str | None = None
    scheme: str
    bearer_format: str | None = None


class AuthorizationCodeOAuthFlow(WireModel):
    """``AuthorizationCodeOAuthFlow``."""

    authorization_url: str
    token_url: str
    refresh_url: str | None = None
    scopes: dict[str, str] = Field(default_factory=dict)
    pkce_required: bool | None = None


class ClientCredentialsOAuthFlow(WireModel):
    """``ClientCredentialsOAuthFlow``."""

    token_url: str
    refresh_url: str | None = None
    scopes: dict[str, str] = Field(default_factory=dict)


class ImplicitOAuthFlow(WireModel):
    """``ImplicitOAuthFlow`` (deprecated in the spec)."""

    authorization_url: str | None = None
    refresh_url: str | None = None
    scopes: dict[str, str] | None = None


class PasswordOAuthFlow(WireModel):
    """``PasswordOAuthFlow`` (deprecated in the spec)."""

    token_url: str | None = None
    refresh_url: str | None = None
    scopes: dict[str, str] | None = None


class DeviceCodeOAuthFlow(WireModel):
    """``DeviceCodeOAuthFlow``."""

    device_authorization_url: str
    token_url: str
    refresh_url: str | None = None
    scopes: dict[str, str] = Field(default_factory=dict)


class OAuthFlows(WireModel):
    """``OAuthFlows``: exactly one flow."""

    authorization_code: AuthorizationCodeOAuthFlow | None = None
    client_credentials: ClientCredentialsOAuthFlow | None = None
    implicit: ImplicitOAuthFlow | None = None
    password: PasswordOAuthFlow | None = None
    device_code: DeviceCodeOAuthFlow | None = None

    @model_validator(mode="after")
    def _one_flow(self) -> Self:
        _exactly_one(
            self,
            ("authorization_code", "client_credentials", "implicit", "password", "device_code"),
            "OAuthFlows",
        )
        return self


class OAuth2SecurityScheme(WireModel):
    """``OAuth2SecurityScheme``."""

    description: str | None = None
    flows: OAuthFlows
    oauth2_metadata_url: str | None = None


class OpenIdConnectSecurityScheme(WireModel):
    """``OpenIdConnectSecurityScheme``."""

    description: str | None = None
    open_id_connect_url: str


class MutualTlsSecurityScheme(WireModel):
    """``MutualTlsSecurityScheme``."""

    description: str | None = None


class SecurityScheme(WireModel):
    """``SecurityScheme``: exactly one scheme."""

    api_key_security_scheme: APIKeySecurityScheme | None = None
    http_auth_security_scheme: HTTPAuthSecurityScheme | None = None
    oauth2_security_scheme: OAuth2SecurityScheme | None = None
    open_id_connect_security_scheme: OpenIdConnectSecurityScheme | None = None
    mtls_security_scheme: MutualTlsSecurityScheme | None = None

    @model_validator(mode="after")
    def _one_scheme(self) -> Self:
        _exactly_one(
            self,
            (
                "api_key_security_scheme",
                "http_auth_security_scheme",
                "oauth2_security_scheme",
                "open_id_connect_security_scheme",
                "mtls_security_scheme",
            ),
            "a SecurityScheme",
        )
        return self


class AgentCard(WireModel):
    """``AgentCard``: the self-description served at ``/.well-known/agent-card.json``."""

    name: str
    description: str = ""
    supported_interfaces: list[AgentInterface] = Field(default_factory=list)
    provider: AgentProvider | None = None
    version: str
    documentation_url: str | None = None
    capabilities: AgentCapabilities
    security_schemes: dict[str, SecurityScheme] | None = None
    security_requirements: list[SecurityRequirement] | None = None
    default_input_modes: list[str] = Field(default_factory=list)
    default_output_modes: list[str] = Field(default_factory=list)
    skills: list[AgentSkill] = Field(default_factory=list)
    signatures: list[AgentCardSignature] | None = None
    icon_url: str | None = None
