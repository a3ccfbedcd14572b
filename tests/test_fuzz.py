"""Hostile requests: a corpus of malformed JSON-RPC requests and generated params, in process
against the real endpoint (SQLite and PostgreSQL). Each must get its precise JSON-RPC error code
and HTTP status, the id echoed when it is valid (null otherwise), never a 500 or an internal
error, and nothing stored or published."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import AsyncClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_toolcall.layers import InMemoryChannelLayer
from a2a_toolcall.models import Task, TaskEvent
from a2a_toolcall.protocol.jsonrpc import MAX_JSON_DEPTH
from tests.conftest import BOTH_DATABASES

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]

PARSE, REQUEST, METHOD, PARAMS = -32700, -32600, -32601, -32602
NOT_FOUND, NOT_CANCELABLE, UNSUPPORTED, CONTENT_TYPE, VERSION = (
    -32001,
    -32002,
    -32004,
    -32005,
    -32009,
)


@dataclass(frozen=True)
class Case:
    """One malformed request and the answer it must get."""

    name: str
    body: bytes
    code: int
    id: Any = None
    """The id the error must echo."""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200


def rpc(method: Any, params: Any = None, *, id: Any = 1, **extra: Any) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method, **extra}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


def message(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


def deep(levels: int, opener: str = "[", closer: str = "]") -> str:
    return opener * levels + closer * levels


WRONG_TYPES: list[Any] = [None, True, 0, -1, 1.5, "x", [], {}, [1], {"a": 1}]


def corpus() -> list[Case]:
    cases: list[Case] = []
    add = cases.append

    # --- not JSON ---------------------------------------------------------------------------
    for name, body in {
        "space": b"   ",
        "open brace": b"{",
        "trailing comma": b'{"jsonrpc":"2.0","id":1,"method":"GetTask",}',
        "single quotes": b"{'jsonrpc':'2.0','id':1,'method':'GetTask'}",
        "comment": b'{"jsonrpc":"2.0", /* c */ "id":1,"method":"GetTask"}',
        "garbage after": b'{"jsonrpc":"2.0","id":1,"method":"GetTask"} x',
        "two objects": b'{"jsonrpc":"2.0","id":1,"method":"GetTask"}{}',
        "NaN": b'{"jsonrpc":"2.0","id":NaN,"method":"GetTask"}',
        "Infinity": b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"x":Infinity}}',
        "-Infinity": b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"x":-Infinity}}',
        "invalid UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"Get\xffTask"}',
        "latin-1 text": '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"é"}}'.encode(
            "latin-1"
        ),
        "overlong UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xafGetTask"}',
        "UTF-8 BOM": b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"GetTask"}',
        "UTF-16": '{"jsonrpc":"2.0","id":1,"method":"GetTask"}'.encode("utf-16"),
        "UTF-8 surrogate bytes": b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}',
        "control char in string": b'{"jsonrpc":"2.0","id":1,"method":"Get\x01Task"}',
        "bad escape": b'{"jsonrpc":"2.0","id":1,"method":"\\q"}',
        "short unicode escape": b'{"jsonrpc":"2.0","id":1,"method":"\\u12"}',
        "unterminated string": b'{"jsonrpc":"2.0","id":1,"method":"GetTask',
        "huge integer digits": b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"GetTask"}',
        "bare word": b"hello",
        "xml": b"<jsonrpc/>",
        "nul byte": b"\x00",
    }.items():
        add(Case(f"not JSON: {name}", body, PARSE))

    # --- JSON, not a request ----------------------------------------------------------------
    for name, body in {
        "null": b"null",
        "number": b"1",
        "string": b'"GetTask"',
        "true": b"true",
        "empty batch": b"[]",
        "batch": b'[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]',
        "batch of two": b'[{"jsonrpc":"2.0","id":1,"method":"GetTask"},{"jsonrpc":"2.0"}]',
        "empty object": b"{}",
    }.items():
        add(Case(f"not a request: {name}", body, REQUEST))
    for version in [None, "1.0", "2", 2.0, 2, "2.0 ", ""]:
        body = {"id": 5, "method": "GetTask", "params": {"id": "x"}}
        if version is not None:
            body["jsonrpc"] = version
        add(Case(f"jsonrpc {version!r}", json.dumps(body).encode(), REQUEST, id=5))
    for method in [None, "", 1, True, [], {}, ["GetTask"]]:
        add(Case(f"method {method!r}", rpc(method, {"id": "x"}, id=6), REQUEST, id=6))
    add(
        Case(
            "method with a lone surrogate",
            b'{"jsonrpc":"2.0","id":6,"method":"\\ud800"}',
            REQUEST,
            id=6,
        )
    )
    for bad_id in [[], {}, True, False, [1], {"a": 1}]:
        add(Case(f"id {bad_id!r}", rpc("GetTask", {"id": "x"}, id=bad_id), REQUEST))
    for text in ["1e400", "-1e400", "1E999"]:
        add(
            Case(
                f"id {text}",
                f'{{"jsonrpc":"2.0","id":{text},"method":"GetTask"}}'.encode(),
                REQUEST,
            )
        )
    for text in ['"\\ud800"', '"\\udfff"', '"a\\ud83d"', '"\\ud83d\\u0041"']:
        add(
            Case(
                f"id {text}",
                f'{{"jsonrpc":"2.0","id":{text},"method":"GetTask"}}'.encode(),
                REQUEST,
            )
        )
    for params in ["x", 1, True, [], [{"id": "x"}], 1.5]:
        add(Case(f"params {params!r}", rpc("GetTask", params, id=7), REQUEST, id=7))

    # --- nesting ----------------------------------------------------------------------------
    for levels in [MAX_JSON_DEPTH + 1, 1_000, 100_000]:
        add(Case(f"arrays {levels} deep", deep(levels).encode(), REQUEST))
        add(
            Case(
                f"objects {levels} deep", ('{"a":' * levels + "1" + "}" * levels).encode(), REQUEST
            )
        )
    for levels in [100, 5_000]:
        inner = deep(levels)
        add(
            Case(
                f"{levels} deep in params",
                f'{{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{{"id":{inner}}}}}'.encode(),
                REQUEST,
            )
        )
        add(
            Case(
                f"{levels} deep in metadata",
                rpc("SendMessage", {"message": message(), "metadata": {}}, id=8).replace(
                    b'"metadata": {}', f'"metadata": {{"a": {inner}}}'.encode()
                ),
                REQUEST,
            )
        )
    # Brackets inside strings are text, not nesting.
    add(Case("brackets in a string", rpc("GetTask", {"id": "[" * 10_000}, id=9), NOT_FOUND, id=9))

    # --- sizes, content types, versions -----------------------------------------------------
    big = rpc("SendMessage", {"message": message(parts=[{"text": "x" * (1024 * 1024)}])}, id=10)
    add(Case("body over MAX_REQUEST_BYTES", big, REQUEST))
    for kind in [
        "text/plain",
        "application/xml",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "application/jsonp",
        "json",
        "",
    ]:
        add(
            Case(
                f"content type {kind!r}",
                rpc("GetTask", {"id": "x"}, id=11),
                CONTENT_TYPE,
                content_type=kind,
                id=None,
            )
        )
    for version in ["9.9", "2.0", "0.1", "10.0", "one", "1.0; drop table"]:
        add(
            Case(
                f"A2A-Version {version}",
                rpc("GetTask", {"id": "x"}, id=12),
                VERSION,
                headers={"A2A-Version": version},
            )
        )
    for method in [
        "getTask",
        "tasks/get",
        "GetTasks",
        "message/send",
        "SendMessage ",
        "rpc.discover",
        "__init__",
        "GetTask\n",
        "A" * 5000,
    ]:
        add(Case(f"unknown 1.0 method {method[:20]!r}", rpc(method, {}, id=13), METHOD, id=13))
    for method in ["GetTask", "SendMessage", "tasks/nope", "message/sendd"]:
        add(
            Case(
                f"unknown 0.3 method {method!r}",
                rpc(method, {}, id=14),
                METHOD,
                id=14,
                headers={"A2A-Version": "0.3"},
            )
        )

    # --- every method, every param at a wrong type ------------------------------------------
    for value in WRONG_TYPES:
        if not isinstance(value, str):
            add(Case(f"GetTask id={value!r}", rpc("GetTask", {"id": value}, id=20), PARAMS, id=20))
            add(
                Case(
                    f"CancelTask id={value!r}",
                    rpc("CancelTask", {"id": value}, id=21),
                    PARAMS,
                    id=21,
                )
            )
            add(
                Case(
                    f"SubscribeToTask id={value!r}",
                    rpc("SubscribeToTask", {"id": value}, id=22),
                    PARAMS,
                    id=22,
                )
            )
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            add(
                Case(
                    f"GetTask historyLength={value!r}",
                    rpc("GetTask", {"id": "x", "historyLength": value}, id=23),
                    PARAMS,
                    id=23,
                )
            )
            add(
                Case(
                    f"ListTasks pageSize={value!r}",
                    rpc("ListTasks", {"pageSize": value}, id=24),
                    PARAMS,
                    id=24,
                )
            )
        if not isinstance(value, dict) and value is not None:
            add(
                Case(
                    f"SendMessage message={value!r}",
                    rpc("SendMessage", {"message": value}, id=25),
                    PARAMS,
                    id=25,
                )
            )
            add(
                Case(
                    f"SendMessage metadata={value!r}",
                    rpc("SendMessage", {"message": message(), "metadata": value}, id=26),
                    PARAMS,
                    id=26,
                )
            )
            add(
                Case(
                    f"SendMessage configuration={value!r}",
                    rpc("SendMessage", {"message": message(), "configuration": value}, id=27),
                    PARAMS,
                    id=27,
                )
            )
        if not isinstance(value, list) and value is not None:
            add(
                Case(
                    f"message parts={value!r}",
                    rpc("SendMessage", {"message": message(parts=value)}, id=28),
                    PARAMS,
                    id=28,
                )
            )
        if not isinstance(value, str) and value is not None:
            add(
                Case(
                    f"message messageId={value!r}",
                    rpc("SendMessage", {"message": message(messageId=value)}, id=29),
                    PARAMS,
                    id=29,
                )
            )
            add(
                Case(
                    f"message contextId={value!r}",
                    rpc("SendMessage", {"message": message(contextId=value)}, id=30),
                    PARAMS,
                    id=30,
                )
            )
            add(
                Case(
                    f"message taskId={value!r}",
                    rpc("SendMessage", {"message": message(taskId=value)}, id=31),
                    PARAMS,
                    id=31,
                )
            )
            add(
                Case(
                    f"ListTasks contextId={value!r}",
                    rpc("ListTasks", {"contextId": value}, id=32),
                    PARAMS,
                    id=32,
                )
            )
            add(
                Case(
                    f"ListTasks statusTimestampAfter={value!r}",
                    rpc("ListTasks", {"statusTimestampAfter": value}, id=33),
                    PARAMS,
                    id=33,
                )
            )
            add(
                Case(
                    f"streaming message role={value!r}",
                    rpc("SendStreamingMessage", {"message": message(role=value)}, id=34),
                    PARAMS,
                    id=34,
                )
            )
    for role in ["user", "ROLE_BOSS", "ROLE_UNSPECIFIED", ""]:
        add(
            Case(
                f"role {role!r}",
                rpc("SendMessage", {"message": message(role=role)}, id=35),
                PARAMS,
                id=35,
            )
        )
    for parts in [
        [],
        [{}],
        [{"text": 1}],
        [{"data": "x", "text": "y"}],
        [{"url": 5}],
        [{"raw": "not base64!"}],
        [{"kind": "text"}],
        [None],
        ["text"],
    ]:
        add(
            Case(
                f"parts {parts!r}",
                rpc("SendMessage", {"message": message(parts=parts)}, id=36),
                PARAMS,
                id=36,
            )
        )
    for stamp in [
        "yesterday",
        "2024-13-45T99:99:99Z",
        "2024-02-30T00:00:00Z",
        "2024-01-01",
        "0000-01-01T00:00:00Z",
        "2024-01-01T00:00:00",
        " 2024-01-01T00:00:00Z",
        "",
    ]:
        add(
            Case(
                f"statusTimestampAfter {stamp!r}",
                rpc("ListTasks", {"statusTimestampAfter": stamp}, id=37),
                PARAMS,
                id=37,
            )
        )
    for status in ["BOGUS", "completed", 99, "TASK_STATE_"]:
        add(
            Case(
                f"ListTasks status {status!r}",
                rpc("ListTasks", {"status": status}, id=38),
                PARAMS,
                id=38,
            )
        )
    for size in [-1, 1000, 10**20]:
        add(
            Case(
                f"ListTasks pageSize {size}",
                rpc("ListTasks", {"pageSize": size}, id=39),
                PARAMS,
                id=39,
            )
        )
    for token in ["garbage", "!!!!", "a" * 5000, "eyJ4IjoxfQ"]:
        add(
            Case(
                f"ListTasks pageToken {token[:10]!r}",
                rpc("ListTasks", {"pageToken": token}, id=40),
                PARAMS,
                id=40,
            )
        )
    for length in [-1, 10**30]:
        add(
            Case(
                f"GetTask historyLength {length}",
                rpc("GetTask", {"id": "x", "historyLength": length}, id=41),
                PARAMS,
                id=41,
            )
        )
    for missing in ["GetTask", "CancelTask", "SubscribeToTask"]:
        add(Case(f"{missing} without id", rpc(missing, {}, id=42), PARAMS, id=42))
    add(Case("SendMessage without message", rpc("SendMessage", {}, id=43), PARAMS, id=43))
    add(
        Case(
            "SendStreamingMessage without message",
            rpc("SendStreamingMessage", {}, id=44),
            PARAMS,
            id=44,
        )
    )
    for key in ["messageId", "role", "parts"]:
        add(
            Case(
                f"message without {key}",
                rpc("SendMessage", {"message": message(**{key: ...})}, id=45),
                PARAMS,
                id=45,
            )
        )

    # --- Unicode and numbers inside params --------------------------------------------------
    lone = '"\\ud800"'
    for where, template in {
        "message text": '{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":%s}]}}',
        "message id": '{"message":{"messageId":%s,"role":"ROLE_USER","parts":[{"text":"x"}]}}',
        "metadata key": '{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},'
        '"metadata":{%s:1}}',
        "task id": '{"id":%s}',
        "context id": '{"contextId":%s}',
    }.items():
        method = (
            "ListTasks"
            if where == "context id"
            else ("GetTask" if where == "task id" else "SendMessage")
        )
        params = template % lone
        add(
            Case(
                f"lone surrogate in {where}",
                f'{{"jsonrpc":"2.0","id":50,"method":"{method}","params":{params}}}'.encode(),
                PARAMS,
                id=50,
            )
        )
    for number in ["1e400", "-1e400"]:
        add(
            Case(
                f"{number} in metadata",
                (
                    '{"jsonrpc":"2.0","id":51,"method":"SendMessage","params":{"message":'
                    '{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},'
                    f'"metadata":{{"n":{number}}}}}}}'
                ).encode(),
                PARAMS,
                id=51,
            )
        )
        add(
            Case(
                f"{number} as historyLength",
                f'{{"jsonrpc":"2.0","id":52,"method":"GetTask","params":{{"id":"x",'
                f'"historyLength":{number}}}}}'.encode(),
                PARAMS,
                id=52,
            )
        )

    # --- the 0.3 dialect ---------------------------------------------------------------------
    v03 = {"A2A-Version": "0.3"}
    for method, params in [
        ("message/send", {"message": "x"}),
        ("message/send", {"message": {"kind": "message", "role": "boss", "parts": []}}),
        (
            "message/send",
            {
                "message": {
                    "kind": "message",
                    "messageId": "m",
                    "role": "user",
                    "parts": [{"kind": "nope"}],
                }
            },
        ),
        ("message/stream", {}),
        ("tasks/get", {"id": 5}),
        ("tasks/get", {"id": "x", "historyLength": "many"}),
        ("tasks/cancel", {"id": []}),
        ("tasks/resubscribe", {}),
    ]:
        add(
            Case(
                f"0.3 {method} {json.dumps(params)[:40]}",
                rpc(method, params, id=70),
                PARAMS,
                id=70,
                headers=v03,
            )
        )

    # --- tasks that do not exist, and push notifications ------------------------------------
    for method in ["GetTask", "CancelTask", "SubscribeToTask"]:
        for task_id in ["missing", "", "x" * 1000, "../../etc/passwd", "' OR 1=1 --", "\u202e"]:
            add(
                Case(
                    f"{method} unknown id {task_id[:12]!r}",
                    rpc(method, {"id": task_id}, id=60),
                    NOT_FOUND,
                    id=60,
                )
            )
    push_params: list[tuple[str, Any, int]] = [
        ("no taskId", {"url": "https://h.example.com"}, PARAMS),
        ("taskId not a string", {"taskId": 5, "url": "https://h.example.com"}, PARAMS),
        ("unknown task", {"taskId": "missing", "url": "https://h.example.com"}, NOT_FOUND),
        ("no url", {"taskId": "missing"}, PARAMS),
        ("url not a string", {"taskId": "missing", "url": ["x"]}, PARAMS),
        (
            "authentication without scheme",
            {"taskId": "t", "url": "https://h.example.com", "authentication": {}},
            PARAMS,
        ),
        ("params an array", ["https://h.example.com"], REQUEST),
    ]
    for name, params, code in push_params:
        add(
            Case(
                f"CreateTaskPushNotificationConfig {name}",
                rpc("CreateTaskPushNotificationConfig", params, id=62),
                code,
                id=62,
            )
        )
    for method in ["GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"]:
        add(
            Case(
                f"{method} unknown task",
                rpc(method, {"taskId": "missing", "id": "x"}, id=63),
                NOT_FOUND,
                id=63,
            )
        )
        add(Case(f"{method} no id", rpc(method, {"taskId": "missing"}, id=64), PARAMS, id=64))
    add(
        Case(
            "ListTaskPushNotificationConfigs unknown task",
            rpc("ListTaskPushNotificationConfigs", {"taskId": "missing"}, id=65),
            NOT_FOUND,
            id=65,
        )
    )
    add(
        Case(
            "inline push config with a refused URL",
            rpc(
                "SendMessage",
                {
                    "message": message(),
                    "configuration": {
                        "taskPushNotificationConfig": {"url": "http://169.254.169.254/"}
                    },
                },
                id=66,
            ),
            PARAMS,
            id=66,
        )
    )
    add(
        Case(
            "follow-up to an unknown task",
            rpc("SendMessage", {"message": message(taskId="missing")}, id=61),
            NOT_FOUND,
            id=61,
        )
    )
    return cases


CORPUS = corpus()


def test_the_corpus_is_large_and_named_once() -> None:
    assert len(CORPUS) >= 200, len(CORPUS)
    names = [case.name for case in CORPUS]
    assert len(set(names)) == len(names), [n for n in names if names.count(n) > 1]


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What reaches the bus (the in-memory layer's sends), for asserting there is nothing."""
    sent: list[Any] = []

    async def spy(self: Any, *args: Any) -> None:
        sent.append(args)

    monkeypatch.setattr(InMemoryChannelLayer, "send", spy)
    monkeypatch.setattr(InMemoryChannelLayer, "group_send", spy)
    return sent


