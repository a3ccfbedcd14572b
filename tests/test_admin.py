"""The audit admin: read-only, permission-bound, fast, and showing the real timeline."""

from __future__ import annotations

import asyncio
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import Permission, User
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from a2a_toolcall.models import Task, TaskEvent, ToolCall
from a2a_toolcall.runtime import runner
from tests.test_audit import ask, stream, until_finished

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


@pytest.fixture
def viewer() -> Client:
    user = User.objects.create_user("auditor", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_task", "view_toolcall"])
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
    today = timezone.now()
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
    for task_id, state in (("running-2", "TASK_STATE_WORKING"), ("done-2", "TASK_STATE_COMPLETED")):
        Task.objects.create(
            id=task_id, context_id="c", agent="demo", state=state, status={"state": state}
        )
    running = viewer.get("/admin/a2a_toolcall/task/running-2/change/").content.decode()
    assert 'href="/live/?task=running-2"' in running
    finished = viewer.get("/admin/a2a_toolcall/task/done-2/change/").content.decode()
    assert "/live/" not in finished


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
