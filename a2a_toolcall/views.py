"""The A2A endpoints: the agent card and the JSON-RPC binding (1.0 and 0.3), with SSE streams.

Plain async views. Every failure the client caused is a JSON-RPC error (HTTP 200, the code and
``google.rpc`` details in the body); anything else is logged here and answered -32603 with no
traceback. Nothing is stored or published before a request has been fully validated.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from asgiref.sync import sync_to_async
from django.db import connections
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.urls import get_script_prefix, reverse
from django.utils.http import http_date, parse_http_date_safe
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ValidationError

from a2a_toolcall import memory, push, store, throttle
from a2a_toolcall import models as orm
from a2a_toolcall.asgi import SCOPE_KEY as FLOW_CONTROL_KEY
from a2a_toolcall.asgi import ClientWrites, uses_shared_threads
from a2a_toolcall.auth import Caller, authenticate, unauthenticated
from a2a_toolcall.card import build_card, default_agent_name
from a2a_toolcall.conf import get_setting
from a2a_toolcall.contract import TOOL_CALL_V1_URI
from a2a_toolcall.leases import ensure_keeper
from a2a_toolcall.protocol import jsonrpc, v03
from a2a_toolcall.protocol.models import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a_toolcall.protocol.sse import encode_comment, encode_event
from a2a_toolcall.recorder import start_in_background
from a2a_toolcall.service import (
    INLINE_PUSH_FIELD,
    StreamBehind,
    TaskService,
    ends_stream,
    sweep_orphans_once,
)
from a2a_toolcall.store import LoggedEvent

__all__ = ["agent_card", "jsonrpc_endpoint"]

logger = logging.getLogger(__name__)

SUPPORTED_EXTENSIONS: Final = frozenset({TOOL_CALL_V1_URI})
KEEPALIVE: Final = encode_comment("keepalive")
PUSH_METHODS: Final = frozenset(
    {
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)
METHODS_V10: Final = frozenset(
    {
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "GetExtendedAgentCard",
        *PUSH_METHODS,
    }
)
CARD_MAX_AGE: Final = 300
WRITE_SIZE: Final = 65_536
"""Bytes of waiting events joined into one write at most (Twisted's and asyncio's buffer
mark: a larger write only fills the process while the client reads it)."""
DISPATCH_FALLBACK: Final = 1.0
"""Seconds after a stream's response is made by which its task's work is sent in any case (it
is sent as soon as the first event is out, which is normally well before)."""


# --- the agent card ---------------------------------------------------------------------------


def _endpoint_url(request: HttpRequest) -> str:
    """The endpoint's absolute URL as this request's client sees it.

    ``build_absolute_uri`` follows ``SECURE_PROXY_SSL_HEADER`` and ``USE_X_FORWARDED_HOST``
    (forwarded headers are trusted only when those settings say so). The path prefix is the
    request's own ``SCRIPT_NAME`` (``FORCE_SCRIPT_NAME``, the ASGI ``root_path`` or the WSGI
    ``SCRIPT_NAME``): the process-wide script prefix ``reverse`` adds is set by Django's
    server handlers only, not by the test clients or other callers of the view.
    """
    path = reverse("a2a_toolcall:jsonrpc")
    served_under = str(request.META.get("SCRIPT_NAME") or "").rstrip("/") + "/"
    prefix = get_script_prefix()
    if served_under != prefix and path.startswith(prefix):
        path = served_under + path.removeprefix(prefix)
    return request.build_absolute_uri(path)


async def agent_card(request: HttpRequest) -> HttpResponse:
    """``/.well-known/agent-card.json``: the 1.0 card, with the 0.3 members for 0.3 clients.

    A client that says ``A2A-Version: 1.0`` gets the strict 1.0 card; others get the 0.3
    members too (``url``, ``preferredTransport``, ``protocolVersion``), unless
    ``CARD_V03_MEMBERS`` is False. Cacheable: ``Cache-Control``, ``ETag``, ``Last-Modified``.
    """
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    card = build_card(_endpoint_url(request))
    asks_v10 = (request.headers.get("A2A-Version") or "").strip().startswith("1.")
    if get_setting("CARD_V03_MEMBERS") and not asks_v10:
        body = _json_bytes(v03.dual_card(card))
    else:
        body = card.to_json()
    digest = hashlib.sha256(body).hexdigest()
    etag = '"' + digest[:32] + '"'
    # The card changes only with the settings: the first time this process served a version is
    # its modification time.
    modified = _first_served.setdefault(digest, int(time.time()))
    not_modified = etag in _etags(request.headers.get("If-None-Match", "")) or (
        "If-None-Match" not in request.headers
        and (since := parse_http_date_safe(request.headers.get("If-Modified-Since", "")))
        is not None
        and since >= modified
    )
    response = (
        HttpResponse(status=304)
        if not_modified
        else HttpResponse(body, content_type="application/json")
    )
    response["ETag"] = etag
    response["Last-Modified"] = http_date(modified)
    response["Cache-Control"] = f"public, max-age={CARD_MAX_AGE}"
    response["Vary"] = "A2A-Version"
    response["Access-Control-Allow-Origin"] = "*"
    return response


_first_served: dict[str, int] = {}


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def _json_bytes(value: Any) -> bytes:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


# --- JSON-RPC ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Call:
    """One JSON-RPC call being answered."""

    request: HttpRequest
    id: jsonrpc.RequestId
    dialect: jsonrpc.Dialect
    method: str
    """The 1.0 name of the method."""
    wire_method: str
    """The method as the client named it (its 0.3 name in the 0.3 dialect)."""
    params: dict[str, Any]
    extensions: list[str]
    caller: Caller

    def owner(self, tenant: str | None) -> store.Owner:
        """Whose tasks this call may see and make."""
        return self.caller.owner(tenant)

    def answer(self, result: BaseModel | dict[str, Any] | list[Any] | None) -> HttpResponse:
        """The JSON-RPC success response."""
        response = HttpResponse(
            jsonrpc.success_response(self.id, result), content_type="application/json"
        )
        self.headers(response)
        return response

    def headers(self, response: HttpResponseBase) -> None:
        """Echo the activated extensions (A2A extensions guide)."""
        if self.extensions:
            response["A2A-Extensions"] = ",".join(self.extensions)


def _dialect(request: HttpRequest) -> jsonrpc.Dialect:
    # Spec 3.2.6 / 14.2.1: the A2A-Version header (or query parameter); missing means 0.3.
    raw = request.headers.get("A2A-Version") or request.GET.get("A2A-Version") or ""
    version = raw.strip()
    if not version:
        return "0.3"
    parts = version.split(".")
    if len(parts) >= 2 and parts[0] == "1" and parts[1] == "0":
        return "1.0"
    if len(parts) >= 2 and parts[0] == "0" and parts[1] == "3":
        return "0.3"
    raise jsonrpc.VersionNotSupportedError(
        f"A2A-Version {version!r} is not supported; this agent speaks 1.0 and 0.3",
        metadata={"requested": version, "supported": "1.0,0.3"},
    )


def _extensions(request: HttpRequest) -> list[str]:
    header = request.headers.get("A2A-Extensions") or request.headers.get("X-A2A-Extensions") or ""
    requested = [uri.strip() for uri in header.split(",") if uri.strip()]
    return [uri for uri in dict.fromkeys(requested) if uri in SUPPORTED_EXTENSIONS]


def _body(request: HttpRequest) -> bytes:
    limit = int(get_setting("MAX_REQUEST_BYTES"))
    declared = request.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise jsonrpc.InvalidRequestError(
            f"Request payload validation error: the body is {declared} bytes; the limit is {limit}",
            metadata={"limit": limit},
        )
    body = request.body
    if len(body) > limit:
        raise jsonrpc.InvalidRequestError(
            f"Request payload validation error: the body exceeds {limit} bytes",
            metadata={"limit": limit},
        )
    return body


def _content_type(request: HttpRequest) -> None:
    kind = (request.content_type or "").lower()
    if kind != "application/json" and not (
        kind.startswith("application/") and kind.endswith("+json")
    ):
        raise jsonrpc.ContentTypeNotSupportedError(
            f"Content-Type {request.content_type or '(none)'!r} is not supported: send "
            "application/json",
            metadata={"contentType": request.content_type or ""},
        )


def _error(
    request_id: jsonrpc.RequestId, error: jsonrpc.A2AError, dialect: jsonrpc.Dialect
) -> HttpResponse:
    response = HttpResponse(
        jsonrpc.error_response(request_id, error, dialect),
        content_type="application/json",
        status=error.http_status,
    )
    for name, value in error.headers.items():
        response[name] = value
    return response


def _params(model: type[Any], call: Call) -> Any:
    try:
        params = (
            v03.params_from_v03(call.wire_method, call.params)
            if call.dialect == "0.3"
            else call.params
        )
        return model.model_validate(params)
    except ValidationError as exc:
        raise jsonrpc.InvalidParamsError.from_validation_error(exc) from None
    except v03.V03TranslationError as exc:
        raise jsonrpc.InvalidParamsError(
            f"Invalid parameters: params.{exc.field}: {exc.problem}",
            violations=[jsonrpc.FieldViolation(f"params.{exc.field}", exc.problem)],
        ) from None


@csrf_exempt
async def jsonrpc_endpoint(request: HttpRequest) -> HttpResponseBase:
    """The JSON-RPC endpoint (both ``/a2a`` and ``/a2a/``)."""
    if request.method != "POST":
        response = HttpResponse(
            jsonrpc.error_response(
                None,
                jsonrpc.InvalidRequestError(
                    "Request payload validation error: JSON-RPC requests are POSTed"
                ),
            ),
            content_type="application/json",
            status=405,
        )
        response["Allow"] = "POST"
        return response
    dialect: jsonrpc.Dialect = "1.0"
    request_id: jsonrpc.RequestId = None
    method: str | None = None
    try:
        dialect = _dialect(request)
        _content_type(request)
        body = _body(request)
        try:
            rpc = jsonrpc.parse_request(body)
        except jsonrpc.A2AError as error:
            request_id = error.request_id  # echoed when it was valid, else null
            raise
        request_id = rpc.id
        method = rpc.method
        if dialect == "0.3":
            mapped = v03.METHODS_FROM_V03.get(method)
            if mapped is None:
                raise jsonrpc.MethodNotFoundError(
                    f"Method not found: {method!r} is not an A2A 0.3 method (for 1.0 methods "
                    "send the A2A-Version: 1.0 header)",
                    metadata={"method": method},
                )
        else:
            if method not in METHODS_V10:
                raise jsonrpc.MethodNotFoundError(
                    f"Method not found: {method!r} is not an A2A 1.0 method",
                    metadata={"method": method},
                )
            mapped = method
        # Only a message that starts a new task goes on before an earlier run's orphans are
        # failed: it cannot be about one of them.
        await sweep_orphans_once(wait=not _starts_new_task(mapped, rpc.params))
        ensure_keeper()  # this process takes part in renewing and reaping task leases
        push.ensure_sender()  # and in sending the push outbox (PUSH_SENDER)
        # Who is calling, before anything is read or stored on its behalf.
        caller = await authenticate(request)
        await throttle.check_rate(caller)
        call = Call(
            request, request_id, dialect, mapped, method, rpc.params, _extensions(request), caller
        )
        return await HANDLERS[mapped](call)
    except jsonrpc.A2AError as error:
        return _error(request_id, error, dialect)
    except Exception:
        # A fault of ours, not the client's: said once, with what identifies the request.
        logger.exception("A2A request failed: id %r, method %r", request_id, method)
        return _error(request_id, jsonrpc.InternalError(), dialect)


# --- methods ----------------------------------------------------------------------------------


def _starts_new_task(method: str, params: Any) -> bool:
    """Whether a call sends a message that starts a new task: it names no task (the rule of
    ``TaskService.send``, on the params before they are validated)."""
    if method not in ("SendMessage", "SendStreamingMessage") or not isinstance(params, dict):
        return False
    message = params.get("message")
    return isinstance(message, dict) and not message.get("taskId")


def _service() -> TaskService:
    return TaskService()


def _task_result(call: Call, task: Task) -> HttpResponse:
    if call.dialect == "0.3":
        return call.answer(v03.task_to_v03(task))
    return call.answer(task)


async def _send(call: Call, params: SendMessageRequest, *, dispatch: bool) -> Any:
    _check_message(params)
    push_config = await _inline_push_config(params)
    owner = call.owner(params.tenant)
    if not params.message.task_id:
        await throttle.check_running(owner)
    return await _service().send(
        params,
        agent=default_agent_name(),
        dispatch=dispatch,
        owner=owner,
        auth_scheme=call.caller.scheme,
        credential=call.caller.credential,
        push_config=push_config,
    )


async def send_message(call: Call) -> HttpResponseBase:
    params: SendMessageRequest = _params(SendMessageRequest, call)
    service = _service()
    started = await _send(call, params, dispatch=True)
    config = params.configuration
    if not (config and config.return_immediately):
        await service.wait(started.task_id, started.after_seq)
    history = config.history_length if config else None
    row = await store.load_row(started.task_id)
    if row.reply_message is not None:
        result = SendMessageResponse(message=Message.model_validate(row.reply_message))
    else:
        result = SendMessageResponse(task=await store.current_snapshot(row, history_length=history))
    if call.dialect == "0.3":
        return call.answer(v03.send_message_response_to_v03(result))
    return call.answer(result)


async def send_streaming_message(call: Call) -> HttpResponseBase:
    params: SendMessageRequest = _params(SendMessageRequest, call)
    service = _service()
    started = await _send(call, params, dispatch=False)
    first = [StreamResponse(task=started.snapshot)] if started.snapshot is not None else []
    return _stream(
        call, service, started.task_id, started.after_seq, first, dispatch=started.dispatch
    )


def _check_message(params: SendMessageRequest) -> None:
    if not params.message.parts:
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: params.message.parts: at least one part is required",
            violations=[jsonrpc.FieldViolation("params.message.parts", "at least one part")],
        )
    if params.message.role.value != "ROLE_USER":
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: params.message.role: messages to the agent come from the user",
            violations=[jsonrpc.FieldViolation("params.message.role", "must be ROLE_USER")],
        )
    config = params.configuration
    if config and config.history_length is not None and config.history_length < 0:
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: params.configuration.historyLength must not be negative",
            violations=[jsonrpc.FieldViolation("params.configuration.historyLength", ">= 0")],
        )


async def _inline_push_config(params: SendMessageRequest) -> TaskPushNotificationConfig | None:
    """The message's own webhook (``configuration.taskPushNotificationConfig``), checked."""
    config = params.configuration
    if config is None or config.task_push_notification_config is None:
        return None
    _require_push(": send the message without configuration.taskPushNotificationConfig")
    return await push.check_config(config.task_push_notification_config, INLINE_PUSH_FIELD)


