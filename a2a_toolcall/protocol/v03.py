"""Translation between A2A 1.0 wire models and the A2A 0.3 JSON dialect.

The server keeps one internal dialect (1.0 models) and translates at the edge: 0.3 requests
are turned into 1.0 params on the way in, 1.0 results into 0.3 JSON on the way out. The rules
follow the 0.3 JSON schema and match the official SDK's compatibility layer
(``a2a.compat.v0_3.conversions``), which the oracle tests check against:

- methods: ``message/send`` <-> ``SendMessage`` and so on (:data:`METHODS_FROM_V03`);
- results carry a ``kind`` (``task``, ``message``, ``status-update``, ``artifact-update``);
- parts are ``{"kind": "text" | "file" | "data"}``; 0.3 ``data`` must be an object, so a
  non-object 1.0 value travels as ``{"value": v}`` with ``metadata.data_part_compat = true``;
- states are lowercase-hyphenated (``input-required``); roles ``user``/``agent``;
- a status-update carries ``final`` (true on the event that ends the stream);
- ``configuration.blocking`` is the negation of ``returnImmediately``; a 0.3 ``historyLength``
  of 0 means "no limit" and is dropped.

Pure Python; no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic.alias_generators import to_camel

from a2a_toolcall.protocol.models import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SecurityScheme,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    WireModel,
)

__all__ = [
    "DATA_PART_COMPAT_KEY",
    "METHODS_FROM_V03",
    "METHODS_TO_V03",
    "V03TranslationError",
    "artifact_from_v03",
    "artifact_to_v03",
    "card_from_v03",
    "card_to_v03",
    "dual_card",
    "is_legacy_version",
    "message_from_v03",
    "message_to_v03",
    "params_from_v03",
    "params_to_v03",
    "part_from_v03",
    "part_to_v03",
    "push_config_to_v03",
    "result_from_v03",
    "send_message_response_to_v03",
    "state_from_v03",
    "state_to_v03",
    "status_from_v03",
    "status_to_v03",
    "stream_response_to_v03",
    "task_from_v03",
    "task_to_v03",
]

DATA_PART_COMPAT_KEY: Final = "data_part_compat"
"""Metadata flag marking a 0.3 data part that wraps a non-object 1.0 value as ``{"value": v}``."""

METHODS_FROM_V03: Final[Mapping[str, str]] = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}
"""0.3 method name -> 1.0 method name. 0.3 has no ``tasks/list``."""

METHODS_TO_V03: Final[Mapping[str, str]] = {v: k for k, v in METHODS_FROM_V03.items()}

_STATE_TO_V03: Final[Mapping[TaskState, str]] = {
    TaskState.UNSPECIFIED: "unknown",
    TaskState.SUBMITTED: "submitted",
    TaskState.WORKING: "working",
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.INPUT_REQUIRED: "input-required",
    TaskState.REJECTED: "rejected",
    TaskState.AUTH_REQUIRED: "auth-required",
}
_STATE_FROM_V03: Final[Mapping[str, TaskState]] = {v: k for k, v in _STATE_TO_V03.items()}


class V03TranslationError(ValueError):
    """0.3 input that cannot be expressed in 1.0; ``field`` names the offending member."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def is_legacy_version(version: str | None) -> bool:
    """True for a protocol version in [0.3, 1.0), e.g. ``0.3`` or ``0.3.0``."""
    if not version:
        return False
    try:
        numbers = tuple(int(p) for p in version.strip().split("."))
    except ValueError:
        return False
    return (0, 3) <= numbers < (1, 0)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _obj(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise V03TranslationError(field, f"expected an object, got {type(value).__name__}")
    return dict(value)


def _list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise V03TranslationError(field, f"expected an array, got {type(value).__name__}")
    return value


# --- states and roles ------------------------------------------------------------------------


def state_to_v03(state: TaskState) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``."""
    return _STATE_TO_V03[state]


def state_from_v03(state: Any, field: str = "state") -> TaskState:
    """``input-required`` -> ``TASK_STATE_INPUT_REQUIRED``."""
    try:
        return _STATE_FROM_V03[state]
    except (KeyError, TypeError):
        allowed = ", ".join(_STATE_FROM_V03)
        raise V03TranslationError(
            field, f"unknown task state {state!r} (one of {allowed})"
        ) from None


def _role_to_v03(role: Role) -> str:
    return "user" if role is Role.USER else "agent"


def _role_from_v03(role: Any, field: str) -> str:
    if role == "user":
        return Role.USER.value
    if role == "agent":
        return Role.AGENT.value
    raise V03TranslationError(field, f"role must be 'user' or 'agent', got {role!r}")


# --- parts, messages, artifacts --------------------------------------------------------------


def part_to_v03(part: Part) -> dict[str, Any]:
    """A 1.0 part as a 0.3 ``TextPart`` / ``FilePart`` / ``DataPart``."""
    metadata = dict(part.metadata) if part.metadata is not None else None
    kind = part.kind
    if kind == "text":
        out: dict[str, Any] = {"kind": "text", "text": part.text}
    elif kind == "data":
        data = part.data
        if not isinstance(data, dict):
            data = {"value": data}
            metadata = {**(metadata or {}), DATA_PART_COMPAT_KEY: True}
        out = {"kind": "data", "data": data}
    else:
        file: dict[str, Any] = {"bytes": part.raw} if kind == "raw" else {"uri": part.url}
        _put(file, "mimeType", part.media_type)
        _put(file, "name", part.filename)
        out = {"kind": "file", "file": file}
    _put(out, "metadata", metadata)
    return out


def _part_dict_from_v03(value: Any, field: str) -> dict[str, Any]:
    part = _obj(value, field)
    kind = part.get("kind")
    if kind is None:  # tolerate producers that omit the discriminator
        kind = "text" if "text" in part else "file" if "file" in part else "data"
    metadata = part.get("metadata")
    if metadata is not None:
        metadata = _obj(metadata, f"{field}.metadata")
    out: dict[str, Any]
    if kind == "text":
        out = {"text": part.get("text")}
    elif kind == "data":
        data = part.get("data")
        if metadata and metadata.get(DATA_PART_COMPAT_KEY):
            metadata = {k: v for k, v in metadata.items() if k != DATA_PART_COMPAT_KEY} or None
            data = _obj(data, f"{field}.data").get("value")
        elif not isinstance(data, Mapping):
            raise V03TranslationError(f"{field}.data", "a 0.3 data part holds a JSON object")
        out = {"data": data}
    elif kind == "file":
        file = _obj(part.get("file"), f"{field}.file")
        if "bytes" in file:
            out = {"raw": file["bytes"]}
        elif "uri" in file:
            out = {"url": file["uri"]}
        else:
            raise V03TranslationError(f"{field}.file", "a file holds 'bytes' or 'uri'")
        _put(out, "mediaType", file.get("mimeType"))
        _put(out, "filename", file.get("name"))
    else:
        raise V03TranslationError(
            f"{field}.kind", f"unknown part kind {kind!r} (one of text, file, data)"
        )
    _put(out, "metadata", metadata)
    return out


def part_from_v03(value: Any) -> Part:
    """A 0.3 part (JSON object) as a 1.0 :class:`Part`."""
    return Part.model_validate(_part_dict_from_v03(value, "part"))


def message_to_v03(message: Message) -> dict[str, Any]:
    """A 1.0 message as a 0.3 ``Message`` (``kind: "message"``)."""
    out: dict[str, Any] = {
        "kind": "message",
        "messageId": message.message_id,
        "role": _role_to_v03(message.role),
        "parts": [part_to_v03(p) for p in message.parts],
    }
    _put(out, "contextId", message.context_id)
    _put(out, "taskId", message.task_id)
    _put(out, "metadata", message.metadata)
    _put(out, "extensions", message.extensions)
    _put(out, "referenceTaskIds", message.reference_task_ids)
    return out


def _message_dict_from_v03(value: Any, field: str) -> dict[str, Any]:
    message = _obj(value, field)
    out: dict[str, Any] = {
        "messageId": message.get("messageId"),
        "role": _role_from_v03(message.get("role"), f"{field}.role"),
        "parts": [
            _part_dict_from_v03(p, f"{field}.parts[{i}]")
            for i, p in enumerate(_list(message.get("parts"), f"{field}.parts"))
        ],
    }
    for key in ("contextId", "taskId", "metadata", "extensions", "referenceTaskIds"):
        _put(out, key, message.get(key))
    return out


def message_from_v03(value: Any) -> Message:
    """A 0.3 message (JSON object) as a 1.0 :class:`Message`."""
    return Message.model_validate(_message_dict_from_v03(value, "message"))


def artifact_to_v03(artifact: Artifact) -> dict[str, Any]:
    """A 1.0 artifact as a 0.3 ``Artifact``."""
    out: dict[str, Any] = {
        "artifactId": artifact.artifact_id,
        "parts": [part_to_v03(p) for p in artifact.parts],
    }
    _put(out, "name", artifact.name)
    _put(out, "description", artifact.description)
    _put(out, "metadata", artifact.metadata)
    _put(out, "extensions", artifact.extensions)
    return out


def _artifact_dict_from_v03(value: Any, field: str) -> dict[str, Any]:
    artifact = _obj(value, field)
    out: dict[str, Any] = {
        "artifactId": artifact.get("artifactId"),
        "parts": [
            _part_dict_from_v03(p, f"{field}.parts[{i}]")
            for i, p in enumerate(_list(artifact.get("parts"), f"{field}.parts"))
        ],
    }
    for key in ("name", "description", "metadata", "extensions"):
        _put(out, key, artifact.get(key))
    return out


def artifact_from_v03(value: Any) -> Artifact:
    """A 0.3 artifact (JSON object) as a 1.0 :class:`Artifact`."""
    return Artifact.model_validate(_artifact_dict_from_v03(value, "artifact"))


# --- status, task, events --------------------------------------------------------------------


def status_to_v03(status: TaskStatus) -> dict[str, Any]:
    """A 1.0 task status as a 0.3 ``TaskStatus``."""
    out: dict[str, Any] = {"state": state_to_v03(status.state)}
    if status.message is not None:
        out["message"] = message_to_v03(status.message)
    _put(out, "timestamp", status.timestamp)
    return out


def _status_dict_from_v03(value: Any, field: str) -> dict[str, Any]:
    status = _obj(value, field)
    out: dict[str, Any] = {"state": state_from_v03(status.get("state"), f"{field}.state").value}
    if status.get("message") is not None:
        out["message"] = _message_dict_from_v03(status["message"], f"{field}.message")
    _put(out, "timestamp", status.get("timestamp"))
    return out


def status_from_v03(value: Any) -> TaskStatus:
    """A 0.3 task status (JSON object) as a 1.0 :class:`TaskStatus`."""
    return TaskStatus.model_validate(_status_dict_from_v03(value, "status"))


def task_to_v03(task: Task) -> dict[str, Any]:
    """A 1.0 task as a 0.3 ``Task`` (``kind: "task"``; ``contextId`` is required in 0.3)."""
    out: dict[str, Any] = {
        "kind": "task",
        "id": task.id,
        "contextId": task.context_id or "",
        "status": status_to_v03(task.status),
    }
    if task.history is not None:
        out["history"] = [message_to_v03(m) for m in task.history]
    if task.artifacts is not None:
        out["artifacts"] = [artifact_to_v03(a) for a in task.artifacts]
    _put(out, "metadata", task.metadata)
    return out


def _task_dict_from_v03(value: Any, field: str) -> dict[str, Any]:
    task = _obj(value, field)
    out: dict[str, Any] = {
        "id": task.get("id"),
        "status": _status_dict_from_v03(task.get("status"), f"{field}.status"),
    }
    if task.get("contextId"):  # 0.3 requires one; "" stands for none, as in proto3
        out["contextId"] = task["contextId"]
    if task.get("history") is not None:
        out["history"] = [
            _message_dict_from_v03(m, f"{field}.history[{i}]")
            for i, m in enumerate(_list(task["history"], f"{field}.history"))
        ]
    if task.get("artifacts") is not None:
        out["artifacts"] = [
            _artifact_dict_from_v03(a, f"{field}.artifacts[{i}]")
            for i, a in enumerate(_list(task["artifacts"], f"{field}.artifacts"))
        ]
    _put(out, "metadata", task.get("metadata"))
    return out


def task_from_v03(value: Any) -> Task:
    """A 0.3 task (JSON object) as a 1.0 :class:`Task`."""
    return Task.model_validate(_task_dict_from_v03(value, "task"))


def _status_update_to_v03(event: TaskStatusUpdateEvent, final: bool | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "status-update",
        "taskId": event.task_id,
        "contextId": event.context_id,
        "status": status_to_v03(event.status),
        "final": event.status.state.is_terminal if final is None else final,
    }
    _put(out, "metadata", event.metadata)
    return out


def _artifact_update_to_v03(event: TaskArtifactUpdateEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "artifact-update",
        "taskId": event.task_id,
        "contextId": event.context_id,
        "artifact": artifact_to_v03(event.artifact),
    }
    _put(out, "append", event.append)
    _put(out, "lastChunk", event.last_chunk)
    _put(out, "metadata", event.metadata)
    return out


def stream_response_to_v03(
    response: StreamResponse, *, final: bool | None = None
) -> dict[str, Any]:
    """One streamed 1.0 result as the 0.3 ``result`` object.

    ``final`` sets a status-update's ``final`` flag; by default it is true for terminal states.
    A server that also ends the stream on an interrupted state passes ``final=True`` there.
    """
    if response.task is not None:
        return task_to_v03(response.task)
    if response.message is not None:
        return message_to_v03(response.message)
    if response.status_update is not None:
        return _status_update_to_v03(response.status_update, final)
    assert response.artifact_update is not None  # StreamResponse holds exactly one payload
    return _artifact_update_to_v03(response.artifact_update)


def send_message_response_to_v03(response: SendMessageResponse) -> dict[str, Any]:
    """The ``SendMessage`` result (task or message) as the 0.3 ``message/send`` result."""
    if response.task is not None:
        return task_to_v03(response.task)
    assert response.message is not None  # SendMessageResponse holds exactly one payload
    return message_to_v03(response.message)


def result_from_v03(value: Any) -> StreamResponse:
    """A 0.3 result object (any ``kind``) as a 1.0 :class:`StreamResponse`."""
    result = _obj(value, "result")
    kind = result.get("kind")
    if kind == "task":
        return StreamResponse.model_validate({"task": _task_dict_from_v03(result, "result")})
    if kind == "message":
        return StreamResponse.model_validate({"message": _message_dict_from_v03(result, "result")})
    if kind == "status-update":
        event: dict[str, Any] = {
            "taskId": result.get("taskId"),
            "contextId": result.get("contextId"),
            "status": _status_dict_from_v03(result.get("status"), "result.status"),
        }
        _put(event, "metadata", result.get("metadata"))
        return StreamResponse.model_validate({"statusUpdate": event})
    if kind == "artifact-update":
        event = {
            "taskId": result.get("taskId"),
            "contextId": result.get("contextId"),
            "artifact": _artifact_dict_from_v03(result.get("artifact"), "result.artifact"),
        }
        for key in ("append", "lastChunk", "metadata"):
            _put(event, key, result.get(key))
        return StreamResponse.model_validate({"artifactUpdate": event})
    raise V03TranslationError(
        "result.kind",
        f"unknown result kind {kind!r} (one of task, message, status-update, artifact-update)",
    )


# --- request params --------------------------------------------------------------------------


def params_from_v03(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The params of a 0.3 request (by its 0.3 method name) as 1.0 params JSON.

    The result is validated by the caller with the 1.0 params model, so errors keep pointing
    at the client's own member names. Push-notification and card methods pass through.
    """
    if method in ("message/send", "message/stream"):
        out: dict[str, Any] = {"message": _message_dict_from_v03(params.get("message"), "message")}
        config = params.get("configuration")
        if config is not None:
            config = _obj(config, "configuration")
            conf: dict[str, Any] = {}
            _put(conf, "acceptedOutputModes", config.get("acceptedOutputModes"))
            if config.get("historyLength"):  # 0.3: 0 means no limit
                conf["historyLength"] = config["historyLength"]
            if config.get("blocking") is not None:
                conf["returnImmediately"] = not config["blocking"]
            if config.get("pushNotificationConfig") is not None:
                conf["taskPushNotificationConfig"] = _push_config_from_v03(
                    config["pushNotificationConfig"], "configuration.pushNotificationConfig"
                )
            out["configuration"] = conf
        _put(out, "metadata", params.get("metadata"))
        return out
    if method == "tasks/get":
        out = {"id": params.get("id")}
        if params.get("historyLength"):
            out["historyLength"] = params["historyLength"]
        return out
    if method == "tasks/cancel":
        out = {"id": params.get("id")}
        _put(out, "metadata", params.get("metadata"))
        return out
    if method == "tasks/resubscribe":
        return {"id": params.get("id")}
    if method == "tasks/pushNotificationConfig/set":
        out = _push_config_from_v03(params.get("pushNotificationConfig"), "pushNotificationConfig")
        _put(out, "taskId", params.get("taskId"))
        return out
    if method in ("tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/delete"):
        # 0.3: {id: the task's id, pushNotificationConfigId?}; without one, the config
        # created without an id (whose id is the task's, as in the official SDK).
        out = {"taskId": params.get("id")}
        config_id = params.get("pushNotificationConfigId")
        out["id"] = config_id if config_id is not None else params.get("id")
        return out
    if method == "tasks/pushNotificationConfig/list":
        return {"taskId": params.get("id")}
    return dict(params)


def _push_config_from_v03(value: Any, field: str) -> dict[str, Any]:
    config = _obj(value, field)
    out: dict[str, Any] = {"url": config.get("url")}
    _put(out, "id", config.get("id"))
    _put(out, "token", config.get("token"))
    auth = config.get("authentication")
    if auth is not None:
        auth = _obj(auth, f"{field}.authentication")
        schemes = _list(auth.get("schemes", []), f"{field}.authentication.schemes")
        out["authentication"] = {"scheme": schemes[0] if schemes else ""}
        _put(out["authentication"], "credentials", auth.get("credentials"))
    return out


def _push_config_to_v03(config: TaskPushNotificationConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"url": config.url}
    _put(out, "id", config.id)
    _put(out, "token", config.token)
    if config.authentication is not None:
        out["authentication"] = {"schemes": [config.authentication.scheme]}
        _put(out["authentication"], "credentials", config.authentication.credentials)
    return out


def push_config_to_v03(config: TaskPushNotificationConfig) -> dict[str, Any]:
    """A 1.0 ``TaskPushNotificationConfig`` as 0.3's ``{taskId, pushNotificationConfig}``."""
    return {"taskId": config.task_id or "", "pushNotificationConfig": _push_config_to_v03(config)}


def params_to_v03(method: str, params: WireModel) -> dict[str, Any]:
    """1.0 params (by their 1.0 method name) as the params of the 0.3 request."""
    if isinstance(params, SendMessageRequest):
        out: dict[str, Any] = {"message": message_to_v03(params.message)}
        config = params.configuration
        if config is not None:
            conf: dict[str, Any] = {"blocking": not config.return_immediately}
            _put(conf, "acceptedOutputModes", config.accepted_output_modes)
            _put(conf, "historyLength", config.history_length)
            if config.task_push_notification_config is not None:
                conf["pushNotificationConfig"] = _push_config_to_v03(
                    config.task_push_notification_config
                )
            out["configuration"] = conf
        _put(out, "metadata", params.metadata)
        return out
    if isinstance(params, GetTaskRequest):
        out = {"id": params.id}
        _put(out, "historyLength", params.history_length)
        return out
    if isinstance(params, CancelTaskRequest):
        out = {"id": params.id}
        _put(out, "metadata", params.metadata)
        return out
    if isinstance(params, SubscribeToTaskRequest):
        return {"id": params.id}
    raise ValueError(f"{method} has no 0.3 equivalent in this translator")


# --- agent card ------------------------------------------------------------------------------

_SCHEME_TYPES: Final = {
    "api_key_security_scheme": "apiKey",
    "http_auth_security_scheme": "http",
    "oauth2_security_scheme": "oauth2",
    "open_id_connect_security_scheme": "openIdConnect",
    "mtls_security_scheme": "mutualTLS",
}
_SCHEME_MEMBERS: Final = {kind: to_camel(attr) for attr, kind in _SCHEME_TYPES.items()}


def _security_to_v03(requirements: Any) -> list[dict[str, list[str]]] | None:
    if requirements is None:
        return None
    return [
        {name: list(scopes.values or []) for name, scopes in (req.schemes or {}).items()}
        for req in requirements
    ]


def _security_from_v03(value: Any, field: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    return [
        {"schemes": {name: {"list": scopes} for name, scopes in _obj(req, field).items()}}
        for req in _list(value, field)
    ]


def _scheme_to_v03(scheme: SecurityScheme) -> dict[str, Any]:
    for attr, kind in _SCHEME_TYPES.items():
        value = getattr(scheme, attr)
        if value is None:
            continue
        body = value.to_wire()
        if kind == "apiKey":
            body["in"] = body.pop("location")
        elif kind == "oauth2":
            # 0.3 has no device-code flow; like the official SDK, it is dropped.
            body["flows"] = {k: v for k, v in body["flows"].items() if k != "deviceCode"}
        return {"type": kind, **body}
    raise AssertionError("SecurityScheme holds exactly one scheme")  # pragma: no cover


def _scheme_from_v03(value: Any, field: str) -> dict[str, Any]:
    scheme = _obj(value, field)
    kind = scheme.pop("type", None)
    member = _SCHEME_MEMBERS.get(kind) if isinstance(kind, str) else None
    if member is None:
        raise V03TranslationError(f"{field}.type", f"unknown security scheme type {kind!r}")
    if kind == "apiKey":
        scheme["location"] = scheme.pop("in", None)
    return {member: scheme}


def card_to_v03(card: AgentCard) -> dict[str, Any]:
    """The 0.3 ``AgentCard`` for a 1.0 card: its first 0.3 interface becomes ``url``.

    Raises ValueError when the card lists no interface with a 0.3 ``protocolVersion``.
    """
    legacy = [i for i in card.supported_interfaces if is_legacy_version(i.protocol_version)]
    if not legacy:
        raise ValueError(
            "the card lists no interface with a 0.3 protocolVersion; add one to serve 0.3 clients"
        )
    primary = legacy[0]
    caps = card.capabilities
    capabilities: dict[str, Any] = {}
    _put(capabilities, "streaming", caps.streaming)
    _put(capabilities, "pushNotifications", caps.push_notifications)
    if caps.extensions is not None:
        capabilities["extensions"] = [e.to_wire() for e in caps.extensions]
    out: dict[str, Any] = {
        "name": card.name,
        "description": card.description,
        "version": card.version,
        "url": primary.url,
        "preferredTransport": primary.protocol_binding,
        "protocolVersion": primary.protocol_version,
        "capabilities": capabilities,
        "defaultInputModes": list(card.default_input_modes),
        "defaultOutputModes": list(card.default_output_modes),
        "skills": [_skill_to_v03(s.to_wire(), s.security_requirements) for s in card.skills],
    }
    if len(legacy) > 1:
        out["additionalInterfaces"] = [
            {"url": i.url, "transport": i.protocol_binding} for i in legacy[1:]
        ]
    if card.provider is not None:
        out["provider"] = card.provider.to_wire()
    _put(out, "documentationUrl", card.documentation_url)
    _put(out, "iconUrl", card.icon_url)
    _put(out, "supportsAuthenticatedExtendedCard", caps.extended_agent_card)
    if card.security_schemes is not None:
        out["securitySchemes"] = {k: _scheme_to_v03(v) for k, v in card.security_schemes.items()}
    _put(out, "security", _security_to_v03(card.security_requirements))
    if card.signatures is not None:
        out["signatures"] = [s.to_wire() for s in card.signatures]
    return out


def _skill_to_v03(skill: dict[str, Any], requirements: Any) -> dict[str, Any]:
    skill.pop("securityRequirements", None)
    _put(skill, "security", _security_to_v03(requirements))
    return skill


def card_from_v03(value: Any) -> AgentCard:
    """A 0.3 agent card (JSON object) as a 1.0 :class:`AgentCard`."""
    card = _obj(value, "card")
    interfaces = [
        {
            "url": card.get("url"),
            "protocolBinding": card.get("preferredTransport") or "JSONRPC",
            "protocolVersion": card.get("protocolVersion") or "0.3",
        }
    ]
    for i, extra in enumerate(card.get("additionalInterfaces") or []):
        extra = _obj(extra, f"card.additionalInterfaces[{i}]")
        interfaces.append(
            {
                "url": extra.get("url"),
                "protocolBinding": extra.get("transport"),
                "protocolVersion": "0.3",
            }
        )
    caps = _obj(card.get("capabilities", {}), "card.capabilities")
    capabilities: dict[str, Any] = {}
    for key in ("streaming", "pushNotifications", "extensions"):
        _put(capabilities, key, caps.get(key))
    _put(capabilities, "extendedAgentCard", card.get("supportsAuthenticatedExtendedCard"))
    out: dict[str, Any] = {
        "name": card.get("name"),
        "description": card.get("description"),
        "version": card.get("version"),
        "supportedInterfaces": interfaces,
        "capabilities": capabilities,
        "defaultInputModes": card.get("defaultInputModes"),
        "defaultOutputModes": card.get("defaultOutputModes"),
        "skills": [],
    }
    for i, raw_skill in enumerate(_list(card.get("skills", []), "card.skills")):
        skill = _obj(raw_skill, f"card.skills[{i}]")
        security = skill.pop("security", None)
        _put(
            skill,
            "securityRequirements",
            _security_from_v03(security, f"card.skills[{i}].security"),
        )
        out["skills"].append(skill)
    for key in ("provider", "documentationUrl", "iconUrl", "signatures"):
        _put(out, key, card.get(key))
    if card.get("securitySchemes") is not None:
        out["securitySchemes"] = {
            name: _scheme_from_v03(s, f"card.securitySchemes.{name}")
            for name, s in _obj(card["securitySchemes"], "card.securitySchemes").items()
        }
    _put(out, "securityRequirements", _security_from_v03(card.get("security"), "card.security"))
    return AgentCard.model_validate(out)


def dual_card(card: AgentCard) -> dict[str, Any]:
    """The card JSON both dialects can read: the 1.0 card plus the 0.3-only members.

    0.3 members are added only where the 1.0 card has no member of that name (recursively into
    objects and positionally into arrays), as the official SDK does, so 1.0 readers see an
    unchanged card and 0.3 readers find ``url``, ``preferredTransport``, ``protocolVersion``.
    """
    merged = card.to_wire()
    try:
        legacy = card_to_v03(card)
    except ValueError:
        return merged
    if not legacy.get("supportsAuthenticatedExtendedCard"):
        legacy.pop("supportsAuthenticatedExtendedCard", None)  # as the official SDK serves it
    _merge_missing(merged, legacy)
    return merged


def _merge_missing(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if key not in into:
            into[key] = value
        elif isinstance(value, Mapping) and isinstance(into[key], dict):
            _merge_missing(into[key], value)
        elif isinstance(value, list) and isinstance(into[key], list):
            for mine, theirs in zip(into[key], value, strict=False):
                if isinstance(mine, dict) and isinstance(theirs, Mapping):
                    _merge_missing(mine, theirs)
