"""JSON-RPC 2.0 envelope and the A2A error model (spec sections 5.4 and 9.5).

Two halves, as in h11: :class:`A2AError` and its subclasses are errors *the peer* caused (bad
JSON, unknown method, missing task) and become JSON-RPC error responses; :class:`TypeError` /
:class:`ValueError` raised by these helpers mean the *caller* misused the library.

In A2A 1.0 ``error.data`` is an array of ``google.rpc`` details whose first entry is an
``ErrorInfo`` (reason in UPPER_SNAKE_CASE, domain ``a2a-protocol.org``, string metadata); invalid
params add a ``google.rpc.BadRequest`` listing the field violations. The 0.3 dialect has no such
rule, so there ``data`` carries the metadata object (or is omitted).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError

__all__ = [
    "A2A_ERROR_DOMAIN",
    "BAD_REQUEST_TYPE",
    "ERROR_INFO_TYPE",
    "JSONRPC_VERSION",
    "MAX_JSON_DEPTH",
    "A2AError",
    "ContentTypeNotSupportedError",
    "ErrorCode",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "FieldViolation",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "JsonRpcRequest",
    "MethodNotFoundError",
    "PermissionDeniedError",
    "PushNotificationNotSupportedError",
    "RequestId",
    "ResourceExhaustedError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnauthenticatedError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "error_from_wire",
    "error_response",
    "parse_request",
    "request_id_of",
    "success_response",
    "success_response_json",
]

JSONRPC_VERSION: Final = "2.0"
ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE: Final = "type.googleapis.com/google.rpc.BadRequest"
A2A_ERROR_DOMAIN: Final = "a2a-protocol.org"

RequestId = str | int | float | None
Dialect = Literal["1.0", "0.3"]


class ErrorCode(IntEnum):
    """JSON-RPC error codes: the standard five and A2A's -32001..-32009."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    TASK_NOT_FOUND = -32001
    TASK_NOT_CANCELABLE = -32002
    PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
    UNSUPPORTED_OPERATION = -32004
    CONTENT_TYPE_NOT_SUPPORTED = -32005
    INVALID_AGENT_RESPONSE = -32006
    EXTENDED_AGENT_CARD_NOT_CONFIGURED = -32007
    EXTENSION_SUPPORT_REQUIRED = -32008
    VERSION_NOT_SUPPORTED = -32009
    # Server-defined (JSON-RPC reserves -32000..-32099 for servers), sent with HTTP 401, 403
    # and 429; the reasons are google.rpc's.
    UNAUTHENTICATED = -32041
    PERMISSION_DENIED = -32043
    RESOURCE_EXHAUSTED = -32029

    @property
    def reason(self) -> str:
        """The ``ErrorInfo.reason``: the error type in UPPER_SNAKE_CASE without "Error"."""
        return self.name


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One entry of a ``google.rpc.BadRequest``: which field, and what is wrong with it."""

    field: str
    description: str


class A2AError(Exception):
    """An error the peer caused; it becomes a JSON-RPC error response, never an HTTP 500.

    ``metadata`` lands in ``ErrorInfo.metadata`` (a ``map<string, string>``, so values are
    stringified); ``violations`` become a ``google.rpc.BadRequest`` detail.
    """

    code: int = ErrorCode.INTERNAL_ERROR
    default_message: str = "Internal error"
    http_status: int = 200
    """The HTTP status of the response carrying it (JSON-RPC errors travel with 200, except
    the refusals of access control)."""

    def __init__(
        self,
        message: str | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
        violations: Sequence[FieldViolation] = (),
        code: int | None = None,
    ) -> None:
        if code is not None:
            self.code = code
        self.message = message or self.default_message
        self.metadata: dict[str, str] = {
            str(key): value if isinstance(value, str) else json.dumps(value, default=str)
            for key, value in (metadata or {}).items()
        }
        self.violations = tuple(violations)
        self.headers: dict[str, str] = {}
        """HTTP headers for the response carrying it (``WWW-Authenticate``, ``Retry-After``)."""
        self.request_id: RequestId = None
        """The id of the request that caused it, when known and valid (for its response)."""
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, metadata={self.metadata!r})"

    @property
    def reason(self) -> str:
        """``ErrorInfo.reason``: ``UNKNOWN_ERROR`` for a code A2A does not define."""
        try:
            return ErrorCode(self.code).reason
        except ValueError:
            return "UNKNOWN_ERROR"

    def details(self) -> list[dict[str, Any]]:
        """The 1.0 ``error.data`` array: an ``ErrorInfo``, then a ``BadRequest`` if any."""
        out: list[dict[str, Any]] = [
            {
                "@type": ERROR_INFO_TYPE,
                "reason": self.reason,
                "domain": A2A_ERROR_DOMAIN,
                "metadata": dict(self.metadata),
            }
        ]
        if self.violations:
            out.append(
                {
                    "@type": BAD_REQUEST_TYPE,
                    "fieldViolations": [
                        {"field": v.field, "description": v.description} for v in self.violations
                    ],
                }
            )
        return out

    def to_error_object(self, dialect: Dialect = "1.0") -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this error in the given dialect."""
        error: dict[str, Any] = {"code": int(self.code), "message": self.message}
        if dialect == "1.0":
            error["data"] = self.details()
        elif self.metadata or self.violations:
            data: dict[str, Any] = dict(self.metadata)
            if self.violations:
                data["fieldViolations"] = [
                    {"field": v.field, "description": v.description} for v in self.violations
                ]
            error["data"] = data
        return error