async def get_task(call: Call) -> HttpResponseBase:
    params: GetTaskRequest = _params(GetTaskRequest, call)
    if params.history_length is not None and params.history_length < 0:
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: params.historyLength must not be negative",
            violations=[jsonrpc.FieldViolation("params.historyLength", "must be >= 0")],
        )
    return _task_result(
        call, await store.get_task(params.id, params.history_length, call.owner(params.tenant))
    )


async def list_tasks(call: Call) -> HttpResponseBase:
    params: ListTasksRequest = _params(ListTasksRequest, call)
    return call.answer(await store.list_tasks(params, call.owner(params.tenant)))


async def cancel_task(call: Call) -> HttpResponseBase:
    params: CancelTaskRequest = _params(CancelTaskRequest, call)
    return _task_result(call, await _service().cancel(params.id, owner=call.owner(params.tenant)))


async def subscribe_to_task(call: Call) -> HttpResponseBase:
    params: SubscribeToTaskRequest = _params(SubscribeToTaskRequest, call)
    row = await store.load_row(params.id, call.owner(params.tenant))
    # Events after the snapshot's own point; a reconnecting client (SSE Last-Event-ID) gets
    # exactly what followed the last event it saw.
    resume = call.request.headers.get("Last-Event-ID", "").strip()
    resumed = resume.isdigit() and len(resume) < 19
    after = int(resume) if resumed else row.last_seq
    if row.task_state.is_terminal and (after >= row.last_seq or not get_setting("RECORD_EVENTS")):
        # A stream that was cut (a dropped connection, a client too far behind) may still
        # resume a task that has ended since: the events it missed, up to the end.
        raise jsonrpc.UnsupportedOperationError(
            f"Task {row.id} is {row.task_state.name.lower()}: a task in a terminal state has no "
            "more updates; use GetTask",
            metadata={"taskId": row.id, "state": row.state},
        )
    # A resumed stream replays the tool frames after the client's last event, and it saw the
    # ones before: the task goes first without its tool-call summary (which may be megabytes).
    snapshot = await store.current_snapshot(row, with_tool_calls=not resumed)
    return _stream(call, _service(), row.id, after, [StreamResponse(task=snapshot)])