async def answer(case: Case) -> Any:
    return await AsyncClient().post(
        "/a2a/",
        data=case.body,
        content_type=case.content_type,
        headers={"A2A-Version": "1.0", **case.headers},
    )


async def test_every_malformed_request_gets_its_precise_error_and_changes_nothing(
    database: str, published: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    wrong: list[str] = []
    for case in CORPUS:
        response = await answer(case)
        try:
            reply = response.json()
            got = (response.status_code, reply["error"]["code"], reply["id"])
        except (ValueError, KeyError, TypeError):
            wrong.append(f"{case.name}: HTTP {response.status_code} {response.content[:200]!r}")
            continue
        if got != (case.status, case.code, case.id) or reply.get("jsonrpc") != "2.0":
            wrong.append(f"{case.name}: got {got}, want {(case.status, case.code, case.id)}")
        if "Traceback" in response.content.decode(errors="replace"):
            wrong.append(f"{case.name}: a traceback in the answer")
        if published:
            wrong.append(f"{case.name}: published {published[:1]!r}")
            published.clear()
        if await Task.objects.acount() or await TaskEvent.objects.acount():
            wrong.append(f"{case.name}: stored something")
    assert not wrong, "\n".join(wrong)
    # A client's mistake is not a fault of ours: nothing logged at ERROR.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

METHODS = ["GetTask", "ListTasks", "CancelTask", "SubscribeToTask", "GetExtendedAgentCard"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(METHODS),
    params=st.dictionaries(
        st.sampled_from(
            [
                "id",
                "historyLength",
                "pageSize",
                "pageToken",
                "status",
                "contextId",
                "statusTimestampAfter",
                "includeArtifacts",
                "tenant",
                "metadata",
                "x",
            ]
        ),
        json_values,
        max_size=5,
    ),
)
async def test_generated_params_never_fault(method: str, params: dict[str, Any]) -> None:
    response = await AsyncClient().post(
        "/a2a/",
        data=json.dumps({"jsonrpc": "2.0", "id": 99, "method": method, "params": params}),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    assert response.status_code == 200
    reply = response.json()
    assert reply["id"] == 99
    if "error" in reply:
        assert reply["error"]["code"] not in (-32603, -32700, -32600), reply["error"]
    assert await Task.objects.acount() == 0
