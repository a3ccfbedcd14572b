"""The audit admin: read-only, permission-bound, fast, and showing the real timeline."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Set as AbstractSet
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import Permission, User
from django.db import connection, connections
from django.test import AsyncClient, Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from a2a_toolcall.models import Task, TaskEvent, ToolCall
from a2a_toolcall.protocol.sse import SSEDecoder
from a2a_toolcall.runtime import runner
from tests.test_audit import ask, rpc, stream, until_finished

pytestmark = pytest.mark.django_db(transaction=True)
DOCS_IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"


def run_task(text: str) -> Task:
    """A real task through the endpoint and the runtime, waited for until recorded."""

    async def go() -> Task:
        try:
            events = await stream("SendStreamingMessage", ask(text))
            return await until_finished(events[0]["task"]["id"])
        finally:
            runtime = runner._IN_PROCESS.get(asyncio.get_running_loop())
            if runtime is not None:
                await runtime.shutdown()
            await sync_to_async(connections.close_all)()

    return async_to_sync(go)()


def run_cancelled_task(
    text: str, *, running: AbstractSet[str], ended: AbstractSet[str] = frozenset()
) -> Task:
    """A real task, cancelled with CancelTask while the tools ``running`` run and once the tools
    ``ended`` finished; waited for until recorded."""

    async def go() -> Task:
        client = AsyncClient()
        headers = {"A2A-Version": "1.0"}
        try:
            response = await client.post(
                "/a2a/",
                data=rpc("SendStreamingMessage", ask(text)),
                content_type="application/json",
                headers=headers,
            )
            decoder, task_id = SSEDecoder(), ""
            started: set[str] = set()
            finished: set[str] = set()
            content = response.streaming_content  # type: ignore[attr-defined]
            try:
                async for chunk in content:
                    for event in decoder.feed(chunk):
                        result = event.json()["result"]
                        task_id = task_id or result["task"]["id"]
                        artifact = result.get("artifactUpdate", {}).get("artifact", {})
                        for part in artifact.get("parts", []):
                            frame = part.get("data") or {}
                            phase = frame.get("phase")
                            if phase in ("started", "completed", "failed"):
                                (started if phase == "started" else finished).add(frame["name"])
                    if started == running | ended and finished == ended:
                        break  # the client goes away; the task runs on
            finally:
                await content.aclose()
            cancel = await client.post(
                "/a2a/",
                data=rpc("CancelTask", {"id": task_id}),
                content_type="application/json",
                headers=headers,
            )
            assert cancel.json()["result"]["status"]["state"] == "TASK_STATE_CANCELED"
            return await until_finished(task_id)
        finally:
            runtime = runner._IN_PROCESS.get(asyncio.get_running_loop())
            if runtime is not None:
                await runtime.shutdown()
            await sync_to_async(connections.close_all)()

    return async_to_sync(go)()


@pytest.fixture
def viewer() -> Client:
    # An auditor: sees every owner's tasks (tests/test_admin_scope.py: who sees what).
    user = User.objects.create_user("auditor", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_task", "view_toolcall", "view_all_tasks"])
    )
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def recorded() -> Task:
    return run_task("what is 6*7 and the time in Tokyo and wait 0.3 and fail")


def test_task_list_filters_and_search(viewer: Client, recorded: Task) -> None:
    other = run_task("what is 1+1")
    page = viewer.get("/admin/a2a_toolcall/task/").content.decode()
    assert recorded.id in page and other.id in page
    assert "completed" in page
    failed_only = viewer.get("/admin/a2a_toolcall/task/?failed_tools=yes").content.decode()
    assert recorded.id in failed_only and other.id not in failed_only
    by_tool = viewer.get("/admin/a2a_toolcall/task/?q=clock").content.decode()
    assert recorded.id in by_tool and other.id not in by_tool
    by_text = viewer.get("/admin/a2a_toolcall/task/?q=Tokyo").content.decode()
    assert recorded.id in by_text and other.id not in by_text
    by_id = viewer.get(f"/admin/a2a_toolcall/task/?q={other.id}").content.decode()
    assert other.id in by_id and recorded.id not in by_id
    by_state = viewer.get("/admin/a2a_toolcall/task/?state=TASK_STATE_FAILED").content.decode()
    assert recorded.id not in by_state
    # The date hierarchy filters by the day in the current time zone (TIME_ZONE), which is
    # not UTC's day for part of every day.
    today = timezone.localdate()
    by_day = viewer.get(
        f"/admin/a2a_toolcall/task/?created_at__year={today.year}"
        f"&created_at__month={today.month}&created_at__day={today.day}"
    )
    assert by_day.status_code == 200 and recorded.id in by_day.content.decode()


def test_task_page_shows_request_answer_and_timeline(viewer: Client, recorded: Task) -> None:
    page = viewer.get(f"/admin/a2a_toolcall/task/{recorded.id}/change/").content.decode()
    assert "what is 6*7 and the time in Tokyo" in page  # the request
    assert "6*7 = 42; it is " in page  # the answer
    assert "4 tool calls, 1 failed" in page
    calls = re.findall(r'class="a2a-row a2a-call a2a-(\w+)" data-tool-call-id="([^"]+)"', page)
    assert [status for status, _ in calls] == ["completed", "completed", "completed", "failed"]
    widths = [float(w) for w in re.findall(r"width: ([\d.]+)%", page)]
    assert len(widths) == 4 and all(w > 0 for w in widths)
    # The slow tool's bar is the longest, and the others overlap it in time.
    assert max(widths) == widths[2]
    assert "thinking" in page and "running calculator; running clock" in page  # narration
    assert "&quot;expression&quot;: &quot;6*7&quot;" in page  # args, pretty JSON
    assert "RuntimeError: this tool always fails" in page  # the error
    assert "<details" in page and 'http-equiv="refresh"' not in page  # finished: no refresh
    # Read-only: no save buttons, and nothing to add, change or delete.
    assert 'name="_save"' not in page


def test_running_tasks_refresh(viewer: Client) -> None:
    Task.objects.create(
        id="running-1",
        context_id="c",
        agent="demo",
        state="TASK_STATE_WORKING",
        status={"state": "TASK_STATE_WORKING"},
    )
    page = viewer.get("/admin/a2a_toolcall/task/running-1/change/").content.decode()
    assert 'http-equiv="refresh" content="2"' in page


def test_a_running_task_links_to_the_live_page(viewer: Client) -> None:
    mine = {"owner": User.objects.get(username="auditor"), "owner_kind": "user"}
    for task_id, state, owner in (
        ("running-2", "TASK_STATE_WORKING", mine),
        ("done-2", "TASK_STATE_COMPLETED", mine),
        ("running-3", "TASK_STATE_WORKING", {}),
    ):
        Task.objects.create(
            id=task_id, context_id="c", agent="demo", state=state, status={"state": state}, **owner
        )
    running = viewer.get("/admin/a2a_toolcall/task/running-2/change/").content.decode()
    assert 'href="/live/?task=running-2"' in running
    finished = viewer.get("/admin/a2a_toolcall/task/done-2/change/").content.decode()
    assert "/live/" not in finished
    # The live page follows a task as the visitor, who sees only its own: no link to another's.
    others = viewer.get("/admin/a2a_toolcall/task/running-3/change/").content.decode()
    assert "/live/" not in others


def listed(client: Client, query: str) -> list[str]:
    """The tool names in the result rows of the tool-call list (not the filter sidebar)."""
    page = client.get(f"/admin/a2a_toolcall/toolcall/{query}").content.decode()
    return re.findall(r'class="field-name">(?:<a [^>]*>)?([^<]+)<', page)


def test_tool_call_list_filters(viewer: Client, recorded: Task) -> None:
    assert sorted(listed(viewer, "")) == ["broken", "calculator", "clock", "slow"]
    assert listed(viewer, "?status=failed") == ["broken"]
    assert listed(viewer, "?duration=100ms-1s") == ["slow"]
    assert listed(viewer, "?name=clock") == ["clock"]
    assert sorted(listed(viewer, "?duration=lt100ms")) == ["broken", "calculator", "clock"]
    one = ToolCall.objects.get(task=recorded, name="broken")
    detail = viewer.get(f"/admin/a2a_toolcall/toolcall/{one.pk}/change/").content.decode()
    assert "RuntimeError" in detail


def test_audit_rows_cannot_be_added_changed_or_deleted(viewer: Client, recorded: Task) -> None:
    assert viewer.get("/admin/a2a_toolcall/task/add/").status_code == 403
    change = viewer.post(f"/admin/a2a_toolcall/task/{recorded.id}/change/", {"agent": "x"})
    assert change.status_code == 403
    assert viewer.get(f"/admin/a2a_toolcall/task/{recorded.id}/delete/").status_code == 403
    superuser = User.objects.create_superuser("root", password="pw")
    admin = Client()
    admin.force_login(superuser)
    assert admin.get("/admin/a2a_toolcall/toolcall/add/").status_code == 403
    assert Task.objects.filter(pk=recorded.id).exists()


def test_permissions_are_required(recorded: Task) -> None:
    anonymous = Client().get("/admin/a2a_toolcall/task/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    plain = User.objects.create_user("someone", password="pw", is_staff=False)
    client = Client()
    client.force_login(plain)
    assert client.get("/admin/a2a_toolcall/task/").status_code == 302
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)  # staff, but without the view permission
    assert client.get(f"/admin/a2a_toolcall/task/{recorded.id}/change/").status_code == 403


def big_task(calls: int) -> Task:
    start = timezone.now() - timedelta(seconds=60)
    task = Task.objects.create(
        id=f"big-{calls}",
        context_id="c",
        agent="demo",
        state="TASK_STATE_COMPLETED",
        status={"state": "TASK_STATE_COMPLETED"},
        created_at=start,
        finished_at=start + timedelta(seconds=calls / 10),
        tool_call_count=calls,
    )
    ToolCall.objects.bulk_create(
        ToolCall(
            task=task,
            tool_call_id=f"c{i}",
            name=f"tool_{i % 7}",
            order=i,
            status="failed" if i % 13 == 0 else "completed",
            args={"i": i},
            result={"i": i},
            error="nope" if i % 13 == 0 else "",
            started_at=start + timedelta(seconds=i / 10),
            finished_at=start + timedelta(seconds=i / 10 + 0.05),
            duration_ms=50.0,
        )
        for i in range(calls)
    )
    TaskEvent.objects.bulk_create(
        TaskEvent(
            task=task,
            seq=i + 1,
            kind="status",
            state="TASK_STATE_WORKING",
            emitted_at=start + timedelta(seconds=i / 10),
            data={
                "statusUpdate": {
                    "status": {
                        "state": "TASK_STATE_WORKING",
                        "message": {"parts": [{"text": f"step {i}"}]},
                    }
                }
            },
        )
        for i in range(calls)
    )
    return task


def test_the_task_page_query_count_does_not_grow_with_the_calls(viewer: Client) -> None:
    counts = {}
    warm = big_task(1)
    viewer.get(f"/admin/a2a_toolcall/task/{warm.id}/change/")  # content types get cached
    for calls in (10, 1000):
        task = big_task(calls)
        with CaptureQueriesContext(connection) as queries:
            page = viewer.get(f"/admin/a2a_toolcall/task/{task.id}/change/")
        assert page.status_code == 200
        assert page.content.decode().count('class="a2a-row a2a-call') == calls
        counts[calls] = len(queries)
    assert counts[1000] == counts[10], counts
    print(f"\ntask page queries: {counts[10]} with 10 calls, {counts[1000]} with 1,000")


@pytest.mark.browser
def test_the_timeline_renders_in_a_real_browser(
    live_server: Any, recorded: Task, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser import launch

    User.objects.create_superuser("browser", password="pw-browser")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "1")  # Playwright runs its own loop
    shot = tmp_path / "timeline.png"
    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(
            f"{live_server.url}/admin/login/?next=/admin/a2a_toolcall/task/{recorded.id}/change/"
        )
        page.fill("#id_username", "browser")
        page.fill("#id_password", "pw-browser")
        page.click("input[type=submit]")
        page.wait_for_selector(".a2a-bar")
        widths = page.eval_on_selector_all(
            ".a2a-bar", "bars => bars.map(b => b.getBoundingClientRect().width)"
        )
        page.locator("#a2a-timeline").screenshot(path=str(shot))
        browser.close()
    assert len(widths) == 4 and all(w > 0 for w in widths)
    assert shot.stat().st_size > 5000
    if os.environ.get("A2A_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        (DOCS_IMAGES / "admin-timeline.png").write_bytes(shot.read_bytes())


# --- cancelled calls, the list's columns, the answer of a running task ------------------------


def list_cells(client: Client, query: str = "") -> dict[str, dict[str, str]]:
    """The task list's rows: full task id (from the short id's title) -> column -> text."""
    page = client.get(f"/admin/a2a_toolcall/task/{query}").content.decode()
    rows: dict[str, dict[str, str]] = {}
    for html in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        task_id = re.search(r'class="field-short_id"><a [^>]*><span title="([^"]+)"', html)
        if task_id:
            cells = re.findall(r'<t[dh] class="field-(\w+)[^"]*">(.*?)</t[dh]>', html, re.S)
            rows[task_id.group(1)] = {
                k: re.sub(r"<[^>]+>", "", v.replace("<br>", " · ")) for k, v in cells
            }
    return rows


def test_calls_cancelled_with_their_task_are_not_failures(viewer: Client) -> None:
    task = run_cancelled_task(
        "what is 6*7 and wait 30 and fail", running={"slow"}, ended={"calculator", "broken"}
    )
    quiet = run_cancelled_task("wait 30", running={"slow"})
    assert task.state == quiet.state == "TASK_STATE_CANCELED"
    slow = ToolCall.objects.get(task=task, name="slow")
    assert (slow.status, slow.error, slow.is_cancelled) == ("failed", "cancelled", True)
    assert not ToolCall.objects.get(task=task, name="broken").is_cancelled
    # The list: failures and cancellations counted apart.
    rows = list_cells(viewer)
    assert rows[task.id]["tool_calls"] == "3 · 1 failed · 1 cancelled"
    assert rows[quiet.id]["tool_calls"] == "1 · 1 cancelled"
    assert set(list_cells(viewer, "?failed_tools=yes")) == {task.id}
    assert set(list_cells(viewer, "?failed_tools=no")) == {quiet.id}
    # The task's page: a neutral "cancelled" row, not a red failure.
    page = viewer.get(f"/admin/a2a_toolcall/task/{task.id}/change/").content.decode()
    assert "3 tool calls, 1 failed, 1 cancelled" in page
    calls = dict(
        re.findall(r'class="a2a-row a2a-call a2a-(\w+)"[^>]*>\s*<div[^>]*><bdi>(\w+)', page)
    )
    assert calls == {"completed": "calculator", "failed": "broken", "cancelled": "slow"}
    assert '<span class="a2a-status">cancelled</span>' in page
    # The tool-call list: "failed" means the tool failed.
    assert listed(viewer, "?status=failed") == ["broken"]
    assert listed(viewer, "?status=cancelled") == ["slow", "slow"]
    assert "cancelled</span>" in viewer.get("/admin/a2a_toolcall/toolcall/").content.decode()


def test_the_cancelled_rule_is_the_contracts_in_the_database_too(viewer: Client) -> None:
    task = big_task(0)
    errors = ["cancelled", "cancelled: time budget of 300 s exceeded", "Cancelled: by hand"]
    errors += ["cancelled by the tool", "RuntimeError: cancelled", ""]
    ToolCall.objects.bulk_create(
        ToolCall(task=task, tool_call_id=f"c{i}", name="t", order=i, status="failed", error=e)
        for i, e in enumerate(errors)
    )
    ToolCall.objects.create(task=task, tool_call_id="ok", name="t", order=9, error="cancelled")
    Task.objects.filter(pk=task.pk).update(tool_call_count=7, failed_tool_count=6)
    in_python = sorted(c.tool_call_id for c in task.tool_calls.all() if c.is_cancelled)
    in_sql = sorted(
        task.tool_calls.filter(ToolCall.cancelled_filter()).values_list("tool_call_id", flat=True)
    )
    assert in_python == in_sql == ["c0", "c1"]  # the case counts, on SQLite too
    assert list_cells(viewer)[task.id]["tool_calls"] == "7 · 4 failed · 2 cancelled"


def test_the_answer_box_never_shows_narration(viewer: Client) -> None:
    def task(task_id: str, state: str, text: str) -> str:
        status = {"state": state, "message": {"messageId": "m", "parts": [{"text": text}]}}
        Task.objects.create(id=task_id, context_id="c", agent="demo", state=state, status=status)
        page = viewer.get(f"/admin/a2a_toolcall/task/{task_id}/change/").content.decode()
        match = re.search(r"<h2>Answer</h2>\s*(.*?)</div>", page, re.S)
        assert match is not None
        return re.sub(r"<[^>]+>", "", match.group(1)).strip()

    assert task("w", "TASK_STATE_WORKING", "running calculator") == (
        "(no answer yet: the task is still running)"
    )
    assert task("q", "TASK_STATE_INPUT_REQUIRED", "What is your name?") == (
        "Waiting for input: What is your name?"
    )
    assert task("f", "TASK_STATE_FAILED", "the agent failed: boom") == "the agent failed: boom"


@pytest.mark.browser
def test_the_task_list_fits_1280_px_and_cancelled_calls_are_grey(
    live_server: Any, recorded: Task
) -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser import launch

    # The widest row: a long request, failed and cancelled calls, an owner with a long name.
    wide = big_task(3)
    ToolCall.objects.filter(task=wide, order=1).update(status="failed", error="cancelled")
    owner = User.objects.create_user("someone.with.a.long.name@example.com")
    Task.objects.filter(pk=wide.pk).update(
        failed_tool_count=2, request_text="word " * 200, owner=owner, owner_kind="user"
    )
    User.objects.create_superuser("browser", password="pw-browser")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "1")  # Playwright runs its own loop
    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{live_server.url}/admin/login/?next=/admin/a2a_toolcall/task/")
        page.fill("#id_username", "browser")
        page.fill("#id_password", "pw-browser")
        page.click("input[type=submit]")
        page.wait_for_selector("#result_list")
        layout = page.evaluate(
            """() => {
              const results = document.querySelector('.results');
              const right = s => document.querySelector(s).getBoundingClientRect().right;
              return {
                viewport: window.innerWidth,
                page: document.documentElement.scrollWidth,
                overflow: results.scrollWidth - results.clientWidth,
                visible: results.getBoundingClientRect().right,
                columns: ['th.column-request_preview', 'th.column-tool_calls',
                          'th.column-owner_column', 'td.field-tool_calls .a2a-failed',
                          'td.field-tool_calls .a2a-cancelled'].map(right),
                ids: [...document.querySelectorAll('th.field-short_id a')].map(
                  a => a.textContent.trim()),
                requests: [...document.querySelectorAll('td.field-request_preview')].map(
                  td => td.textContent),
              };
            }"""
        )
        page.click(f'th.field-short_id a[href*="{recorded.id}"]')
        page.wait_for_selector(".a2a-answer")
        full_id = page.locator(".field-id .readonly").inner_text().strip()
        page.goto(f"{live_server.url}/admin/a2a_toolcall/task/{wide.id}/change/")
        colours = page.eval_on_selector_all(
            ".a2a-call",
            """rows => rows.map(row => [
              row.querySelector('.a2a-status').textContent,
              getComputedStyle(row.querySelector('.a2a-status')).color,
              getComputedStyle(row.querySelector('.a2a-bar')).backgroundColor,
            ])""",
        )
        browser.close()
    assert layout["page"] <= layout["viewport"] and layout["overflow"] <= 0, layout
    assert all(0 < right <= layout["visible"] for right in layout["columns"]), layout
    assert layout["ids"] == [recorded.id[:8], wide.id[:8]] and full_id == recorded.id
    assert layout["requests"][0].startswith("what is 6*7 and the time in Tokyo")
    assert len(layout["requests"][1]) <= 60
    # The cancelled call in grey, neither the failed red nor the completed green.
    assert colours == [
        ["failed", "rgb(198, 40, 40)", "rgb(198, 40, 40)"],
        ["cancelled", "rgb(117, 117, 117)", "rgb(158, 158, 158)"],
        ["completed", "rgb(46, 125, 50)", "rgb(46, 125, 50)"],
    ]