async def get_extended_agent_card(call: Call) -> HttpResponseBase:
    if get_setting("EXTENDED_CARD") is None:
        # Spec 3.3.4: with capabilities.extendedAgentCard false, the method is unsupported.
        raise jsonrpc.UnsupportedOperationError(
            "This agent has no extended agent card (capabilities.extendedAgentCard is false)"
        )
    if not call.caller.is_authenticated:
        raise unauthenticated(
            "Authentication required: the extended agent card is for authenticated callers"
        )
    card = build_card(_endpoint_url(call.request), extended=True)
    if call.dialect == "0.3":
        return call.answer(v03.card_to_v03(card))
    return call.answer(card)


def _require_push(hint: str = "") -> None:
    # Spec 3.3.4: with capabilities.pushNotifications false, every push method is -32003,
    # before anything about the request is looked at.
    if not push.push_enabled():
        raise jsonrpc.PushNotificationNotSupportedError(
            "Push notifications are not supported (capabilities.pushNotifications is false)" + hint
        )


async def _push_task(call: Call, task_id: str | None, tenant: str | None) -> orm.Task:
    """The task a push-notification call names, if the caller may see it."""
    if not task_id:
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: params.taskId: the task's id is required",
            violations=[jsonrpc.FieldViolation("params.taskId", "required")],
        )
    return await store.load_row(task_id, call.owner(tenant))