class JSONParseError(A2AError):
    """-32700: the body is not JSON."""

    code = ErrorCode.PARSE_ERROR
    default_message = "Invalid JSON payload"


class InvalidRequestError(A2AError):
    """-32600: JSON, but not a JSON-RPC 2.0 request object."""

    code = ErrorCode.INVALID_REQUEST
    default_message = "Request payload validation error"


class MethodNotFoundError(A2AError):
    """-32601: no such method in the requested protocol version."""

    code = ErrorCode.METHOD_NOT_FOUND
    default_message = "Method not found"


class InvalidParamsError(A2AError):
    """-32602: the method's params do not validate."""

    code = ErrorCode.INVALID_PARAMS
    default_message = "Invalid parameters"

    @classmethod
    def from_validation_error(
        cls, exc: ValidationError, *, prefix: str = "params"
    ) -> InvalidParamsError:
        """Name every offending field (``params.message.parts[0].text``) from pydantic's errors."""
        violations = [
            FieldViolation(_location(prefix, err["loc"]), err["msg"]) for err in exc.errors()
        ]
        first = violations[0] if violations else FieldViolation(prefix, "invalid")
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        return cls(
            f"Invalid parameters: {first.field}: {first.description}{more}", violations=violations
        )


class InternalError(A2AError):
    """-32603: the server failed; details stay in the server log."""

    code = ErrorCode.INTERNAL_ERROR
    default_message = "Internal error"


class TaskNotFoundError(A2AError):
    """-32001: no task with that id (or not visible to the caller)."""

    code = ErrorCode.TASK_NOT_FOUND
    default_message = "Task not found"


class TaskNotCancelableError(A2AError):
    """-32002: the task is already in a terminal state."""

    code = ErrorCode.TASK_NOT_CANCELABLE
    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(A2AError):
    """-32003: this agent does not send push notifications."""

    code = ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED
    default_message = "Push notifications are not supported"


class UnsupportedOperationError(A2AError):
    """-32004: the operation is not supported by this agent."""

    code = ErrorCode.UNSUPPORTED_OPERATION
    default_message = "This operation is not supported"


class ContentTypeNotSupportedError(A2AError):
    """-32005: wrong request Content-Type, or a part media type the agent cannot take."""

    code = ErrorCode.CONTENT_TYPE_NOT_SUPPORTED
    default_message = "Incompatible content types"


class InvalidAgentResponseError(A2AError):
    """-32006: the agent produced something that is not a valid A2A response."""

    code = ErrorCode.INVALID_AGENT_RESPONSE
    default_message = "Invalid agent response"


class ExtendedAgentCardNotConfiguredError(A2AError):
    """-32007: no extended agent card is configured."""

    code = ErrorCode.EXTENDED_AGENT_CARD_NOT_CONFIGURED
    default_message = "Extended agent card is not configured"


class ExtensionSupportRequiredError(A2AError):
    """-32008: the agent requires an extension the client did not activate."""

    code = ErrorCode.EXTENSION_SUPPORT_REQUIRED
    default_message = "Extension support required"


class VersionNotSupportedError(A2AError):
    """-32009: the ``A2A-Version`` the client asked for is not served here."""

    code = ErrorCode.VERSION_NOT_SUPPORTED
    default_message = "Version not supported"


class UnauthenticatedError(A2AError):
    """No credentials, or credentials that were not accepted (HTTP 401)."""

    code = ErrorCode.UNAUTHENTICATED
    default_message = "Authentication required"
    http_status = 401


