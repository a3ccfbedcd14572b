"""Agent output is untrusted: values JSON cannot carry and oversized text never fail a task.

The ``unsafe`` agent (tests/agents.py) hands out NaN, infinities, integers beyond 64 bits,
bytes, an object whose ``str()`` raises and lone surrogates, in every place an agent can, and
narrates 5 MB. In process against the real endpoint, runtime and recorder, on SQLite and
PostgreSQL: the task completes, and the stream, GetTask, the ToolCall rows and the admin all show
the documented safe forms.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import AsyncClient, Client, override_settings

from a2a_toolcall.models import ToolCall
from a2a_toolcall.protocol.sse import SSEDecoder
from a2a_toolcall.runtime.limits import TRUNCATION_MARKER
from tests.conftest import BOTH_DATABASES

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]

SAFE = {
    "nan": "[not JSON: NaN]",
    "inf": "[not JSON: Infinity]",
    "-inf": "[not JSON: -Infinity]",
    "big": "[not JSON: integer] 1180591620717411303424",
    "huge": "[not JSON: integer] of 16,610 bits",
    "bytes": "[not JSON: 3 bytes] AAEC",
    "unprintable": "[not JSON: Unprintable]",
    "surrogate": "a\ufffdb",
}
"""What each of tests.agents.UNSAFE_VALUES becomes, on every surface."""


@pytest.fixture(autouse=True)
def unsafe_agent() -> Iterator[None]:
    with override_settings(A2A_TOOLCALL={**settings.A2A_TOOLCALL, "DEFAULT_AGENT": "unsafe"}):
        yield


async def stream(params: dict[str, Any]) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params}
    response = await AsyncClient().post(
        "/a2a/",
        data=json.dumps(body),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    decoder = SSEDecoder()
    results = []
    async for chunk in response.streaming_content:  # type: ignore[attr-defined]
        for event in decoder.feed(chunk):
            results.append(event.json()["result"])
    return results


def message(text: str, **fields: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **fields}


async def test_unsafe_values_are_carried_in_their_safe_form(database: str) -> None:
    first = await stream({"message": message("go")})
    task_id = first[0]["task"]["id"]
    assert first[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    narration = [
        r["statusUpdate"]
        for r in first
        if "statusUpdate" in r
        and r["statusUpdate"]["status"]
        .get("message", {})
        .get("parts", [{}])[0]
        .get("text", "")
        .startswith("nnnn")
    ]
    (line,) = narration
    text = line["status"]["message"]["parts"][0]["text"]
    assert text == "n" * 65_536 + TRUNCATION_MARKER.format(total=5_000_000, shown=65_536)
    assert line["metadata"]["meta"] == SAFE
    frames = [
        r["artifactUpdate"]["artifact"]["parts"][0]["data"]
        for r in first
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["name"] == "tool-call"
    ]
    assert [f["phase"] for f in frames] == ["started", "completed"]
    assert frames[0]["args"] == SAFE and frames[1]["result"] == SAFE
    (odd,) = [
        r["artifactUpdate"]["artifact"]
        for r in first
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"].get("name") == "odd"
    ]
    assert odd["parts"][0]["data"] == SAFE
    assert odd["parts"][1]["text"].startswith("[not a valid part: ")
    assert odd["parts"][2]["text"] == "ok \ufffd"
    question = first[-1]["statusUpdate"]["status"]["message"]
    assert question["parts"][0]["text"] == "continue? \ufffd"
    assert question["metadata"]["meta"] == {"nan": "[not JSON: NaN]"}

    second = await stream({"message": message("yes", taskId=task_id)})
    assert second[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    reply = await AsyncClient().post(
        "/a2a/",
        data=json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
        ),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    task = reply.json()["result"]
    answer = next(a for a in task["artifacts"] if a.get("name") == "answer")
    assert answer["parts"][0]["text"] == "done yes \ufffd"
    assert answer["parts"][1]["data"] == SAFE
    assert answer["parts"][2]["data"] == SAFE["huge"]
    (summary,) = task["metadata"]["https://proto-labs.ai/a2a/ext/tool-call-v1"]["toolCalls"]
    assert summary["args"] == SAFE and summary["result"] == SAFE
    row = await ToolCall.objects.aget(task_id=task_id)
    assert row.args == SAFE and row.result == SAFE

    # The admin's task page shows the same.
    def admin_page() -> str:
        user = get_user_model().objects.create_superuser(f"admin-{uuid.uuid4().hex[:6]}")
        client = Client()
        client.force_login(user)
        page = client.get(f"/admin/a2a_toolcall/task/{task_id}/change/")
        assert page.status_code == 200
        return page.content.decode()

    html = await sync_to_async(admin_page)()
    assert "[not JSON: NaN]" in html and "[not JSON: 3 bytes] AAEC" in html