def _push_config_result(call: Call, config: TaskPushNotificationConfig) -> HttpResponse:
    if call.dialect == "0.3":
        return call.answer(v03.push_config_to_v03(config))
    return call.answer(config)


async def create_push_config(call: Call) -> HttpResponseBase:
    _require_push()
    params: TaskPushNotificationConfig = _params(TaskPushNotificationConfig, call)
    row = await _push_task(call, params.task_id, params.tenant)
    return _push_config_result(call, await push.create_config(row, params))


async def get_push_config(call: Call) -> HttpResponseBase:
    _require_push()
    params: GetTaskPushNotificationConfigRequest = _params(
        GetTaskPushNotificationConfigRequest, call
    )
    row = await _push_task(call, params.task_id, params.tenant)
    return _push_config_result(call, await push.get_config(row, params.id))


async def list_push_configs(call: Call) -> HttpResponseBase:
    _require_push()
    params: ListTaskPushNotificationConfigsRequest = _params(
        ListTaskPushNotificationConfigsRequest, call
    )
    row = await _push_task(call, params.task_id, params.tenant)
    result = await push.list_configs(row, params.page_size, params.page_token)
    if call.dialect == "0.3":
        # 0.3 answers a bare array, unpaged: every page, in order.
        configs = list(result.configs or ())
        while result.next_page_token:
            result = await push.list_configs(row, None, result.next_page_token)
            configs.extend(result.configs or ())
        return call.answer([v03.push_config_to_v03(c) for c in configs])
    return call.answer(result)


