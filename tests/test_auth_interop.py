"""The official clients authenticate with their own mechanisms, as the agent card tells them.

Against a real daphne server with anonymous callers off, which accepts API keys (minted by
``manage.py a2a_apikey``) and bearer JWTs from a test identity provider (tests/idp.py, its key
set served over HTTP); the public card advertises both in ``securitySchemes``. Nothing sets an
authentication header by hand:

- the Python a2a-sdk client gets an ``AuthInterceptor`` over the SDK's
  ``InMemoryContextCredentialStore``, which holds credentials by scheme name; the interceptor
  reads the scheme (apiKey header name, HTTP Bearer) from the card, on the 1.0 JSON-RPC transport
  and on the 0.3 one (only the 0.3 interface left on the card);
- the JavaScript SDK (@a2a-js/sdk, installed by the tests under the user's cache: tests/sdkjs.py)
  runs tests/js_auth_client/client.mjs, which picks the scheme from the card and hands the
  credential to the SDK's ``createAuthenticatingFetchWithRetry``, on its 1.0 transport and its
  0.3 compatibility transport.

Each proves: a streamed message completes; the owner reads the task back (GetTask, ListTasks);
without credentials the calls are refused (HTTP 401); another user's client is told the task
does not exist (-32001) for GetTask, SubscribeToTask and CancelTask.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.client import Client, ClientCallContext
from a2a.client.errors import A2AClientError
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotFoundError

from a2a_toolcall.contract import ToolTimeline, parse_tool_call
from tests import sdkjs
from tests.idp import IdentityProvider
from tests.live import LiveServer, live_server
from tests.test_sdk_interop import collect, frames_of, public_card, states, user

TRANSPORTS = ["1.0", "0.3"]
SCHEMES = ["apiKey", "bearer"]
"""The card's scheme names: ApiKeyAuthenticator's and BearerAuthenticator's."""

API_KEY_HEADER = "x-api-key"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider) -> Iterator[LiveServer]:
    with live_server(
        "memory",
        tmp_path_factory.mktemp("auth-interop"),
        A2A_TEST_ANONYMOUS="0",
        **idp.env(create_users=True),
    ) as running:
        yield running


def credential(server: LiveServer, idp: IdentityProvider, scheme: str, who: str) -> str:
    """``who``'s credential of the scheme: an API key minted on the server, or a JWT."""
    if scheme == "apiKey":
        return server.api_key(who)
    return idp.token(f"token-{who}")


