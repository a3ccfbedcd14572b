"""The A2A endpoints end to end: a real daphne server, raw HTTP, our SSE decoder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from a2a_toolcall.contract import TOOL_CALL_V1_URI, ToolTimeline, parse_tool_call
from a2a_toolcall.protocol.sse import SSEDecoder
from tests.live import LiveServer, live_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server("memory", tmp_path_factory.mktemp("live"), A2A_TEST_KEEPALIVE="0.3") as s:
        yield s


@pytest.fixture(scope="module")
def lossy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server("lossy", tmp_path_factory.mktemp("lossy"), A2A_TEST_LOSS="0.25") as s:
        yield s


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {
            "messageId": f"m-{text[:8]}",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **extra,
        }
    }


@dataclass
class Stream:
    """What one SSE response carried."""

    status: int
    headers: httpx.Headers
    events: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    keepalives: int = 0

    @property
    def results(self) -> list[dict[str, Any]]:
        return [e["result"] for _, e in self.events]

    @property
    def ids(self) -> list[str | None]:
        return [i for i, _ in self.events]

    def states(self) -> list[str]:
        return [r["statusUpdate"]["status"]["state"] for r in self.results if "statusUpdate" in r]

    def frames(self) -> list[Any]:
        return [
            parse_tool_call(r["artifactUpdate"]["artifact"]["parts"])
            for r in self.results
            if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["name"] == "tool-call"
        ]


class Client:
    """A bare JSON-RPC client: exactly what goes over the wire, nothing smoothed over."""

    def __init__(
        self, server: LiveServer, version: str | None = "1.0", *, user: str | None = "tester"
    ) -> None:
        self.server = server
        self.headers = {"A2A-Version": version} if version else {}
        if user is not None:
            # One caller throughout (ListTasks shows a caller its own tasks only).
            self.headers["X-API-Key"] = server.api_key(user)
        self.counter = 0

    def _body(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.counter += 1
        return {"jsonrpc": "2.0", "id": self.counter, "method": method, "params": params}

    async def call(self, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(
                self.server.endpoint,
                json=self._body(method, params),
                headers={**self.headers, **headers},
            )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        return response.json()  # type: ignore[no-any-return]

    async def raw(
        self, content: bytes, content_type: str = "application/json", path: str = "/a2a/"
    ) -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as http:
            return await http.post(
                self.server.url + path,
                content=content,
                headers={**self.headers, "Content-Type": content_type},
            )

    async def stream(
        self, method: str, params: dict[str, Any], *, stop_after: int | None = None, **headers: str
    ) -> Stream:
        decoder = SSEDecoder()
        async with (
            httpx.AsyncClient(timeout=30) as http,
            http.stream(
                "POST",
                self.server.endpoint,
                json=self._body(method, params),
                headers={**self.headers, **headers},
            ) as response,
        ):
            result = Stream(response.status_code, response.headers)
            if not response.headers["content-type"].startswith("text/event-stream"):
                await response.aread()
                result.events.append((None, response.json()))
                return result
            async for chunk in response.aiter_bytes():
                result.keepalives += chunk.count(b": keepalive\n")
                for event in decoder.feed(chunk):
                    result.events.append((event.id, event.json()))
                    if stop_after is not None and len(result.events) >= stop_after:
                        break  # the rest of a chunk is never read: it is lost with the connection
                if stop_after is not None and len(result.events) >= stop_after:
                    break  # drop the connection, like a client going away
        return result


# --- the agent card ----------------------------------------------------------------------------


async def test_agent_card_declares_the_extension_and_caches(server: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.get(server.url + "/.well-known/agent-card.json")
        card = response.json()
        assert response.status_code == 200
        assert "max-age=" in response.headers["cache-control"]
        etag = response.headers["etag"]
        again = await http.get(
            server.url + "/.well-known/agent-card.json", headers={"If-None-Match": etag}
        )
    assert again.status_code == 304
    assert card["capabilities"]["streaming"] is True
    assert card["capabilities"]["pushNotifications"] is True
    (extension,) = card["capabilities"]["extensions"]
    assert extension["uri"] == TOOL_CALL_V1_URI and extension["required"] is False
    assert {(i["protocolVersion"], i["url"]) for i in card["supportedInterfaces"]} == {
        ("1.0", server.endpoint),
        ("0.3", server.endpoint),
    }
    # The 0.3 members, for 0.3 clients.
    assert card["url"] == server.endpoint and card["protocolVersion"] == "0.3"
    assert card["preferredTransport"] == "JSONRPC"


# --- streaming ---------------------------------------------------------------------------------


async def test_a_streamed_task_shows_every_tool_as_it_starts_and_resolves(
    server: LiveServer,
) -> None:
    client = Client(server)
    stream = await client.stream(
        "SendStreamingMessage",
        message("what is 6*7 and the time in Tokyo and wait 1 and fail"),
        **{"A2A-Extensions": TOOL_CALL_V1_URI},
    )
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["a2a-extensions"] == TOOL_CALL_V1_URI
    results = stream.results
    assert results[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert results[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    narration = [
        r["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        for r in results
        if "statusUpdate" in r and "message" in r["statusUpdate"]["status"]
    ]
    assert narration[:2] == [
        "thinking",
        "running calculator; running clock; running slow; running broken",
    ]
    # Every event carries the task's seq as its SSE id: consecutive, from 1.
    assert stream.ids == [str(i) for i in range(1, len(results) + 1)]
    frames = stream.frames()
    assert [f.phase for f in frames[:4]] == ["started"] * 4
    timeline = ToolTimeline(frames)
    assert not timeline.pending and not timeline.contradictions
    assert [c.state.value for c in timeline] == ["completed", "completed", "completed", "failed"]
    for r in results:
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["name"] == "tool-call":
            update = r["artifactUpdate"]
            assert update["append"] is False and update["lastChunk"] is False
            assert update["artifact"]["extensions"] == [TOOL_CALL_V1_URI]
    answer = results[-2]["artifactUpdate"]
    assert answer["artifact"]["name"] == "answer" and answer["lastChunk"] is True
    assert answer["artifact"]["parts"][0]["text"].startswith("6*7 = 42; it is ")
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert stream.keepalives >= 1  # the slow tool left the stream idle past the interval
    task_ids = {
        r.get("task", r.get("statusUpdate", r.get("artifactUpdate", {}))).get(
            "id", r.get("statusUpdate", r.get("artifactUpdate", {})).get("taskId")
        )
        for r in results
    }
    assert len(task_ids) == 1  # nothing from another task


async def test_concurrent_streams_never_mix(server: LiveServer) -> None:
    client = Client(server)
    streams = await asyncio.gather(
        *(client.stream("SendStreamingMessage", message(f"what is {i}*{i}")) for i in range(12))
    )
    for i, stream in enumerate(streams):
        task_id = stream.results[0]["task"]["id"]
        for result in stream.results[1:]:
            (update,) = result.values()
            assert update["taskId"] == task_id
        assert stream.results[-2]["artifactUpdate"]["artifact"]["parts"][0]["text"] == (
            f"{i}*{i} = {i * i}."
        )


async def test_blocking_send_returns_the_answer_and_a_timeline_summary(server: LiveServer) -> None:
    client = Client(server)
    reply = await client.call("SendMessage", message("what is 2**8 and fail"))
    task = reply["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # The answer is the only artifact; the tool timeline is one summary in the metadata.
    assert [a["name"] for a in task["artifacts"]] == ["answer"]
    calls = task["metadata"][TOOL_CALL_V1_URI]["toolCalls"]
    assert [(c["name"], c["state"]) for c in calls] == [
        ("calculator", "completed"),
        ("broken", "failed"),
    ]
    assert calls[0]["result"] == 256 and calls[1]["error"].startswith("RuntimeError")


async def test_return_immediately_and_get_task(server: LiveServer) -> None:
    client = Client(server)
    reply = await client.call(
        "SendMessage", {**message("wait 0.5"), "configuration": {"returnImmediately": True}}
    )
    task = reply["result"]["task"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    for _ in range(100):
        got = (await client.call("GetTask", {"id": task["id"]}))["result"]
        if got["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.05)
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "history" in got
    trimmed = (await client.call("GetTask", {"id": task["id"], "historyLength": 0}))["result"]
    assert "history" not in trimmed
    last = (await client.call("GetTask", {"id": task["id"], "historyLength": 1}))["result"]
    assert len(last["history"]) == 1 and last["history"][0]["role"] == "ROLE_AGENT"


async def test_list_tasks_filters_and_pages(server: LiveServer) -> None:
    client = Client(server)
    context = "ctx-list-test"
    for i in range(5):
        await client.call("SendMessage", message(f"what is {i}+0", contextId=context))
    page1 = (await client.call("ListTasks", {"contextId": context, "pageSize": 2}))["result"]
    assert page1["totalSize"] == 5 and page1["pageSize"] == 2 and len(page1["tasks"]) == 2
    assert all("artifacts" not in t for t in page1["tasks"])
    page2 = (
        await client.call(
            "ListTasks", {"contextId": context, "pageSize": 2, "pageToken": page1["nextPageToken"]}
        )
    )["result"]
    page3 = (
        await client.call(
            "ListTasks", {"contextId": context, "pageSize": 2, "pageToken": page2["nextPageToken"]}
        )
    )["result"]
    assert page3["nextPageToken"] == ""
    ids = [t["id"] for p in (page1, page2, page3) for t in p["tasks"]]
    assert len(ids) == len(set(ids)) == 5
    stamps = [t["status"]["timestamp"] for p in (page1, page2, page3) for t in p["tasks"]]
    assert stamps == sorted(stamps, reverse=True)
    full = (
        await client.call(
            "ListTasks",
            {"contextId": context, "includeArtifacts": True, "status": "TASK_STATE_COMPLETED"},
        )
    )["result"]
    assert len(full["tasks"]) == 5 and all(t["artifacts"] for t in full["tasks"])
    none = await client.call("ListTasks", {"contextId": context, "status": "TASK_STATE_FAILED"})
    assert none["result"] == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


async def test_cancel_mid_stream_stops_the_agent(server: LiveServer) -> None:
    client = Client(server)

    async def cancel_when_started(stream_task: asyncio.Task[Stream]) -> dict[str, Any]:
        for _ in range(200):
            listed = (await client.call("ListTasks", {"contextId": "ctx-cancel"}))["result"]
            if listed["tasks"] and listed["tasks"][0]["status"]["state"] == "TASK_STATE_WORKING":
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the slow tool has started
        return await client.call("CancelTask", {"id": listed["tasks"][0]["id"]})

    stream_task = asyncio.ensure_future(
        client.stream("SendStreamingMessage", message("wait 60", contextId="ctx-cancel"))
    )
    canceled = await asyncio.wait_for(cancel_when_started(stream_task), 30)
    stream = await asyncio.wait_for(stream_task, 30)  # long before the 60 s tool would end
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    frames = stream.frames()
    assert [(f.phase, getattr(f, "error", None)) for f in frames] == [
        ("started", None),
        ("failed", "cancelled"),
    ]
    assert stream.states()[-1] == "TASK_STATE_CANCELED"
    again = await client.call("CancelTask", {"id": canceled["result"]["id"]})
    assert again["error"]["code"] == -32002


async def test_multi_turn_input_required(server: LiveServer) -> None:
    client = Client(server)
    first = await client.stream("SendStreamingMessage", message("what is 1+1 and ask me"))
    assert first.states()[-1] == "TASK_STATE_INPUT_REQUIRED"  # the stream ends there
    question = first.results[-1]["statusUpdate"]["status"]["message"]
    assert question["parts"][0]["text"] == "What is your name?"
    task_id = first.results[0]["task"]["id"]
    second = await client.stream("SendStreamingMessage", message("Ada", taskId=task_id))
    assert second.results[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert second.ids[0] is None and second.ids[1] == str(len(first.events) + 1)
    assert second.states()[0] == "TASK_STATE_WORKING"
    assert second.states()[-1] == "TASK_STATE_COMPLETED"
    assert second.results[-2]["artifactUpdate"]["artifact"]["parts"][0]["text"] == (
        "1+1 = 2; nice to meet you, Ada."
    )
    task = (await client.call("GetTask", {"id": task_id}))["result"]
    assert [m["role"] for m in task["history"]] == [
        "ROLE_USER",
        "ROLE_AGENT",
        "ROLE_USER",
        "ROLE_AGENT",
    ]
    late = await client.call("SendMessage", message("again", taskId=task_id))
    assert late["error"]["code"] == -32004


async def test_resubscribe_replays_what_a_dropped_client_missed(server: LiveServer) -> None:
    client = Client(server)
    first = await client.stream(
        "SendStreamingMessage", message("wait 1 and what is 3*3"), stop_after=4
    )
    task_id = first.results[0]["task"]["id"]
    last_id = first.ids[-1]
    assert last_id == "4"
    resumed = await client.stream("SubscribeToTask", {"id": task_id}, **{"Last-Event-ID": last_id})
    assert "task" in resumed.results[0] and resumed.ids[0] is None
    assert resumed.ids[1:] == [str(i) for i in range(5, len(resumed.events) + 4)]
    everything = first.frames() + resumed.frames()
    timeline = ToolTimeline(everything)
    assert not timeline.pending and not timeline.contradictions and len(timeline) == 2
    assert resumed.states()[-1] == "TASK_STATE_COMPLETED"
    done = await client.call("SubscribeToTask", {"id": task_id})
    assert done["error"]["code"] == -32004


async def test_the_v03_dialect(server: LiveServer) -> None:
    client = Client(server, version=None)  # no A2A-Version header means 0.3
    stream = await client.stream(
        "message/stream",
        {
            "message": {
                "kind": "message",
                "messageId": "m1",
                "role": "user",
                "parts": [{"kind": "text", "text": "what is 5*5 and ask me"}],
            }
        },
    )
    kinds = [r["kind"] for r in stream.results]
    assert kinds[0] == "task" and set(kinds[1:]) <= {"status-update", "artifact-update"}
    finals = [r["final"] for r in stream.results if r["kind"] == "status-update"]
    assert finals[-1] is True and not any(finals[:-1])
    assert stream.results[-1]["status"]["state"] == "input-required"
    frames = [
        parse_tool_call(r["artifact"]["parts"])
        for r in stream.results
        if r["kind"] == "artifact-update"
    ]
    assert [f.phase for f in frames] == ["started", "completed"]
    task_id = stream.results[0]["id"]
    got = await client.call("tasks/get", {"id": task_id})
    assert got["result"]["kind"] == "task" and got["result"]["status"]["state"] == "input-required"
    answered = await client.call(
        "message/send",
        {
            "message": {
                "kind": "message",
                "messageId": "m2",
                "role": "user",
                "taskId": task_id,
                "parts": [{"kind": "text", "text": "Bo"}],
            }
        },
    )
    assert answered["result"]["status"]["state"] == "completed"
    assert (await client.call("tasks/cancel", {"id": task_id}))["error"]["code"] == -32002


# --- errors ------------------------------------------------------------------------------------


async def task_count(client: Client) -> int:
    return int((await client.call("ListTasks", {}))["result"]["totalSize"])


@pytest.mark.parametrize(
    ("body", "content_type", "code", "text"),
    [
        (b"{not json", "application/json", -32700, "Invalid JSON payload"),
        (b"[]", "application/json", -32600, "a batch"),
        (b'{"jsonrpc":"1.0","id":1,"method":"GetTask"}', "application/json", -32600, "jsonrpc"),
        (b'{"jsonrpc":"2.0","id":1}', "application/json", -32600, "method"),
        (b'{"jsonrpc":"2.0","id":1,"method":"Nope"}', "application/json", -32601, "Nope"),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"X"}}}',
            "application/json",
            -32602,
            "params.message",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
            b'"role":"ROLE_USER","parts":[]}}}',
            "application/json",
            -32602,
            "at least one part",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
            b'"role":"ROLE_AGENT","parts":[{"text":"x"}]}}}',
            "application/json",
            -32602,
            "role",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":-1}}',
            "application/json",
            -32602,
            "historyLength",
        ),
        (b'{"jsonrpc":"2.0","id":1,"method":"SendMessage"}', "text/plain", -32005, "Content-Type"),
        (b"x" * (1024 * 1024 + 10), "application/json", -32600, "limit"),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"missing"}}',
            "application/json",
            -32001,
            "Task not found",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{}}',
            "application/json",
            -32602,
            "url",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}',
            "application/json",
            -32004,
            "extended agent card",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
            b'"role":"ROLE_USER","taskId":"missing","parts":[{"text":"x"}]}}}',
            "application/json",
            -32001,
            "Task not found",
        ),
    ],
)
async def test_bad_requests_get_precise_errors_and_change_nothing(
    server: LiveServer, body: bytes, content_type: str, code: int, text: str
) -> None:
    client = Client(server)
    before = await task_count(client)
    response = await client.raw(body, content_type)
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == code
    assert text in error["message"]
    assert error["data"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert "Traceback" not in response.text
    assert await task_count(client) == before


async def test_invalid_params_list_every_field(server: LiveServer) -> None:
    error = (await Client(server).call("SendMessage", {"message": {"role": "ROLE_PIRATE"}}))[
        "error"
    ]
    (violations,) = [d["fieldViolations"] for d in error["data"] if "fieldViolations" in d]
    assert {v["field"] for v in violations} >= {"params.message.messageId", "params.message.role"}


async def test_versions_and_paths(server: LiveServer) -> None:
    unknown = await Client(server, version="2.0").call("GetTask", {"id": "x"})
    assert unknown["error"]["code"] == -32009
    v03_method_in_v10 = await Client(server).call("tasks/get", {"id": "x"})
    assert v03_method_in_v10["error"]["code"] == -32601
    v10_method_in_v03 = await Client(server, version="0.3").call("ListTasks", {})
    assert v10_method_in_v03["error"]["code"] == -32601
    for path in ("/a2a", "/a2a/"):  # no redirect either way
        response = await Client(server).raw(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            ).encode(),
            path=path,
        )
        assert response.status_code == 200 and response.json()["error"]["code"] == -32001
    async with httpx.AsyncClient() as http:
        response = await http.get(server.endpoint)
    assert response.status_code == 405 and response.headers["allow"] == "POST"


# --- a lossy bus -------------------------------------------------------------------------------


async def test_a_bus_losing_messages_still_streams_every_frame_once_in_order(
    lossy_server: LiveServer,
) -> None:
    """The layer drops a quarter of all group messages; the stream must not show it."""
    client = Client(lossy_server)
    ask = " and ".join(f"what is {i}*{i}" for i in range(25))
    stream = await asyncio.wait_for(client.stream("SendStreamingMessage", message(ask)), 120)
    assert stream.ids == [str(i) for i in range(1, len(stream.events) + 1)]
    frames = stream.frames()
    assert len(frames) == 50
    timeline = ToolTimeline(frames)
    assert len(timeline) == 25 and not timeline.pending and not timeline.contradictions
    assert [f.phase for f in frames[:25]] == ["started"] * 25
    assert stream.states()[-1] == "TASK_STATE_COMPLETED"
    task_id = stream.results[0]["task"]["id"]
    stored = (await client.call("GetTask", {"id": task_id}))["result"]
    assert stored["artifacts"][0]["parts"][0]["text"].startswith("0*0 = 0; 1*1 = 1;")


@pytest.fixture(scope="module")
def tck_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server("memory", tmp_path_factory.mktemp("tck"), A2A_TEST_AGENT="tck") as s:
        yield s


async def test_direct_message_replies_and_streamed_artifacts(tck_server: LiveServer) -> None:
    client = Client(tck_server)
    direct = await client.call(
        "SendMessage",
        {
            "message": {
                "messageId": "tck-message-response-1",
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
        },
    )
    reply = direct["result"]["message"]
    assert reply["role"] == "ROLE_AGENT" and reply["parts"] == [{"text": "Direct message response"}]
    assert "contextId" in reply
    chunked = await client.stream(
        "SendStreamingMessage",
        {
            "message": {
                "messageId": "tck-stream-artifact-chunked-1",
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
        },
    )
    updates = [r["artifactUpdate"] for r in chunked.results if "artifactUpdate" in r]
    assert [(u["artifact"]["parts"][0]["text"], u["append"], u["lastChunk"]) for u in updates] == [
        ("chunk-1 ", False, False),
        ("chunk-2", True, True),
    ]
    task = (await client.call("GetTask", {"id": chunked.results[0]["task"]["id"]}))["result"]
    assert task["artifacts"] == [
        {"artifactId": "chunked", "parts": [{"text": "chunk-1 "}, {"text": "chunk-2"}]}
    ]
    rejected = await client.call(
        "SendMessage",
        {
            "message": {
                "messageId": "tck-reject-task-1",
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
        },
    )
    assert rejected["result"]["task"]["status"]["state"] == "TASK_STATE_REJECTED"


async def test_the_card_for_1_0_clients_is_strict_and_dated(server: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        strict = await http.get(
            server.url + "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}
        )
        assert "url" not in strict.json() and "supportedInterfaces" in strict.json()
        assert strict.headers["vary"] == "A2A-Version"
        since = await http.get(
            server.url + "/.well-known/agent-card.json",
            headers={"If-Modified-Since": strict.headers["last-modified"]},
        )
    assert since.status_code == 304