async def delete_push_config(call: Call) -> HttpResponseBase:
    _require_push()
    params: DeleteTaskPushNotificationConfigRequest = _params(
        DeleteTaskPushNotificationConfigRequest, call
    )
    row = await _push_task(call, params.task_id, params.tenant)
    await push.delete_config(row, params.id)
    return call.answer(None)


HANDLERS: Final[dict[str, Callable[[Call], Awaitable[HttpResponseBase]]]] = {
    "SendMessage": send_message,
    "SendStreamingMessage": send_streaming_message,
    "GetTask": get_task,
    "ListTasks": list_tasks,
    "CancelTask": cancel_task,
    "SubscribeToTask": subscribe_to_task,
    "GetExtendedAgentCard": get_extended_agent_card,
    "CreateTaskPushNotificationConfig": create_push_config,
    "GetTaskPushNotificationConfig": get_push_config,
    "ListTaskPushNotificationConfigs": list_push_configs,
    "DeleteTaskPushNotificationConfig": delete_push_config,
}


# --- SSE --------------------------------------------------------------------------------------


def _frame(call: Call, seq: int | None, response: StreamResponse) -> bytes:
    if call.dialect == "0.3":
        result: BaseModel | dict[str, Any] = v03.stream_response_to_v03(
            response, final=ends_stream(response)
        )
    else:
        result = response
    data = jsonrpc.success_response(call.id, result)
    return encode_event(data, id=None if seq is None else str(seq))