class PermissionDeniedError(A2AError):
    """The caller is known but may not use this agent (HTTP 403)."""

    code = ErrorCode.PERMISSION_DENIED
    default_message = "Permission denied"
    http_status = 403


class ResourceExhaustedError(A2AError):
    """Too many requests or running tasks for this caller (HTTP 429)."""

    code = ErrorCode.RESOURCE_EXHAUSTED
    default_message = "Too many requests"
    http_status = 429


_ERRORS_BY_CODE: dict[int, type[A2AError]] = {
    cls.code: cls
    for cls in (
        JSONParseError,
        InvalidRequestError,
        MethodNotFoundError,
        InvalidParamsError,
        InternalError,
        TaskNotFoundError,
        TaskNotCancelableError,
        PushNotificationNotSupportedError,
        UnsupportedOperationError,
        ContentTypeNotSupportedError,
        InvalidAgentResponseError,
        ExtendedAgentCardNotConfiguredError,
        ExtensionSupportRequiredError,
        VersionNotSupportedError,
        UnauthenticatedError,
        PermissionDeniedError,
        ResourceExhaustedError,
    )
}


def error_from_wire(error: Any) -> A2AError:
    """Rebuild the typed error from a JSON-RPC ``error`` member received from a server."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return InvalidAgentResponseError(f"malformed JSON-RPC error object: {error!r:.200}")
    cls = _ERRORS_BY_CODE.get(error["code"], A2AError)
    message = error.get("message")
    metadata: dict[str, Any] = {}
    violations: list[FieldViolation] = []
    data = error.get("data")
    if isinstance(data, list):  # 1.0: google.rpc details
        for detail in data:
            if not isinstance(detail, dict):
                continue
            if detail.get("@type") == ERROR_INFO_TYPE and isinstance(detail.get("metadata"), dict):
                metadata.update(detail["metadata"])
            elif detail.get("@type") == BAD_REQUEST_TYPE:
                violations += _violations(detail.get("fieldViolations"))
    elif isinstance(data, dict):  # 0.3: a plain object
        metadata.update({k: v for k, v in data.items() if k != "fieldViolations"})
        violations += _violations(data.get("fieldViolations"))
    # An application-defined code is kept as is rather than reported as -32603.
    return cls(
        message if isinstance(message, str) else None,
        metadata=metadata,
        violations=violations,
        code=None if cls is not A2AError else error["code"],
    )


def _violations(value: Any) -> list[FieldViolation]:
    if not isinstance(value, list):
        return []
    return [
        FieldViolation(str(v.get("field", "")), str(v.get("description", "")))
        for v in value
        if isinstance(v, dict)
    ]


def _location(prefix: str, loc: Sequence[int | str]) -> str:
    path = prefix
    for item in loc:
        if isinstance(item, int):
            path += f"[{item}]"
        elif item.startswith(("function-", "tagged-union[")) or item in {"json-or-python"}:
            # pydantic internals naming a validator, not a field.
            continue
        else:
            path += f".{item}"
    return path


# --- requests --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonRpcRequest:
    """A parsed JSON-RPC 2.0 request. ``has_id`` is False for a notification (no ``id``)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    id: RequestId = None
    has_id: bool = True


MAX_JSON_DEPTH: Final = 64
"""How deeply a request's JSON may nest (objects and arrays). An A2A request needs about ten
levels; metadata may add some. Deeper requests are refused before they are parsed."""