def test_the_public_card_advertises_both_schemes(server: LiveServer, idp: IdentityProvider) -> None:
    card = httpx.get(server.url + "/.well-known/agent-card.json").json()
    schemes = card["securitySchemes"]
    api_key = schemes["apiKey"]["apiKeySecurityScheme"]
    assert (api_key["location"], api_key["name"]) == ("header", "X-API-Key")
    assert schemes["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert schemes["bearer"]["httpAuthSecurityScheme"]["bearerFormat"] == "JWT"
    assert schemes["openIdConnect"]["openIdConnectSecurityScheme"]["openIdConnectUrl"] == (
        idp.discovery_url
    )
    # Any one scheme suffices: one requirement each.
    assert sorted(next(iter(r["schemes"])) for r in card["securityRequirements"]) == sorted(schemes)


# --- the Python SDK -------------------------------------------------------------------------


@dataclass
class PythonSdk:
    """One SDK client with an AuthInterceptor; who calls is the call context's session."""

    client: Client
    scheme: str
    transport: str
    requests: list[httpx.Request] = field(default_factory=list)

    @staticmethod
    def as_(session: str) -> ClientCallContext:
        """A call context for ``session`` ("owner", "other"; "stranger" has no credentials).
        A fresh one for every call: the interceptor writes the headers into it."""
        return ClientCallContext(state={"sessionId": session})


@pytest.fixture(params=[(s, t) for s in SCHEMES for t in TRANSPORTS], ids="-".join)
async def python_sdk(
    request: pytest.FixtureRequest, server: LiveServer, idp: IdentityProvider
) -> AsyncIterator[PythonSdk]:
    scheme, transport = request.param
    card = await public_card(server, transport)
    credentials = InMemoryContextCredentialStore()
    await credentials.set_credentials("owner", scheme, credential(server, idp, scheme, "alice"))
    await credentials.set_credentials("other", scheme, credential(server, idp, scheme, "bob"))
    requests: list[httpx.Request] = []

    async def record(sent: httpx.Request) -> None:
        requests.append(sent)

    async with httpx.AsyncClient(
        timeout=httpx.Timeout(30, read=None), event_hooks={"request": [record]}
    ) as http:
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(
            card, interceptors=[AuthInterceptor(credentials)]
        )
        try:
            yield PythonSdk(client=client, scheme=scheme, transport=transport, requests=requests)
        finally:
            await client.close()


def assert_authenticated_as(sdk: PythonSdk, requests: list[httpx.Request]) -> None:
    """Each request carried the scheme's header, put there by the interceptor, and no other."""
    assert requests
    for sent in requests:
        if sdk.scheme == "apiKey":
            assert sent.headers.get(API_KEY_HEADER, "").startswith("a2a_"), sent.headers
            assert "authorization" not in sent.headers
        else:
            assert sent.headers.get("authorization", "").startswith("Bearer ey"), sent.headers
            assert API_KEY_HEADER not in sent.headers


def method_of(sent: httpx.Request) -> str:
    """The JSON-RPC method of a request: 1.0 names (SendStreamingMessage) or 0.3 ones."""
    return str(json.loads(sent.content)["method"])


async def test_python_sdk_streams_and_reads_back_with_the_cards_scheme(
    python_sdk: PythonSdk,
) -> None:
    sdk = python_sdk
    events = await asyncio.wait_for(
        collect(sdk.client.send_message(user("what is 6*7"), context=sdk.as_("owner"))), 60
    )
    assert events[0].HasField("task")
    assert states(events)[-1] == pb.TASK_STATE_COMPLETED
    timeline = ToolTimeline(frames_of(events))
    assert {c.name: c.state.value for c in timeline} == {"calculator": "completed"}
    answers = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert answers[-1].parts[0].text == "6*7 = 42."
    task = events[0].task

    got = await sdk.client.get_task(pb.GetTaskRequest(id=task.id), context=sdk.as_("owner"))
    assert got.id == task.id and got.status.state == pb.TASK_STATE_COMPLETED
    if sdk.transport == "1.0":
        listed = await sdk.client.list_tasks(
            pb.ListTasksRequest(context_id=task.context_id), context=sdk.as_("owner")
        )
        assert [t.id for t in listed.tasks] == [task.id]

    assert_authenticated_as(sdk, sdk.requests)
    methods = [method_of(r) for r in sdk.requests]
    if sdk.transport == "1.0":
        assert methods == ["SendStreamingMessage", "GetTask", "ListTasks"]
    else:
        assert methods == ["message/stream", "tasks/get"]


def assert_unauthenticated(raised: pytest.ExceptionInfo[A2AClientError]) -> None:
    """The SDK's error for an HTTP 401, with the server's challenge."""
    cause = raised.value.__cause__
    assert isinstance(cause, httpx.HTTPStatusError), repr(raised.value)
    assert cause.response.status_code == 401
    assert cause.response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("context", ["none", "stranger"])
async def test_python_sdk_without_credentials_is_refused_with_401(
    python_sdk: PythonSdk, context: str
) -> None:
    sdk = python_sdk
    owned = await asyncio.wait_for(
        collect(sdk.client.send_message(user("what is 2+2"), context=sdk.as_("owner"))), 60
    )
    task = owned[0].task
    before = len(sdk.requests)
    call_context = None if context == "none" else sdk.as_("stranger")
    with pytest.raises(A2AClientError) as raised:
        await collect(sdk.client.send_message(user("what is 1+1"), context=call_context))
    assert_unauthenticated(raised)
    with pytest.raises(A2AClientError) as raised:
        await sdk.client.get_task(pb.GetTaskRequest(id=task.id), context=call_context)
    assert_unauthenticated(raised)
    if sdk.transport == "1.0":
        with pytest.raises(A2AClientError) as raised:
            await sdk.client.list_tasks(
                pb.ListTasksRequest(context_id=task.context_id), context=call_context
            )
        assert_unauthenticated(raised)
    # The client had credentials for another session, and sent nothing that could authenticate.
    refused = sdk.requests[before:]
    assert len(refused) == (3 if sdk.transport == "1.0" else 2)
    for sent in refused:
        assert "authorization" not in sent.headers and API_KEY_HEADER not in sent.headers


async def test_python_sdk_another_users_client_is_told_the_task_does_not_exist(
    python_sdk: PythonSdk,
) -> None:
    sdk = python_sdk
    events: list[pb.StreamResponse] = []
    tool_started = asyncio.Event()

    async def read() -> None:
        async for event in sdk.client.send_message(user("wait 30"), context=sdk.as_("owner")):
            events.append(event)
            if frames_of(events):
                tool_started.set()

    reading = asyncio.ensure_future(read())
    try:
        async with asyncio.timeout(30):
            await tool_started.wait()
        task_id = events[0].task.id
        # While the task runs, its id means nothing to another user.
        with pytest.raises(TaskNotFoundError):
            await sdk.client.get_task(pb.GetTaskRequest(id=task_id), context=sdk.as_("other"))
        with pytest.raises(TaskNotFoundError):
            await collect(
                sdk.client.subscribe(
                    pb.SubscribeToTaskRequest(id=task_id), context=sdk.as_("other")
                )
            )
        with pytest.raises(TaskNotFoundError):
            await sdk.client.cancel_task(pb.CancelTaskRequest(id=task_id), context=sdk.as_("other"))
        # ... and is still its owner's to read and cancel.
        running = await sdk.client.get_task(pb.GetTaskRequest(id=task_id), context=sdk.as_("owner"))
        assert running.status.state == pb.TASK_STATE_WORKING
        canceled = await sdk.client.cancel_task(
            pb.CancelTaskRequest(id=task_id), context=sdk.as_("owner")
        )
        assert canceled.status.state == pb.TASK_STATE_CANCELED
        async with asyncio.timeout(30):
            await reading
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
    assert states(events)[-1] == pb.TASK_STATE_CANCELED
    assert_authenticated_as(sdk, sdk.requests)
    assert len(sdk.requests) == 6


# --- the JavaScript SDK ---------------------------------------------------------------------

JS_COMPLETED = 3
"""TaskState.TASK_STATE_COMPLETED in the JS SDK's types."""

JS_METHODS = {
    "1.0": ["SendStreamingMessage", "GetTask", "ListTasks"],
    "0.3": ["message/stream", "tasks/get"],
}
JS_REFUSED_METHODS = {
    "1.0": ["GetTask", "SubscribeToTask", "CancelTask"],
    "0.3": ["tasks/get", "tasks/resubscribe", "tasks/cancel"],
}


@pytest.fixture(scope="module")
def js_sdk() -> str:
    """The pinned @a2a-js/sdk, installed under the user's cache if need be."""
    try:
        sdkjs.ensure_js_sdk()
    except sdkjs.JsSdkUnavailable as missing:
        pytest.fail(str(missing), pytrace=False)
    return sdkjs.pinned_version()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_js_sdk_authenticates_with_the_cards_scheme(
    js_sdk: str, server: LiveServer, idp: IdentityProvider, scheme: str, transport: str
) -> None:
    lines = sdkjs.run_client(
        "client.mjs",
        {
            "baseUrl": server.url,
            "protocolVersion": transport,
            "credential": {"kind": scheme, "value": credential(server, idp, scheme, "carol")},
            "otherCredential": {"kind": scheme, "value": credential(server, idp, scheme, "dave")},
            "text": "what is 6*7",
        },
    )
    steps: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        steps.setdefault(line["step"], []).append(line)

    # The scheme came from the card.
    (chosen,) = steps["scheme"]
    header = "X-API-Key" if scheme == "apiKey" else "Authorization"
    assert chosen == {
        "step": "scheme",
        "name": scheme,
        "header": header,
        "protocolVersion": transport,
    }

    # The streamed message completed, tool frames and all.
    events = [line["event"]["payload"] for line in steps["event"]]
    assert events[0]["$case"] == "task"
    task = events[0]["value"]
    statuses = [e["value"]["status"]["state"] for e in events if e["$case"] == "statusUpdate"]
    assert statuses[-1] == JS_COMPLETED
    frames = [
        frame
        for e in events
        if e["$case"] == "artifactUpdate"
        and (frame := parse_tool_call(e["value"]["artifact"]["parts"])) is not None
    ]
    assert [(f.phase, f.name) for f in frames] == [
        ("started", "calculator"),
        ("completed", "calculator"),
    ]
    answer = [e["value"]["artifact"] for e in events if e["$case"] == "artifactUpdate"][-1]
    assert answer["parts"][0]["content"] == {"$case": "text", "value": "6*7 = 42."}

    # The owner reads it back.
    (got,) = steps["getTask"]
    assert got["task"]["id"] == task["id"] and got["task"]["status"]["state"] == JS_COMPLETED
    if transport == "1.0":
        (listed,) = steps["listTasks"]
        assert [t["id"] for t in listed["response"]["tasks"]] == [task["id"]]
    else:
        assert "listTasks" not in steps

    refused = {(r["who"], r["what"]): r for r in steps["refused"]}
    # Without credentials: the server's 401 (UNAUTHENTICATED), raised by the SDK.
    for what in ("getTask", "sendMessageStream"):
        error = refused["anonymous", what]
        assert error["error"] is not None and error["a2aError"], error
        assert error["code"] == -32041, error
    # Another user: task not found, whatever the call.
    for what in ("getTask", "resubscribeTask", "cancelTask"):
        error = refused["other", what]
        assert error["taskNotFound"] and error["code"] == -32001, error

    # On the wire: the owner's and the other user's requests carried the scheme's header (and
    # the JS SDK spoke the dialect of the interface left on the card); the anonymous ones none.
    (wire,) = steps["requests"]
    requests = wire["requests"]
    for sent in requests:
        carried = API_KEY_HEADER in sent["headers"] or sent["authorization"] == "Bearer"
        if sent["who"] == "anonymous":
            assert not carried and "authorization" not in sent["headers"], sent
            assert sent["status"] == 401, sent
        elif scheme == "apiKey":
            assert API_KEY_HEADER in sent["headers"] and not sent["authorization"], sent
        else:
            assert sent["authorization"] == "Bearer" and API_KEY_HEADER not in sent["headers"], sent
    owner = [r for r in requests if r["who"] == "owner"]
    assert [r["method"] for r in owner] == JS_METHODS[transport]
    assert {r["status"] for r in owner} == {200}
    other = [r for r in requests if r["who"] == "other"]
    assert [r["method"] for r in other] == JS_REFUSED_METHODS[transport]