def _logged_frame(call: Call, event: LoggedEvent) -> bytes:
    if call.dialect == "0.3":
        return _frame(call, event.seq, event.response)
    # The event's JSON was made once, for every stream and the database: only the envelope
    # is added here.
    return encode_event(jsonrpc.success_response_json(call.id, event.json), id=str(event.seq))


def _release_request_thread() -> None:
    """Give back the OS thread Django keeps for this request while the stream waits.

    Django runs each request in an asgiref ``ThreadSensitiveContext`` whose executor holds one
    thread until the response ends: one idle thread per open stream. The stream no longer needs
    it (its database work is done and its connection closed), so the executor is shut down now;
    anything sync that runs later in the request (``request_finished``) gets a fresh one, which
    Django shuts down as usual. (Under :class:`a2a_toolcall.asgi.SharedThreads` the request has
    no thread of its own and the stream does not call this.)
    """
    from asgiref.sync import SyncToAsync

    context = SyncToAsync.thread_sensitive_context.get(None)
    if context is None or getattr(context, "_executor", None) is not None:
        return  # no request context, or an executor its creator owns
    executor = SyncToAsync.context_to_thread_executor.pop(context, None)
    if executor is not None:
        executor.shutdown(wait=False)


def _closed_behind(behind: StreamBehind) -> bytes:
    logger.info(
        "task %s: a stream's client fell more than STREAM_BUFFER_LIMIT (%d bytes) behind; "
        "closed it after event %d (the client resumes with Last-Event-ID)",
        behind.task_id,
        behind.limit,
        behind.last,
        extra={"task_id": behind.task_id, "last_event_id": behind.last},
    )
    return encode_comment(
        f"closed: this client fell more than {behind.limit} bytes behind the task; resume "
        f"with SubscribeToTask and Last-Event-ID: {behind.last}"
    )


_flow_control_warned = False


def _check_flow_control(request: HttpRequest) -> None:
    """Warn once when streams are served without :class:`a2a_toolcall.asgi.FlowControl`:
    under daphne a client that stops reading then makes the process buffer its stream."""
    global _flow_control_warned
    scope = getattr(request, "scope", None)
    if (
        _flow_control_warned
        or scope is None
        or scope.get(FLOW_CONTROL_KEY)
        or "twisted.web.http" not in sys.modules  # not daphne: its send() waits by itself
    ):
        return
    _flow_control_warned = True
    logger.warning(
        "a2a_toolcall: this ASGI application is not wrapped in a2a_toolcall.asgi.FlowControl: "
        "under daphne a client that reads a stream slowly makes this process buffer what it "
        "has not read, without limit (STREAM_BUFFER_LIMIT cannot apply). In asgi.py use "
        'a2a_toolcall.asgi.get_asgi_application() (docs/server.md, "Slow readers").'
    )


