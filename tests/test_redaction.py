"""Redaction of every data value an agent hands out, end to end: the ``leaky`` agent through the
real runtime and endpoint, then the stream, GetTask, the stored rows and the terminal client.

Each :func:`~tests.agents.leaked` value says where it was handed out (``leak``); every copy of
it, wherever it turns up, must be cleaned the same way.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.test import AsyncClient

from a2a_toolcall.hygiene import REDACTED, clean_metadata, clean_part, make_cleaner
from a2a_toolcall.models import TaskEvent, ToolCall
from tests.agents import CARD, PIN, SECRET, TEXT
from tests.conftest import BOTH_DATABASES
from tests.live import ROOT, LiveServer, live_server
from tests.redaction_settings import CARD_MASK, mask_cards
from tests.test_audit import rpc, stream, until_finished

DATABASES = BOTH_DATABASES
pytestmark = [
    pytest.mark.django_db(transaction=True, databases=DATABASES),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]

STREAMED_ONLY = {"progress"}
"""Narration ``meta`` is in its status-update event only: the task keeps its last status."""
REPLY = {"reply-data", "reply-part", "reply-part-meta", "reply-text-meta"}
EVERY_KIND = {
    "progress",
    "args",
    "result",
    "artifact-data",
    "artifact-part-meta",
    "artifact-text-meta",
    "artifact-meta",
    "question-meta",
    *REPLY,
}
KEPT = EVERY_KIND - STREAMED_ONLY
"""What the task itself holds (GetTask, the Task row): artifacts, history, status, summary."""

Expected = Callable[[str], dict[str, Any]]


def default_keys(kind: str) -> dict[str, Any]:
    return {"leak": kind, "api_key": REDACTED, "auth": {"pin": PIN}, "card": CARD}


def pin_and_hook(kind: str) -> dict[str, Any]:
    # REDACT_KEYS = ["pin"] replaces the default names: api_key goes out as it is.
    return {"leak": kind, "api_key": SECRET, "auth": {"pin": REDACTED}, "card": CARD_MASK}


def live_config(kind: str) -> dict[str, Any]:
    return {"leak": kind, "api_key": REDACTED, "auth": {"pin": REDACTED}, "card": CARD_MASK}


def leaks(value: Any) -> dict[str, list[Any]]:
    """Every leaked value inside ``value``, by where it was handed out."""
    found: dict[str, list[Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "leak" in node:
                found.setdefault(node["leak"], []).append(node)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(value)
    return found


def texts(value: Any) -> list[str]:
    """Every ``text`` member inside ``value``: the free text of messages and parts."""
    if isinstance(value, dict):
        own = [value["text"]] if isinstance(value.get("text"), str) else []
        return own + [t for child in value.values() for t in texts(child)]
    if isinstance(value, list):
        return [t for child in value for t in texts(child)]
    return []


def assert_cleaned(
    value: Any, kinds: set[str], expected: Expected, *, never: tuple[str, ...]
) -> None:
    """``value`` holds the leaked values of ``kinds`` and no others, each copy cleaned as
    ``expected`` says, and none of the strings ``never`` anywhere."""
    found = leaks(value)
    assert set(found) == kinds
    for kind, copies in found.items():
        assert copies == [expected(kind)] * len(copies), kind
    text = json.dumps(value, ensure_ascii=False)
    assert not [secret for secret in never if secret in text]


@pytest.fixture
def leaky(settings: Any) -> dict[str, Any]:
    """The ``leaky`` agent as the site's agent; returns the settings dict to add to."""
    settings.A2A_TOOLCALL = {
        **settings.A2A_TOOLCALL,
        "AGENTS": {"leaky": "tests.agents.leaky"},
        "DEFAULT_AGENT": "leaky",
    }
    return dict(settings.A2A_TOOLCALL)


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = await AsyncClient().post(
        "/a2a/",
        data=rpc(method, params),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    answer: dict[str, Any] = json.loads(response.content)["result"]
    return answer


async def run_leaky(*, as_message: bool) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """One ``leaky`` task, question answered: its id, what the streams carried, and the answer
    of the blocking SendMessage that answered (with ``as_message``; else {})."""
    first = await stream(
        "SendStreamingMessage", {"message": user("go"), "metadata": {"asMessage": as_message}}
    )
    task_id = first[0]["task"]["id"]
    assert first[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answer = {"message": user("the first", taskId=task_id)}
    if as_message:
        return task_id, first, await call("SendMessage", answer)
    return task_id, first + await stream("SendStreamingMessage", answer), {}


async def assert_everywhere_cleaned(
    *, as_message: bool, expected: Expected, never: tuple[str, ...]
) -> list[dict[str, Any]]:
    task_id, events, reply = await run_leaky(as_message=as_message)
    if as_message:
        # The direct reply is the blocking answer: a Message with the reply's parts.
        assert set(reply) == {"message"}
        assert_cleaned(events, EVERY_KIND - REPLY, expected, never=never)
        assert_cleaned(reply, REPLY, expected, never=never)
    else:
        assert_cleaned(events, EVERY_KIND, expected, never=never)
    assert_cleaned(await call("GetTask", {"id": task_id}), KEPT, expected, never=never)
    task = await until_finished(task_id)
    assert task.state == "TASK_STATE_COMPLETED"
    row = {
        "status": task.status,
        "history": task.history,
        "artifacts": task.artifacts,
        "metadata": task.metadata,
        "reply_message": task.reply_message,
    }
    assert_cleaned(row, KEPT, expected, never=never)
    if as_message:
        assert_cleaned(task.reply_message, REPLY, expected, never=never)
    log = [e.data async for e in TaskEvent.objects.filter(task=task).order_by("seq")]
    assert_cleaned(log, EVERY_KIND, expected, never=never)
    calls = [{"args": c.args, "result": c.result} async for c in ToolCall.objects.filter(task=task)]
    assert_cleaned(calls, {"args", "result"}, expected, never=never)
    # Free text is not cleaned: narration, question, answer and text parts go out as written.
    assert TEXT in texts(events) and TEXT in texts(row)
    return events


@pytest.mark.parametrize("as_message", [False, True], ids=["artifact", "message"])
async def test_every_value_the_agent_hands_out_is_redacted_on_the_wire_and_in_the_database(
    database: str, leaky: dict[str, Any], as_message: bool
) -> None:
    events = await assert_everywhere_cleaned(
        as_message=as_message, expected=default_keys, never=(SECRET,)
    )
    # Where the values travel: narration meta in the event's metadata, question meta next to
    # the requestId on the input-required message, metadata where the agent put it.
    narration = next(
        e for e in events if "meta" in (e.get("statusUpdate", {}).get("metadata") or {})
    )
    assert narration["statusUpdate"]["metadata"]["meta"] == default_keys("progress")
    asked = next(
        e["statusUpdate"]["status"]["message"]
        for e in events
        if e.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_INPUT_REQUIRED"
    )
    assert asked["parts"] == [{"text": TEXT}]
    assert set(asked["metadata"]) == {"requestId", "meta"}
    assert asked["metadata"]["meta"] == {"choices": [default_keys("question-meta")]}
    report = next(
        e["artifactUpdate"]["artifact"]
        for e in events
        if e.get("artifactUpdate", {}).get("artifact", {}).get("name") == "report"
    )
    assert report["metadata"] == default_keys("artifact-meta")
    assert report["parts"][0]["metadata"] == default_keys("artifact-part-meta")


@pytest.mark.parametrize("as_message", [False, True], ids=["artifact", "message"])
async def test_custom_keys_and_the_hook_apply_to_the_same_values(
    leaky: dict[str, Any], settings: Any, as_message: bool
) -> None:
    settings.A2A_TOOLCALL = {
        **leaky,
        "REDACT_KEYS": ["pin"],
        "REDACT_HOOK": "tests.redaction_settings.mask_cards",
    }
    await assert_everywhere_cleaned(as_message=as_message, expected=pin_and_hook, never=(PIN,))


async def test_metadata_cut_for_size_stays_an_object(leaky: dict[str, Any], settings: Any) -> None:
    settings.A2A_TOOLCALL = {**leaky, "STORED_VALUE_LIMIT": 40}
    task_id, events, _ = await run_leaky(as_message=False)
    task = await until_finished(task_id)
    assert task.state == "TASK_STATE_COMPLETED"
    report, answer = task.artifacts
    cut = report["metadata"]["value"]
    assert set(report["metadata"]) == {"value"}
    assert cut.startswith('{"leak":"artifact-meta","api_key":"[r')
    assert cut.endswith("characters in all, the first 40 shown]")
    assert set(answer["parts"][2]["metadata"]) == {"value"}
    assert isinstance(answer["parts"][1]["data"], str)  # a data part may hold any JSON value
    assert SECRET not in json.dumps(events)


def test_parts_and_metadata_are_cleaned_but_not_their_text() -> None:
    clean = make_cleaner(["pin"], hook=mask_cards, limit=None)
    part = {"text": f"pin {CARD}", "metadata": {"pin": 1, "card": CARD}, "mediaType": "text/plain"}
    assert clean_part(clean, part) == {
        "text": f"pin {CARD}",
        "metadata": {"pin": REDACTED, "card": CARD_MASK},
        "mediaType": "text/plain",
    }
    assert clean_part(clean, {"data": None}) == {"data": None}
    assert clean_part(clean, {"data": [{"pin": 1}]}) == {"data": [{"pin": REDACTED}]}
    assert clean_metadata(clean, None) is None
    cut = make_cleaner(limit=10)
    assert clean_metadata(cut, {"a": "x" * 20}) == {"value": cut({"a": "x" * 20})}


# --- the terminal client, against a real server ----------------------------------------------


@pytest.fixture(scope="module")
def leaky_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(
        "memory",
        tmp_path_factory.mktemp("redaction"),
        DJANGO_SETTINGS_MODULE="tests.redaction_settings",
    ) as running:
        yield running


def test_the_terminal_client_prints_only_cleaned_values(leaky_server: LiveServer) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "a2a_toolcall", leaky_server.url, "--json", "go"],
        cwd=ROOT,
        input="the first\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stderr and PIN not in result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert_cleaned(lines, EVERY_KIND, live_config, never=(SECRET, PIN))
    assert TEXT in texts(lines)
    task_id = lines[0]["task"]["id"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    answer = httpx.post(
        leaky_server.endpoint, json=body, headers={"A2A-Version": "1.0"}, timeout=10
    )
    got = answer.json()["result"]
    # closing(): a sqlite3 connection's own context manager commits but does not close.
    with contextlib.closing(sqlite3.connect(leaky_server.env["A2A_TEST_SQLITE"])) as db:
        stored = db.execute(
            "SELECT status, history, artifacts, metadata FROM a2a_toolcall_task WHERE id = ?",
            (task_id,),
        ).fetchone()
        log = [
            json.loads(data)
            for (data,) in db.execute(
                "SELECT data FROM a2a_toolcall_taskevent WHERE task_id = ? ORDER BY seq",
                (task_id,),
            )
        ]
    row = [json.loads(column) for column in stored]
    assert_cleaned(got, KEPT, live_config, never=(SECRET, PIN))
    assert_cleaned(row, KEPT, live_config, never=(SECRET, PIN))
    assert_cleaned(log, EVERY_KIND, live_config, never=(SECRET, PIN))
