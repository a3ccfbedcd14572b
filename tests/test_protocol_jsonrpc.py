"""JSON-RPC 2.0 envelope and A2A errors."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from a2a_toolcall.protocol import jsonrpc as rpc
from a2a_toolcall.protocol import models as m


def test_parse_request() -> None:
    req = rpc.parse_request(b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t1"}}')
    assert req == rpc.JsonRpcRequest(method="GetTask", params={"id": "t1"}, id=7, has_id=True)
    note = rpc.parse_request('{"jsonrpc":"2.0","method":"GetTask"}')
    assert note.has_id is False and note.params == {}
    assert (
        rpc.parse_request({"jsonrpc": "2.0", "id": None, "method": "X", "params": None}).id is None
    )


@pytest.mark.parametrize(
    ("body", "error", "text"),
    [
        (b"{not json", rpc.JSONParseError, "Invalid JSON payload"),
        (b"\xff\xfe", rpc.JSONParseError, "Invalid JSON payload"),
        (b'{"jsonrpc":"2.0","id":1,"method":"X","params":{"n":NaN}}', rpc.JSONParseError, "NaN"),
        (b"[]", rpc.InvalidRequestError, "a batch"),
        (b'"hello"', rpc.InvalidRequestError, "got str"),
        (b'{"id":1,"method":"X"}', rpc.InvalidRequestError, "'jsonrpc' must be exactly"),
        (b'{"jsonrpc":"1.0","id":1,"method":"X"}', rpc.InvalidRequestError, "'jsonrpc'"),
        (b'{"jsonrpc":"2.0","id":1}', rpc.InvalidRequestError, "'method'"),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', rpc.InvalidRequestError, "'method'"),
        (b'{"jsonrpc":"2.0","id":{},"method":"X"}', rpc.InvalidRequestError, "'id'"),
        (b'{"jsonrpc":"2.0","id":true,"method":"X"}', rpc.InvalidRequestError, "'id'"),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"X","params":[1]}',
            rpc.InvalidRequestError,
            "'params' must be an object",
        ),
    ],
)
def test_bad_requests_raise_the_precise_error(
    body: bytes, error: type[rpc.A2AError], text: str
) -> None:
    with pytest.raises(error, match=text) as info:
        rpc.parse_request(body)
    assert info.value.code == error.code


def test_request_id_of_a_broken_request() -> None:
    assert rpc.request_id_of({"id": "abc", "jsonrpc": "1"}) == "abc"
    assert rpc.request_id_of({"id": [1]}) is None
    assert rpc.request_id_of("x") is None


def test_error_codes_match_the_spec() -> None:
    assert {e.name: e.value for e in rpc.ErrorCode} == {
        "PARSE_ERROR": -32700,
        "INVALID_REQUEST": -32600,
        "METHOD_NOT_FOUND": -32601,
        "INVALID_PARAMS": -32602,
        "INTERNAL_ERROR": -32603,
        "TASK_NOT_FOUND": -32001,
        "TASK_NOT_CANCELABLE": -32002,
        "PUSH_NOTIFICATION_NOT_SUPPORTED": -32003,
        "UNSUPPORTED_OPERATION": -32004,
        "CONTENT_TYPE_NOT_SUPPORTED": -32005,
        "INVALID_AGENT_RESPONSE": -32006,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED": -32007,
        "EXTENSION_SUPPORT_REQUIRED": -32008,
        "VERSION_NOT_SUPPORTED": -32009,
        # Server-defined, for the refusals of access control (HTTP 401, 403, 429).
        "UNAUTHENTICATED": -32041,
        "PERMISSION_DENIED": -32043,
        "RESOURCE_EXHAUSTED": -32029,
    }


def test_v10_error_response_carries_error_info() -> None:
    error = rpc.TaskNotFoundError(metadata={"taskId": "t-404", "attempt": 2})
    body = json.loads(rpc.error_response("r1", error))
    assert body == {
        "jsonrpc": "2.0",
        "id": "r1",
        "error": {
            "code": -32001,
            "message": "Task not found",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    # google.rpc.ErrorInfo.metadata is map<string, string>
                    "metadata": {"taskId": "t-404", "attempt": "2"},
                }
            ],
        },
    }


def test_v03_error_response_has_plain_data() -> None:
    body = json.loads(
        rpc.error_response(3, rpc.TaskNotFoundError(metadata={"taskId": "t"}), dialect="0.3")
    )
    assert body["error"] == {"code": -32001, "message": "Task not found", "data": {"taskId": "t"}}
    bare = json.loads(rpc.error_response(3, rpc.MethodNotFoundError(), dialect="0.3"))
    assert bare["error"] == {"code": -32601, "message": "Method not found"}


def test_invalid_params_name_every_field() -> None:
    with pytest.raises(ValidationError) as info:
        m.SendMessageRequest.from_wire({"message": {"role": "ROLE_PIRATE", "parts": [{}]}})
    error = rpc.InvalidParamsError.from_validation_error(info.value)
    fields = [v.field for v in error.violations]
    assert "params.message.messageId" in fields
    assert "params.message.role" in fields
    assert any(f.startswith("params.message.parts[0]") for f in fields)
    assert error.message.startswith("Invalid parameters: params.message.")
    assert "more)" in error.message
    details = error.details()
    assert details[1]["@type"] == rpc.BAD_REQUEST_TYPE
    assert {
        "field": "params.message.role",
        "description": error.violations[fields.index("params.message.role")].description,
    } in details[1]["fieldViolations"]
    assert json.loads(rpc.error_response(1, error, "0.3"))["error"]["data"]["fieldViolations"]


@pytest.mark.parametrize(
    "error",
    [
        rpc.TaskNotFoundError(metadata={"taskId": "t"}),
        rpc.InvalidParamsError("bad", violations=[rpc.FieldViolation("params.id", "missing")]),
        rpc.VersionNotSupportedError("A2A-Version 9.9 is not supported"),
        rpc.A2AError("custom", code=-32050),
    ],
)
def test_errors_round_trip_through_the_wire(error: rpc.A2AError) -> None:
    for dialect in ("1.0", "0.3"):
        wire = json.loads(rpc.error_response(1, error, dialect))["error"]  # type: ignore[arg-type]
        back = rpc.error_from_wire(wire)
        assert type(back) is type(error)
        assert (back.code, back.message, back.metadata, back.violations) == (
            error.code,
            error.message,
            error.metadata,
            error.violations,
        )
    assert rpc.A2AError("x", code=-32050).reason == "UNKNOWN_ERROR"


def test_malformed_error_objects_become_invalid_agent_response() -> None:
    for wire in (None, {"code": "x"}, [1]):
        assert isinstance(rpc.error_from_wire(wire), rpc.InvalidAgentResponseError)


def test_success_response_embeds_wire_models_and_plain_json() -> None:
    task = m.Task(id="t", context_id="c", status=m.TaskStatus(state=m.TaskState.WORKING))
    body = rpc.success_response("abc", task)
    assert json.loads(body) == {"jsonrpc": "2.0", "id": "abc", "result": task.to_wire()}
    assert b"\n" not in body
    assert json.loads(rpc.success_response(None, {"ok": ["ü"]})) == {
        "jsonrpc": "2.0",
        "id": None,
        "result": {"ok": ["ü"]},
    }
    with pytest.raises(ValueError, match="Out of range float"):
        rpc.success_response(1, {"x": float("nan")})


def test_error_repr_is_informative() -> None:
    text = repr(rpc.TaskNotCancelableError(metadata={"taskId": "t"}))
    assert text == "TaskNotCancelableError('Task cannot be canceled', metadata={'taskId': 't'})"