def _stream(
    call: Call,
    service: TaskService,
    task_id: str,
    after_seq: int,
    first: list[StreamResponse],
    *,
    dispatch: Callable[[], Awaitable[None]] | None = None,
) -> StreamingHttpResponse:
    keepalive = float(get_setting("KEEPALIVE_INTERVAL"))
    limit = int(get_setting("STREAM_BUFFER_LIMIT"))
    _check_flow_control(call.request)
    # The task's agent is paced to what this stream takes while its client reads (FlowControl
    # says when the client holds the writes back), unless STREAM_PACING is off.
    client = getattr(call.request, "scope", {}).get(FLOW_CONTROL_KEY)
    blocked = (
        client.blocked
        if isinstance(client, ClientWrites) and get_setting("STREAM_PACING") is not None
        else None
    )
    undispatched = [dispatch] if dispatch is not None else []
    settled = False

    async def send_work() -> None:
        if undispatched:
            # Once taken off the list, the work goes out in a task of its own: a client that
            # leaves in the middle cancels this stream, never the send.
            dispatch = undispatched.pop()

            async def send() -> None:
                await dispatch()

            await asyncio.shield(start_in_background(send()))

    async def send_work_anyway() -> None:
        # The stream normally sends the work once its first event is out; a response whose
        # body is never iterated (the client left before it started) sends it from here.
        await asyncio.sleep(DISPATCH_FALLBACK)
        await send_work()

    async def settle() -> None:
        # Once the first event is out (nothing delays it): the stream may stay open for long,
        # so give the database connection and the request's thread back, then let the agent
        # start working.
        nonlocal settled
        settled = True
        if not uses_shared_threads():
            # A thread and connections of this request's own (under SharedThreads they are
            # the pool's, and other requests go on using them).
            await sync_to_async(connections.close_all)()
            _release_request_thread()
        await send_work()

    async def events() -> AsyncIterator[bytes]:
        try:
            # The feed first: it paces the task's agent from its first event on (it is
            # listening before the work goes out).
            async with service.feed(task_id, after_seq, limit, blocked) as feed:
                for response in first:
                    yield _frame(call, None, response)
                if first:
                    await settle()
                while True:
                    try:
                        event = await feed.next(timeout=keepalive)
                    except StreamBehind as exc:
                        yield _closed_behind(exc)
                        return
                    if event is None:
                        yield KEEPALIVE
                        continue
                    # Events that are already waiting go out in one write (one send, one
                    # syscall) rather than one each, up to a write's worth; a lone event is
                    # not held back.
                    chunk = [_logged_frame(call, event)]
                    size = len(chunk[0])
                    behind: StreamBehind | None = None
                    ready: LoggedEvent | None = None
                    while not event.ends_stream and size < WRITE_SIZE:
                        try:
                            ready = feed.ready()
                        except StreamBehind as exc:
                            behind = exc
                            break
                        if ready is None:
                            break
                        event = ready
                        chunk.append(_logged_frame(call, event))
                        size += len(chunk[-1])
                    if behind is not None:
                        chunk.append(_closed_behind(behind))
                    ends = event.ends_stream
                    # Nothing of what was written stays referenced here while the stream
                    # waits for the next event (an idle stream holds no event).
                    data = chunk[0] if len(chunk) == 1 else b"".join(chunk)
                    del chunk, event, ready
                    yield data
                    del data
                    if behind is not None:
                        return
                    if not settled:
                        await settle()
                    if ends:
                        return
        finally:
            memory.released()
            if undispatched:
                # The client went away before its first event: the task runs all the same.
                start_in_background(send_work())

    if undispatched:
        start_in_background(send_work_anyway())
    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    call.headers(response)
    return response