_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def parse_request(body: bytes | str | Any) -> JsonRpcRequest:
    """Parse a request body (bytes/str, or already-decoded JSON) into a request.

    Raises :class:`JSONParseError` for a body that is not JSON (not UTF-8, a syntax error, NaN
    or Infinity) and :class:`InvalidRequestError` for JSON that is not a single JSON-RPC 2.0
    request (A2A does not use batches), nests deeper than :data:`MAX_JSON_DEPTH`, or whose id or
    method is not valid (a number that is not finite, text with a lone surrogate). Strings with
    lone surrogates or numbers that are not finite inside ``params`` are
    :class:`InvalidParamsError`, naming where. Params must be an object (A2A methods take named
    params); a missing ``params`` is an empty object. Every error carries the request's id when
    it is valid (``error.request_id``), else None.
    """
    if isinstance(body, bytes | bytearray | str):
        if isinstance(body, bytes | bytearray):
            try:
                text = bytes(body).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JSONParseError(
                    f"Invalid JSON payload: not UTF-8 (byte {exc.start}: {exc.reason})",
                    metadata={"offset": exc.start},
                ) from None
        else:
            text = body
        _check_depth(text)
        try:
            obj = json.loads(text, parse_constant=_reject_constant)
        except RecursionError:  # pragma: no cover - _check_depth stops these first
            raise JSONParseError(
                f"Invalid JSON payload: nested deeper than {MAX_JSON_DEPTH} levels"
            ) from None
        except ValueError as exc:
            raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    else:
        obj = body
    if not isinstance(obj, dict):
        kind = "a batch (array)" if isinstance(obj, list) else type(obj).__name__
        raise InvalidRequestError(
            f"Request payload validation error: expected a JSON-RPC request object, got {kind}"
        )
    request_id = obj.get("id")
    if "id" in obj and not _is_valid_id(request_id):
        raise InvalidRequestError(
            "Request payload validation error: 'id' must be a string, a number or null "
            "(finite, and text without lone surrogates)",
            metadata={"field": "id"},
        )
    try:
        if obj.get("jsonrpc") != JSONRPC_VERSION:
            raise InvalidRequestError(
                "Request payload validation error: 'jsonrpc' must be exactly \"2.0\"",
                metadata={"field": "jsonrpc"},
            )
        method = obj.get("method")
        if not isinstance(method, str) or not method or not _valid_text(method):
            raise InvalidRequestError(
                "Request payload validation error: 'method' must be a non-empty string",
                metadata={"field": "method"},
            )
        params = obj.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise InvalidRequestError(
                "Request payload validation error: 'params' must be an object",
                metadata={"field": "params"},
            )
        _check_values(params, "params")
    except A2AError as error:
        error.request_id = request_id
        raise
    return JsonRpcRequest(method=method, params=params, id=request_id, has_id="id" in obj)


def _check_depth(text: str) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH`, without parsing it (Python's
    parser recurses: 100,000 levels would exhaust its stack)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return  # cannot be deeper than that: the common case, one pass in C
    depth = 0
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise InvalidRequestError(
                    f"Request payload validation error: JSON nested deeper than "
                    f"{MAX_JSON_DEPTH} levels (at character {token.start()})",
                    metadata={"offset": token.start(), "limit": MAX_JSON_DEPTH},
                )
        elif char in "]}":
            depth -= 1


def _valid_text(text: str) -> bool:
    """No lone surrogates (JSON's \\ud800 escapes can make them; they are not Unicode text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_values(value: Any, where: str) -> None:
    """Every string (key or value) valid Unicode and every number finite, in ``value``; else
    :class:`InvalidParamsError` naming the first place that is not."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not _valid_text(key):
                    raise _bad_value(path, "a member name holds a lone surrogate (not Unicode)")
                stack.append((child, f"{path}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, str):
            if not _valid_text(item):
                raise _bad_value(path, "holds a lone surrogate (not Unicode text)")
        elif isinstance(item, float) and not math.isfinite(item):
            raise _bad_value(path, "is a number too large to represent")


def _bad_value(path: str, problem: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"Invalid parameters: {path} {problem}", violations=[FieldViolation(path, problem)]
    )


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity; RFC 8259 JSON does not, nor does proto3 JSON.
    raise ValueError(f"{name} is not valid JSON")


def _is_valid_id(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return _valid_text(value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int)


def request_id_of(body: Any) -> RequestId:
    """Best-effort ``id`` of a request that failed to parse, for its error response."""
    if isinstance(body, dict):
        value = body.get("id")
        if _is_valid_id(value):
            return value
    return None


# --- responses -------------------------------------------------------------------------------

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _id_json(request_id: RequestId) -> bytes:
    return _dumps(request_id).encode()


def success_response(request_id: RequestId, result: BaseModel | Any) -> bytes:
    """A JSON-RPC success response as compact one-line UTF-8 JSON.

    ``result`` is a wire model (serialised by pydantic-core) or plain JSON data. Built by
    concatenation so a wire model is serialised exactly once on the streaming hot path.
    """
    to_json = getattr(result, "to_json", None)
    body = to_json() if callable(to_json) else _dumps(result).encode()
    return success_response_json(request_id, body)


def success_response_json(request_id: RequestId, result_json: bytes) -> bytes:
    """A JSON-RPC success response around ``result_json``, JSON text serialised already."""
    return b'{"jsonrpc":"2.0","id":' + _id_json(request_id) + b',"result":' + result_json + b"}"


def error_response(request_id: RequestId, error: A2AError, dialect: Dialect = "1.0") -> bytes:
    """A JSON-RPC error response as compact one-line UTF-8 JSON."""
    return _dumps(
        {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.to_error_object(dialect)}
    ).encode()
