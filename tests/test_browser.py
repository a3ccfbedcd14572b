"""The live timeline page in a real browser: headless Chromium against a real daphne server.

The page runs under a strict Content-Security-Policy (added to each page response by the test),
so an inline script or style would show up as a console error, and every test fails on any
console error or uncaught exception. Screenshots go to ``A2A_TEST_ARTIFACTS`` (default
``test-artifacts/``); the images in docs/images are made by ``python -m tests.screenshots``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Request,
    Route,
    expect,
    sync_playwright,
)

from a2a_toolcall.contract import (
    TOOL_CALL_V1_MIME_TYPE,
    TOOL_CALL_V1_URI,
    ToolTimeline,
    parse_tool_call,
)
from a2a_toolcall.protocol.sse import SSEDecoder
from tests.agents import LONG_TOOL_NAME, LONG_URL
from tests.browser import launch
from tests.live import ROOT, LiveServer, live_server
from tests.proxy import TCPProxy

ARTIFACTS = Path(os.environ.get("A2A_TEST_ARTIFACTS") or ROOT / "test-artifacts")
TIMEOUT_MS = 30_000
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
pytestmark = pytest.mark.browser

PARALLEL = "what is 6*7 and the time in Tokyo, wait 2 and fail"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server("memory", tmp_path_factory.mktemp("browser"), A2A_SERVE_STATIC="1") as s:
        yield s


@pytest.fixture(scope="module")
def report_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose agent is tests.agents.report: percent progress, very long values."""
    with live_server(
        "memory", tmp_path_factory.mktemp("report"), A2A_SERVE_STATIC="1", A2A_TEST_AGENT="report"
    ) as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        launched = launch(pw)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page, the JSON-RPC requests it made and the problems it reported."""

    page: Page
    base: str
    calls: list[Request] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def root(self) -> Any:
        return self.page.locator("[data-a2a-live]")

    def methods(self) -> list[str]:
        return [call.post_data_json["method"] for call in self.calls]

    def row(self, name: str) -> Any:
        return self.page.locator(f'.a2a-call[data-name="{name}"]')

    def rows(self) -> list[dict[str, str]]:
        return list(
            self.page.eval_on_selector_all(
                ".a2a-call",
                """rows => rows.map(r => ({id: r.dataset.toolCallId, name: r.dataset.name,
                    state: r.dataset.state,
                    label: r.querySelector('.a2a-call-state').textContent,
                    preview: r.querySelector('.a2a-call-preview').textContent,
                    duration: r.querySelector('.a2a-call-duration').textContent}))""",
            )
        )

    def wait_for_call(self, method: str) -> None:
        """Wait until the page has made a JSON-RPC call of ``method``."""
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while method not in self.methods():
            assert time.monotonic() < deadline, f"the page made no {method} call"
            self.page.wait_for_timeout(50)

    def announced(self) -> list[str]:
        return list(
            self.page.eval_on_selector_all(
                "[data-role=announcer] p", "ps => ps.map(p => p.textContent)"
            )
        )

    def send(self, text: str) -> None:
        box = self.page.get_by_label("Message to the agent")
        box.fill(text)
        box.press("Enter")

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[..., Watched]]:
    """Open pages on a base URL, under the strict CSP; fail on any console error."""
    contexts: list[tuple[BrowserContext, Watched, bool]] = []

    def make(
        base: str,
        *,
        network_errors_expected: bool = False,
        width: int = 1100,
        color_scheme: Literal["light", "dark"] = "light",
    ) -> Watched:
        context = browser.new_context(
            viewport={"width": width, "height": 900}, color_scheme=color_scheme
        )
        context.set_default_timeout(TIMEOUT_MS)

        def with_csp(route: Route) -> None:
            response = route.fetch()
            route.fulfill(
                response=response,
                headers={**response.headers, "content-security-policy": CSP},
            )

        # Only pages go through the route: the streams and the static files do not.
        context.route(
            lambda url: url.startswith(base) and "/a2a" not in url and "/static/" not in url,
            with_csp,
        )
        page = context.new_page()
        watched = Watched(page, base)
        page.on(
            "request",
            lambda r: watched.calls.append(r) if r.method == "POST" and "/a2a" in r.url else None,
        )
        page.on(
            "console",
            lambda m: (
                watched.problems.append(f"console {m.type}: {m.text}")
                if m.type == "error"
                else None
            ),
        )
        page.on("pageerror", lambda e: watched.problems.append(f"page error: {e}"))
        contexts.append((context, watched, network_errors_expected))
        return watched

    yield make
    for context, watched, network_errors_expected in contexts:
        context.close()
        problems = watched.problems
        if network_errors_expected:
            # The cut stream is reported by the browser itself as a failed load.
            problems = [p for p in problems if "net::ERR_" not in p]
        assert problems == []


def as_visitor(page: Page) -> dict[str, str]:
    """Headers making a request the page's own visitor's: its session cookie and CSRF token.

    The live page gives an anonymous visitor a session, and the tasks it starts belong to that
    session: another anonymous caller is told they do not exist.
    """
    cookies = {cookie["name"]: cookie["value"] for cookie in page.context.cookies()}
    return {
        "Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items()),
        "X-CSRFToken": cookies["csrftoken"],
    }


def task_summary(server: LiveServer, task_id: str, page: Page) -> dict[str, Any]:
    """The task as GetTask returns it, straight from the server, asked as ``page``'s visitor."""
    answer = httpx.post(
        server.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}},
        headers={"A2A-Version": "1.0", **as_visitor(page)},
        timeout=10,
    ).json()
    return dict(answer["result"])


def tool_calls(task: dict[str, Any]) -> list[dict[str, Any]]:
    return list(task.get("metadata", {}).get(TOOL_CALL_V1_URI, {}).get("toolCalls", []))


def send_message(server: LiveServer, page: Page, text: str, **configuration: Any) -> dict[str, Any]:
    """A task started as ``page``'s visitor (the page must have been opened once)."""
    params: dict[str, Any] = {
        "message": {
            "messageId": f"m-{time.monotonic_ns()}",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
    }
    if configuration:
        params["configuration"] = configuration
    answer = httpx.post(
        server.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params},
        headers={"A2A-Version": "1.0", **as_visitor(page)},
        timeout=30,
    ).json()
    return dict(answer["result"]["task"])


def seconds(duration: str) -> float:
    number, unit = duration.split()
    return float(number) / (1000 if unit == "ms" else 1)


# --- the page, live -------------------------------------------------------------------------


def test_parallel_tools_stream_live(server: LiveServer, open_page: Callable[..., Watched]) -> None:
    watched = open_page(server.url)
    page = watched.page
    response = page.goto(server.url + "/")
    # The page runs under the strict CSP (a violation would be a console error).
    assert response is not None and response.headers["content-security-policy"] == CSP
    watched.send(PARALLEL)

    # The slow tool's row is there, spinning, while the tool still runs.
    slow = watched.row("slow")
    expect(slow).to_have_attribute("data-state", "pending", timeout=TIMEOUT_MS)
    expect(slow.locator(".a2a-call-state")).to_have_text("running")
    assert (
        slow.locator(".a2a-icon").evaluate("e => getComputedStyle(e).animationName") == "a2a-spin"
    )
    expect(page.get_by_role("button", name="Cancel task")).to_be_visible()
    expect(page.locator("[data-role=narration]")).to_contain_text("running slow")
    running_shot = watched.shot("live-running.png")

    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    rows = watched.rows()
    assert [(r["name"], r["state"], r["label"]) for r in rows] == [
        ("calculator", "completed", "done"),
        ("clock", "completed", "done"),
        ("slow", "completed", "done"),
        ("broken", "failed", "failed"),
    ]
    icons = [
        watched.row(name)
        .locator(".a2a-icon")
        .evaluate("e => getComputedStyle(e, '::before').content")
        for name in ("calculator", "broken")
    ]
    assert icons == ['"✓"', '"✗"']
    assert slow.locator(".a2a-icon").evaluate("e => getComputedStyle(e).animationName") == "none"
    expect(page.locator("[data-role=answer]")).to_contain_text("6*7 = 42")
    expect(page.get_by_role("button", name="Cancel task")).to_be_hidden()
    expect(page.locator("[data-role=narration]")).to_be_empty()

    # The rows are the server's tool calls, one each, timed by the browser (the count it showed
    # while they ran), the server's own measure on hover.
    task_id = watched.root.get_attribute("data-task-id")
    assert task_id
    server_calls = tool_calls(task_summary(server, task_id, page))
    assert [r["id"] for r in rows] == [c["toolCallId"] for c in server_calls]
    expect(slow.locator(".a2a-call-duration")).to_have_text(re.compile(r"^[12]\.\d\d s$"))
    assert seconds(slow.locator(".a2a-call-duration").text_content() or "") == pytest.approx(
        2, abs=0.2
    )
    expect(slow.locator(".a2a-call-duration")).to_have_attribute(
        "title", re.compile(r"^measured by the server: 2\.\d\d s$")
    )

    # Each row previews its outcome on its own line: the result, or the error.
    assert [r["preview"] for r in rows[:1] + rows[2:]] == [
        "42",
        "waited 2 s",
        "RuntimeError: this tool always fails (it is here to show a failed frame)",
    ]
    assert rows[1]["preview"].startswith('{"place":"Tokyo","zone":"Asia/Tokyo","time":')
    # ...and the row spans the page's width: the duration at the timeline's right edge, the
    # preview filling the space between the state and the duration.
    box = page.locator("[data-role=timeline]").bounding_box()
    for name in ("calculator", "broken"):
        line = watched.row(name).locator(".a2a-call-line").bounding_box()
        preview = watched.row(name).locator(".a2a-call-preview").bounding_box()
        state = watched.row(name).locator(".a2a-call-state").bounding_box()
        duration = watched.row(name).locator(".a2a-call-duration").bounding_box()
        assert box and line and preview and state and duration
        assert line["width"] >= box["width"] - 8
        assert duration["x"] + duration["width"] == pytest.approx(box["x"] + box["width"], abs=8)
        assert preview["x"] > state["x"] + state["width"]
        assert preview["x"] + preview["width"] <= duration["x"]
        assert preview["width"] > box["width"] / 3

    # Status changes were announced, in order, for screen readers.
    announced = watched.announced()
    assert watched.page.locator("[data-role=announcer]").get_attribute("aria-live") == "polite"
    for expected in ("slow running", "calculator done", "clock done", "broken failed", "slow done"):
        assert expected in announced
    assert announced.index("slow running") < announced.index("slow done")
    assert announced[-1] == "task completed"

    # The stream asked for the 1.0 dialect and the tool-call-v1 extension.
    first = watched.calls[0]
    assert first.post_data_json["method"] == "SendStreamingMessage"
    assert first.headers["a2a-version"] == "1.0"
    assert first.headers["a2a-extensions"] == TOOL_CALL_V1_URI

    # Keyboard: the details open with Enter, and focus is visible.
    summary = watched.row("calculator").locator("summary")
    summary.focus()
    page.keyboard.press("Enter")
    expect(watched.row("calculator").locator(".a2a-args")).to_contain_text('"expression": "6*7"')
    expect(watched.row("calculator").locator(".a2a-outcome")).to_have_text("42")
    watched.row("broken").locator("summary").click()
    expect(watched.row("broken").locator(".a2a-outcome")).to_contain_text("RuntimeError")
    page.get_by_label("Message to the agent").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return [document.activeElement.textContent, s.outlineStyle, s.outlineWidth]; }"
    )
    assert focused == ["Send", "solid", "3px"]
    page.evaluate("() => document.activeElement.blur()")

    shot = watched.shot("live-timeline.png")
    assert shot.stat().st_size > 10_000 and running_shot.stat().st_size > 10_000


def test_cancel_stops_the_task(server: LiveServer, open_page: Callable[..., Watched]) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(server.url + "/live/")
    watched.send("wait 30")
    slow = watched.row("slow")
    expect(slow).to_have_attribute("data-state", "pending", timeout=TIMEOUT_MS)
    # With reduced motion the spinner stands still; the word still says it runs.
    page.emulate_media(reduced_motion="reduce")
    assert slow.locator(".a2a-icon").evaluate("e => getComputedStyle(e).animationName") == "none"
    expect(slow.locator(".a2a-call-state")).to_have_text("running")
    page.emulate_media(reduced_motion="no-preference")
    page.get_by_role("button", name="Cancel task").click()

    expect(watched.root).to_have_attribute("data-state", "canceled", timeout=TIMEOUT_MS)
    expect(page.locator("[data-role=state]")).to_have_text("canceled")
    # The runtime fails the open call with the error "cancelled": the row reads cancelled, in a
    # neutral colour, not as a failure. No spinner any more.
    expect(slow).to_have_attribute("data-state", "cancelled")
    expect(slow.locator(".a2a-call-state")).to_have_text("cancelled")
    assert slow.locator(".a2a-icon").evaluate("e => getComputedStyle(e).animationName") == "none"
    assert (
        slow.locator(".a2a-icon").evaluate("e => getComputedStyle(e, '::before').content") == '"⊘"'
    )
    colours = slow.locator(".a2a-call-state").evaluate(
        """label => {
            const probe = (name) => {
                const span = document.createElement("span");
                span.style.color = `var(${name})`;
                label.closest(".a2a-live").append(span);
                const colour = getComputedStyle(span).color;
                span.remove();
                return colour;
            };
            return {label: getComputedStyle(label).color, fail: probe("--a2a-fail"),
                    muted: probe("--a2a-muted")};
        }"""
    )
    assert colours["label"] != colours["fail"]
    assert colours["label"] == colours["muted"]
    expect(slow.locator(".a2a-call-preview")).to_have_text("")
    expect(slow.locator(".a2a-outcome")).to_have_text("cancelled")
    expect(page.locator("[data-role=outcome]")).to_have_text(
        "Task canceled: canceled by the client"
    )
    expect(page.get_by_role("button", name="Cancel task")).to_be_hidden()
    announced = watched.announced()
    assert announced[-2:] == ["slow cancelled", "task canceled"]
    assert "slow failed" not in announced
    assert "CancelTask" in watched.methods()
    task_id = watched.root.get_attribute("data-task-id")
    assert (
        task_id and task_summary(server, task_id, page)["status"]["state"] == "TASK_STATE_CANCELED"
    )
    watched.shot("live-canceled.png")


RECORD_DURATIONS = """() => {
    // Every text a row's duration shows, in order, with the row's state at the time.
    window.shownDurations = {};
    new MutationObserver(() => {
        for (const row of document.querySelectorAll(".a2a-call")) {
            const shown = (window.shownDurations[row.dataset.name] ??= []);
            const text = row.querySelector(".a2a-call-duration").textContent;
            const last = shown.at(-1);
            if (!last || last[0] !== row.dataset.state || last[1] !== text) {
                shown.push([row.dataset.state, text]);
            }
        }
    }).observe(document.body, {subtree: true, childList: true, characterData: true,
                               attributes: true});
}"""


def test_durations_run_on_without_a_jump(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(server.url + "/live/")
    page.evaluate(RECORD_DURATIONS)
    watched.send("wait 1.5 and what is 1+1")
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    # After the end the page reads the task once (GetTask): it has the server's measures then.
    slow_duration = watched.row("slow").locator(".a2a-call-duration")
    expect(slow_duration).to_have_attribute("title", re.compile("^measured by the server: "))
    assert watched.methods() == ["SendStreamingMessage", "GetTask"]
    shown = page.evaluate("() => window.shownDurations")

    # The slow call counted up while it ran; its final figure continues that count (the same
    # clock), and nothing changed it afterwards: not the end, not the server's figures.
    running = [seconds(text) for state, text in shown["slow"] if state == "pending" and text]
    final = [seconds(text) for state, text in shown["slow"] if state == "completed"]
    assert len(running) >= 4 and running == sorted(running)
    assert len(final) == 1, shown["slow"]
    assert running[-1] <= final[0] < running[-1] + 0.5
    assert len([text for state, text in shown["calculator"] if state == "completed"]) == 1
    hover = slow_duration.get_attribute("title") or ""
    server_s = seconds(hover.removeprefix("measured by the server: "))
    assert server_s == pytest.approx(final[0], abs=0.2)


def test_the_address_names_the_task_so_a_reload_keeps_it(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(server.url + "/live/?lang=en")
    history_length = page.evaluate("() => history.length")
    watched.send("wait 1 and what is 1+1")
    expect(watched.row("slow")).to_have_attribute("data-state", "pending", timeout=TIMEOUT_MS)
    task_id = watched.root.get_attribute("data-task-id")
    assert task_id
    # Put in the address as soon as the task is known, replacing the entry (Back leaves the
    # page, it does not step through tasks); other parameters are kept.
    assert page.evaluate("() => location.search") == f"?lang=en&task={task_id}"
    assert page.evaluate("() => history.length") == history_length

    # A reload follows the same task: still running, then its end.
    page.reload()
    expect(watched.root).to_have_attribute("data-task-id", task_id)
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    assert sorted((r["name"], r["state"]) for r in watched.rows()) == [
        ("calculator", "completed"),
        ("slow", "completed"),
    ]
    watched.wait_for_call("GetTask")
    assert watched.methods() == ["SendStreamingMessage", "SubscribeToTask", "GetTask"]
    assert page.evaluate("() => location.search") == f"?lang=en&task={task_id}"

    # A new message starts a new task, and the address follows it.
    watched.send("what is 2+2")
    expect(watched.root).not_to_have_attribute("data-task-id", task_id, timeout=TIMEOUT_MS)
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    second = watched.root.get_attribute("data-task-id")
    assert page.evaluate("() => location.search") == f"?lang=en&task={second}"


def test_percent_progress_shows_as_a_bar(
    report_server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(report_server.url)
    page = watched.page
    page.goto(report_server.url + "/live/")
    progress = page.locator("[data-role=progress]")
    expect(progress).to_be_hidden()
    watched.send("report, holding 3 s at 60 %")
    # Progress(percent=60.0) from the agent, in the status-update's metadata.
    expect(progress).to_be_visible(timeout=TIMEOUT_MS)
    bar = page.get_by_role("progressbar", name="Progress")
    expect(bar).to_have_js_property("value", 60, timeout=TIMEOUT_MS)
    expect(bar).to_have_attribute("max", "100")
    expect(progress).to_contain_text("60%")
    expect(page.locator("[data-role=narration]")).to_have_text("writing the report")
    box = bar.bounding_box()
    assert box and box["width"] >= 60 and box["height"] > 4
    watched.shot("live-progress.png")
    # The task's end takes the bar away: the state says it all.
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    expect(progress).to_be_hidden()


NO_OVERFLOW = """() => {
    const page = document.documentElement;
    const wide = [...document.querySelectorAll("body *")].filter((e) => {
        const box = e.getBoundingClientRect();
        return box.width > 0 && (box.right > page.clientWidth + 0.5 || box.left < -0.5);
    }).filter((e) => !e.closest(".a2a-visually-hidden"));
    return {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth,
            wide: wide.map((e) => `${e.tagName.toLowerCase()}.${e.className}`)};
}"""


def test_nothing_overflows_a_phone_screen(
    report_server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(report_server.url, width=390)
    page = watched.page
    page.goto(report_server.url + "/")
    watched.send(f"report 0.5 on {LONG_URL} for the {LONG_TOOL_NAME}")
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    row = watched.row(LONG_TOOL_NAME)
    row.locator("summary").click()
    page.locator(".a2a-page details").first.evaluate("d => { d.open = true; }")  # the curl
    expect(page.locator("[data-role=answer]")).to_contain_text(LONG_URL)

    layout = page.evaluate(NO_OVERFLOW)
    assert layout["scrollWidth"] <= layout["clientWidth"] == 390
    assert layout["wide"] == []
    # The long name and the preview are cut with an ellipsis, on a line of their own each;
    # the full values are in the details (open), which wrap.
    for part in (".a2a-call-name", ".a2a-call-preview"):
        cut = row.locator(part).evaluate(
            "e => [getComputedStyle(e).textOverflow, e.scrollWidth > e.clientWidth]"
        )
        assert cut == ["ellipsis", True]
    expect(row.locator(".a2a-call-name")).to_have_text(LONG_TOOL_NAME)
    expect(row.locator(".a2a-call-preview")).to_have_text(re.compile(r'^\{"url":"https://'))
    assert LONG_URL in (row.locator(".a2a-outcome").text_content() or "")
    name, preview = (row.locator(p).bounding_box() for p in (".a2a-call-name", ".a2a-call-preview"))
    assert name and preview and preview["y"] >= name["y"] + name["height"] - 1
    watched.shot("live-phone.png")


LIGHT_BACKGROUNDS = """() => {
    // Every element whose own background is light: in dark mode there must be none.
    const light = [];
    for (const e of [document.documentElement, ...document.querySelectorAll("body, body *")]) {
        const box = e.getBoundingClientRect();
        if (e !== document.documentElement && (box.width === 0 || box.height === 0)) continue;
        const style = getComputedStyle(e);
        const [r, g, b, a = 1] = style.backgroundColor.match(/[\\d.]+/g).map(Number);
        const lin = (c) => (c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        const luminance = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
        if (a > 0 && luminance > 0.5) light.push(`${e.tagName.toLowerCase()}.${e.className}`);
        if (style.backgroundImage !== "none") light.push(`image on ${e.tagName.toLowerCase()}`);
    }
    return light;
}"""


def test_dark_mode_has_no_light_blocks(
    report_server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(report_server.url, color_scheme="dark")
    page = watched.page
    page.goto(report_server.url + "/")
    canvas = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert canvas == "rgb(13, 17, 23)"
    assert page.evaluate(LIGHT_BACKGROUNDS) == []
    watched.send("report 3")
    # Running: the cancel button, the progress bar, a row.
    expect(page.get_by_role("progressbar", name="Progress")).to_have_js_property(
        "value", 60, timeout=TIMEOUT_MS
    )
    expect(page.get_by_role("button", name="Cancel task")).to_be_visible()
    assert page.evaluate(LIGHT_BACKGROUNDS) == []
    bar = page.locator("[data-role=progress] progress").evaluate(
        "e => [getComputedStyle(e).appearance, getComputedStyle(e).backgroundColor]"
    )
    assert bar == ["none", "rgb(22, 27, 34)"]
    # Finished, every part open: the rows' details, the answer, the curl example.
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    expect(page.locator("[data-role=answer]")).to_be_visible()
    assert page.evaluate(LIGHT_BACKGROUNDS) == []
    # The error line and the question form, shown as they would be.
    page.evaluate(
        """() => { for (const role of ["error", "question", "outcome"]) {
            const node = document.querySelector(`[data-role=${role}]`);
            node.hidden = false;
            if (!node.textContent.trim()) node.append("shown for the test");
        } }"""
    )
    assert page.evaluate(LIGHT_BACKGROUNDS) == []
    send = page.get_by_role("button", name="Send").evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]"
    )
    assert send == ["rgb(13, 17, 23)", "rgb(88, 166, 255)"]  # dark text on the light accent
    watched.shot("live-dark.png")


def test_a_question_is_answered_inline(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(server.url + "/")
    watched.send("what is 6*7 and ask me")
    question = page.locator("[data-role=question-text]")
    expect(question).to_have_text("What is your name?", timeout=TIMEOUT_MS)
    expect(watched.root).to_have_attribute("data-state", "input required")
    expect(watched.row("calculator")).to_have_attribute("data-state", "completed")
    # Focus moved to the answer field: type and press Enter, no mouse needed.
    expect(page.get_by_label("What is your name?")).to_be_focused()
    assert "input required: What is your name?" in watched.announced()
    watched.shot("live-question.png")
    page.keyboard.type("Ada")
    page.keyboard.press("Enter")

    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    expect(page.locator("[data-role=answer]")).to_contain_text("6*7 = 42; nice to meet you, Ada.")
    expect(page.locator("[data-role=question]")).to_be_hidden()
    expect(page.locator("[data-role=dialogue]")).to_contain_text("Agent asks: What is your name?")
    # The answer went to the same task and context, and its stream continued the same timeline.
    assert watched.methods()[:2] == ["SendStreamingMessage", "SendStreamingMessage"]
    answer = watched.calls[1].post_data_json["params"]["message"]
    assert answer["taskId"] == watched.root.get_attribute("data-task-id")
    assert answer["contextId"] == task_summary(server, answer["taskId"], page)["contextId"]
    assert [r["name"] for r in watched.rows()] == ["calculator"]


def test_a_dropped_stream_resumes_where_it_stopped(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    with TCPProxy("127.0.0.1", port) as proxy:
        watched = open_page(proxy.url, network_errors_expected=True)
        page = watched.page
        page.goto(proxy.url + "/")
        watched.send("what is 6*7 and the time in Tokyo, wait 2, wait 7 and fail")
        expect(page.locator(".a2a-call").first).to_be_visible(timeout=TIMEOUT_MS)
        task_id = watched.root.get_attribute("data-task-id")
        assert task_id

        # The page hears nothing more while the task moves on: the 2 s wait ends on the server.
        proxy.hold()
        deadline = time.monotonic() + 20
        while not (
            short := [
                c
                for c in tool_calls(task_summary(server, task_id, page))
                if c["args"] == {"seconds": 2.0} and c["state"] == "completed"
            ]
        ):
            assert time.monotonic() < deadline, "the 2 s wait never finished"
            time.sleep(0.05)
        assert task_summary(server, task_id, page)["status"]["state"] == "TASK_STATE_WORKING"
        seen = watched.root.get_attribute("data-last-event-id")
        assert seen and seen.isdigit()
        # ...and the page has not seen that: it still shows the call running (or not at all).
        short_row = page.locator(f'[data-tool-call-id="{short[0]["toolCallId"]}"]')
        assert short_row.count() == 0 or short_row.get_attribute("data-state") == "pending"

        # The connections are cut from the server's side; the page resubscribes from `seen`.
        with page.expect_request(
            lambda r: (
                "/a2a" in r.url and (r.post_data_json or {}).get("method") == "SubscribeToTask"
            )
        ) as resubscribe:
            assert proxy.sever() >= 1
        assert resubscribe.value.headers.get("last-event-id") == seen
        assert resubscribe.value.post_data_json["params"] == {"id": task_id}

        expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
        rows = watched.rows()
        ids = [r["id"] for r in rows]
        assert len(ids) == len(set(ids)) == 5  # one row per call, none twice
        assert ids == [c["toolCallId"] for c in tool_calls(task_summary(server, task_id, page))]
        assert sorted((r["name"], r["state"]) for r in rows) == [
            ("broken", "failed"),
            ("calculator", "completed"),
            ("clock", "completed"),
            ("slow", "completed"),
            ("slow", "completed"),
        ]
        expect(page.locator("[data-role=answer]")).to_contain_text("slow: waited 7 s")
        expect(page.locator("[data-role=error]")).to_be_hidden()
        announced = watched.announced()
        assert "connection lost, reconnecting" in announced and "reconnected" in announced
        assert int(watched.root.get_attribute("data-last-event-id") or 0) > int(seen)
        assert watched.methods()[:2] == ["SendStreamingMessage", "SubscribeToTask"]
        watched.shot("live-reconnected.png")


def test_a_stream_dropped_until_the_end_resumes_with_get_task(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    with TCPProxy("127.0.0.1", port) as proxy:
        watched = open_page(proxy.url, network_errors_expected=True)
        page = watched.page
        page.goto(proxy.url + "/")
        watched.send("what is 1+1 and wait 1")
        expect(watched.row("slow")).to_be_visible(timeout=TIMEOUT_MS)
        task_id = watched.root.get_attribute("data-task-id")
        assert task_id
        proxy.hold()
        deadline = time.monotonic() + 20
        while task_summary(server, task_id, page)["status"]["state"] != "TASK_STATE_COMPLETED":
            assert time.monotonic() < deadline, "the task never finished"
            time.sleep(0.05)
        proxy.sever()

        # The resubscribe is refused (-32004: the task has ended); GetTask has the end.
        expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
        assert watched.methods() == ["SendStreamingMessage", "SubscribeToTask", "GetTask"]
        assert sorted((r["name"], r["state"]) for r in watched.rows()) == [
            ("calculator", "completed"),
            ("slow", "completed"),
        ]
        expect(page.locator("[data-role=answer]")).to_contain_text("1+1 = 2; slow: waited 1 s.")
        expect(page.locator("[data-role=error]")).to_be_hidden()


def test_a_finished_task_renders_from_get_task(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(f"{server.url}/live/")  # the visitor's session, which the task will belong to
    task = send_message(server, page, "what is 6*7 and wait 0.2 and fail")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    page.goto(f"{server.url}/?task={task['id']}")

    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    # Subscribing to a finished task is refused (-32004); the page reads it with GetTask.
    assert watched.methods() == ["SubscribeToTask", "GetTask"]
    expect(page.locator("[data-role=error]")).to_be_hidden()
    rows = watched.rows()
    summary = tool_calls(task)
    assert [(r["id"], r["name"], r["state"]) for r in rows] == [
        (c["toolCallId"], c["name"], c["state"]) for c in summary
    ]
    for row, call in zip(rows, summary, strict=True):
        # The page shows milliseconds at most: half of one is its rounding.
        assert seconds(row["duration"]) == pytest.approx(
            call["durationMs"] / 1000, rel=0.01, abs=5e-4
        )
    expect(page.locator("[data-role=answer-body]")).to_have_text(
        task["artifacts"][0]["parts"][0]["text"]
    )
    expect(page.locator("[data-role=dialogue]")).to_contain_text(
        "You: what is 6*7 and wait 0.2 and fail"
    )
    expect(page.get_by_role("button", name="Cancel task")).to_be_hidden()
    assert watched.announced() == ["task completed: 3 tool calls, 1 failed"]
    watched.shot("live-finished.png")


def test_a_running_task_is_followed_by_id(
    server: LiveServer, open_page: Callable[..., Watched]
) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(f"{server.url}/live/")  # the visitor's session, which the task will belong to
    task = send_message(server, page, "wait 2 and what is 1+1", returnImmediately=True)
    page.goto(f"{server.url}/live/?task={task['id']}")
    expect(watched.row("slow")).to_have_attribute("data-state", "pending", timeout=TIMEOUT_MS)
    expect(watched.root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    assert sorted((r["name"], r["state"]) for r in watched.rows()) == [
        ("calculator", "completed"),
        ("slow", "completed"),
    ]
    expect(page.locator("[data-role=answer]")).to_contain_text("1+1 = 2")
    subscribe = watched.calls[0]
    assert subscribe.post_data_json["method"] == "SubscribeToTask"
    assert "last-event-id" not in subscribe.headers


def test_a_site_serving_no_static_files_says_so(
    server: LiveServer, browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Without its script and style sheet the page explains itself instead of lying dead."""
    hint = "[data-role=static-missing]"
    with live_server("memory", tmp_path_factory.mktemp("nostatic"), A2A_SERVE_STATIC="0") as bare:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(bare.url + "/live/")
            expect(page.locator(hint)).to_be_visible()
            expect(page.locator(hint)).to_contain_text("collectstatic")
            page.goto(server.url + "/live/")
            expect(page.locator("[data-role=state]")).to_have_text("not started")
            expect(page.locator(hint)).to_have_count(0)
        finally:
            context.close()


def test_errors_are_shown(server: LiveServer, open_page: Callable[..., Watched]) -> None:
    watched = open_page(server.url)
    page = watched.page
    page.goto(f"{server.url}/?task=no-such-task")
    error = page.locator("[data-role=error]")
    expect(error).to_be_visible(timeout=TIMEOUT_MS)
    expect(error).to_contain_text("Error -32001")
    expect(error).to_contain_text("no-such-task")
    assert error.get_attribute("role") == "alert"


# --- the modules, unit-checked in the same browser -------------------------------------------


def module_url(watched: Watched, name: str) -> str:
    return str(
        watched.page.eval_on_selector(
            f'link[rel=modulepreload][href$="/{name}"], script[src$="/{name}"]',
            "e => e.href || e.src",
        )
    )


SCRIPTED_WIDGET = """async ({liveUrl, a2aUrl, scenario}) => {
    const { LiveTimeline } = await import(liveUrl);
    const { ConnectionLost, HTTPError } = await import(a2aUrl);
    // A second widget, from the page's markup, driven by a scripted client.
    const root = document.querySelector("[data-a2a-live]").cloneNode(true);
    for (const node of root.querySelectorAll("[id]")) node.id = `scripted-${node.id}`;
    for (const node of root.querySelectorAll("[for]")) node.htmlFor = `scripted-${node.htmlFor}`;
    document.body.append(root);
    const log = [];
    const task = { id: "t1", contextId: "c1" };
    const snapshot = (state) => ({ task: { ...task, status: { state } } });
    const frame = (n, phase, extra) => ({ artifactUpdate: { taskId: "t1", contextId: "c1",
        artifact: { artifactId: `a${n}`, name: "tool-call", parts: [{
            data: { toolCallId: "call-1", name: "lookup", phase, ...extra },
            metadata: { mimeType: "application/vnd.protolabs.tool-call-v1+json" } }] } } });
    let subscribes = 0;
    const client = {
        async *sendStreamingMessage() {
            log.push("SendStreamingMessage");
            yield { id: "1", result: snapshot("TASK_STATE_SUBMITTED") };
            yield { id: "2", result: frame(2, "started", { args: { q: 1 } }) };
            throw new ConnectionLost("cut");
        },
        async *subscribeToTask(id, { lastEventId }) {
            subscribes += 1;
            log.push(`SubscribeToTask ${id} ${lastEventId}`);
            if (scenario === "gives up") throw new ConnectionLost("still down");
            if (subscribes === 1) throw new HTTPError(503, "HTTP 503 Service Unavailable");
            yield { id: null, result: snapshot("TASK_STATE_WORKING") };
            yield { id: "2", result: frame(2, "started", { args: { q: 1 } }) };  // seen before
            yield { id: "3", result: frame(3, "completed", { result: "found" }) };
            yield { id: "4", result: { statusUpdate: { ...task, taskId: "t1", status: {
                state: "TASK_STATE_COMPLETED",
                message: { role: "ROLE_AGENT", parts: [{ text: "found it" }] } } } } };
        },
        async getTask(id) {
            log.push(`GetTask ${id}`);
            return { ...task, status: { state: "TASK_STATE_COMPLETED" } };
        },
    };
    await new LiveTimeline(root, { client }).send("look it up");
    const out = {
        log,
        rows: [...root.querySelectorAll(".a2a-call")].map(
            (r) => [r.dataset.toolCallId, r.dataset.state]),
        state: root.dataset.state ?? null,
        answer: root.querySelector("[data-role=answer-body]").textContent,
        spinning: [...root.querySelectorAll(".a2a-icon")].map(
            (icon) => getComputedStyle(icon).animationName !== "none"),
        error: root.querySelector("[data-role=error]").hidden ? null
            : root.querySelector("[data-role=error]").textContent,
        announced: [...root.querySelectorAll("[data-role=announcer] p")].map((p) => p.textContent),
    };
    root.remove();
    return out;
}"""


def test_a_resubscribe_refused_by_a_proxy_is_retried(module_page: Watched) -> None:
    result = module_page.page.evaluate(
        SCRIPTED_WIDGET,
        {
            "liveUrl": module_url(module_page, "live.js"),
            "a2aUrl": module_url(module_page, "a2a.js"),
            "scenario": "recovers",
        },
    )
    # Both attempts resume after event 2; the 503 is retried; the replayed start adds no row.
    assert result["log"] == [
        "SendStreamingMessage",
        "SubscribeToTask t1 2",
        "SubscribeToTask t1 2",
        "GetTask t1",
    ]
    assert result["rows"] == [["call-1", "completed"]]
    assert result["state"] == "completed" and result["answer"] == "found it"
    assert result["error"] is None
    assert result["announced"] == [
        "lookup running",
        "connection lost, reconnecting",
        "connection lost, reconnecting",
        "reconnected",
        "lookup done",
        "task completed",
    ]


def test_the_page_gives_up_after_five_failed_resubscribes(module_page: Watched) -> None:
    result = module_page.page.evaluate(
        SCRIPTED_WIDGET,
        {
            "liveUrl": module_url(module_page, "live.js"),
            "a2aUrl": module_url(module_page, "a2a.js"),
            "scenario": "gives up",
        },
    )
    assert result["log"] == ["SendStreamingMessage"] + ["SubscribeToTask t1 2"] * 5
    assert result["error"] == (
        "Connection lost: the stream was lost 5 times in a row; reload the page to follow the task"
    )
    assert result["rows"] == [["call-1", "pending"]] and result["state"] == "submitted"
    assert result["spinning"] == [False]  # no longer listening: no spinner claims progress


SSE_SAMPLES = [
    'id: 1\ndata: {"a":1}\n\n',
    "\ufeffdata: first\r\ndata: second\r\n\r\n: keepalive\r\nid: 7\revent: note\rdata:x\r\r",
    "data: é😀 ünïcode\n\nretry: 1500\ndata\n\nid\ndata: reset\n\n",
    "data:  two spaces\nid: 9\x00\nretry: 12a\nfoo: bar\ndata\n\nid: 3\ndata: cut off",
    "\r\n\r\n:only comments\n\n\ufeffdata: not a BOM at the start\n\n",
]


def python_decode(text: str) -> dict[str, Any]:
    decoder = SSEDecoder()
    events = decoder.feed(text.encode())
    decoder.close()
    return {
        "events": [
            {"data": e.data, "event": e.event, "id": e.id, "retry": e.retry} for e in events
        ],
        "lastEventId": decoder.last_event_id,
        "retry": decoder.retry,
    }


@pytest.fixture
def module_page(server: LiveServer, open_page: Callable[..., Watched]) -> Watched:
    watched = open_page(server.url)
    watched.page.goto(server.url + "/live/")
    return watched


@pytest.mark.parametrize("sample", SSE_SAMPLES)
def test_sse_js_decodes_as_sse_py_whatever_the_chunks(module_page: Watched, sample: str) -> None:
    results = module_page.page.evaluate(
        """async ({url, bytes}) => {
            const { SSEDecoder } = await import(url);
            const data = new Uint8Array(bytes);
            const run = (chunks) => {
                const decoder = new SSEDecoder();
                const events = chunks.flatMap((chunk) => decoder.feed(chunk));
                decoder.close();
                return { events, lastEventId: decoder.lastEventId, retry: decoder.retry };
            };
            const runs = [run([data]), run(Array.from(data, (_, i) => data.subarray(i, i + 1)))];
            for (let i = 1; i < data.length; i++) {
                runs.push(run([data.subarray(0, i), data.subarray(i)]));
            }
            runs.push(run([new TextDecoder("utf-8", { ignoreBOM: true }).decode(data)]));
            return runs;
        }""",
        {"url": module_url(module_page, "sse.js"), "bytes": list(sample.encode())},
    )
    expected = python_decode(sample)
    assert len(results) == len(sample.encode()) + 2
    assert all(result == expected for result in results), (expected, results[0])


FRAME_SEQUENCES = [
    # duplicates are ignored
    [
        {"toolCallId": "a", "name": "calc", "phase": "started", "args": {"x": 1}},
        {"toolCallId": "a", "name": "calc", "phase": "started", "args": {"x": 1}},
        {"toolCallId": "a", "name": "calc", "phase": "completed", "result": 42},
        {"toolCallId": "a", "name": "calc", "phase": "completed", "result": 42},
    ],
    # an outcome before its start, and parallel calls finishing out of order
    [
        {"toolCallId": "b", "name": "slow", "phase": "failed", "error": "late"},
        {"toolCallId": "c", "name": "clock", "phase": "started", "args": {"place": "Tokyo"}},
        {"toolCallId": "d", "name": "calc", "phase": "started"},
        {"toolCallId": "b", "name": "slow", "phase": "started", "args": {"seconds": 2}},
        {"toolCallId": "d", "name": "calc", "phase": "completed", "result": {"v": [1, 2]}},
    ],
    # contradictions: recorded, the first outcome kept
    [
        {"toolCallId": "e", "name": "calc", "phase": "completed", "result": {"a": 1, "b": 2}},
        {"toolCallId": "e", "name": "calc", "phase": "completed", "result": {"b": 2, "a": 1}},
        {"toolCallId": "e", "name": "calc", "phase": "failed", "error": "boom"},
        {"toolCallId": "e", "name": "calc", "phase": "completed", "result": 3},
        {"toolCallId": "e", "name": "other", "phase": "started", "args": [1]},
        {"toolCallId": "e", "name": "calc", "phase": "started", "args": [2]},
    ],
    # stopped with the task (cancelled, with or without a reason) or failing on its own
    [
        {"toolCallId": "f", "name": "slow", "phase": "failed", "error": "cancelled"},
        {"toolCallId": "g", "name": "slow", "phase": "failed", "error": "cancelled: time limit"},
        {"toolCallId": "h", "name": "slow", "phase": "failed", "error": "cancelled by the tool"},
        {"toolCallId": "i", "name": "slow", "phase": "completed", "result": "cancelled"},
    ],
]


def python_timeline(frames: list[dict[str, Any]]) -> dict[str, Any]:
    timeline = ToolTimeline(frames)
    return {
        "calls": [
            {
                "toolCallId": c.tool_call_id,
                "name": c.name,
                "order": c.order,
                "state": c.state.value,
                "args": c.args,
                "result": c.result,
                "error": c.error,
                "hasStarted": c.has_started,
                "isCancelled": c.is_cancelled,
                "frames": c.frames,
            }
            for c in timeline
        ],
        "contradictions": [
            {"toolCallId": c.tool_call_id, "kept": c.kept, "ignored": c.ignored, "detail": c.detail}
            for c in timeline.contradictions
        ],
    }


@pytest.mark.parametrize("frames", FRAME_SEQUENCES)
def test_timeline_js_reduces_as_the_contract(
    module_page: Watched, frames: list[dict[str, Any]]
) -> None:
    result = module_page.page.evaluate(
        """async ({timelineUrl, a2aUrl, frames}) => {
            const { Timeline } = await import(timelineUrl);
            const { validFrame } = await import(a2aUrl);
            const timeline = new Timeline();
            for (const frame of frames) timeline.feed(validFrame(frame));
            return {
                calls: [...timeline].map((c) => ({
                    toolCallId: c.toolCallId, name: c.name, order: c.order, state: c.state,
                    args: c.args, result: c.result, error: c.error, hasStarted: c.hasStarted,
                    isCancelled: c.isCancelled, frames: c.frames,
                })),
                contradictions: timeline.contradictions,
            };
        }""",
        {
            "timelineUrl": module_url(module_page, "timeline.js"),
            "a2aUrl": module_url(module_page, "a2a.js"),
            "frames": frames,
        },
    )
    assert result == python_timeline(frames)


def test_timeline_js_merges_a_summary_without_going_back(module_page: Watched) -> None:
    result = module_page.page.evaluate(
        """async (url) => {
            const { Timeline } = await import(url);
            const timeline = new Timeline();
            const started = timeline.feed({toolCallId: "a", name: "slow", phase: "started",
                                           args: {seconds: 1}}, 1000);
            const merged = timeline.merge({toolCallId: "a", name: "slow", state: "completed",
                                           result: "done", durationMs: 1002.5});
            const stale = timeline.merge({toolCallId: "a", name: "slow", state: "pending"});
            const replayed = timeline.feed({toolCallId: "a", name: "slow", phase: "completed",
                                            result: "done"}, 9000);
            const call = timeline.get("a");
            return {started, merged, stale, replayed, state: call.state,
                    duration: call.durationMs(), size: timeline.size,
                    contradictions: timeline.contradictions.length};
        }""",
        module_url(module_page, "timeline.js"),
    )
    flags = ("isNew", "started", "finished")
    assert [result[k][f] for k in ("started", "merged", "stale", "replayed") for f in flags] == [
        True, True, False,
        False, False, True,
        False, False, False,
        False, False, False,
    ]  # fmt: skip
    assert result["state"] == "completed" and result["duration"] == 1002.5
    assert result["size"] == 1 and result["contradictions"] == 0


def tool_part(frame: Any, **extra: Any) -> dict[str, Any]:
    """A part carrying ``frame`` under the tool-call-v1 MIME discriminator."""
    return {"data": frame, "metadata": {"mimeType": TOOL_CALL_V1_MIME_TYPE}, **extra}


PART_SHAPES: list[Any] = [
    [{"text": "hello"}],
    # A2A 1.0, after a text part
    [
        {"text": "before"},
        tool_part(
            {"toolCallId": "c1", "name": "search", "phase": "started", "args": {"q": "x"}},
            mediaType="application/json",
        ),
    ],
    # A2A 0.3; a null result reads as absent
    [
        tool_part(
            {"toolCallId": "c1", "name": "search", "phase": "completed", "result": None},
            kind="data",
        )
    ],
    # the JS SDK's in-memory form
    [
        {
            "content": {
                "$case": "data",
                "value": {"toolCallId": "c2", "name": "s", "phase": "failed", "error": "e"},
            },
            "metadata": {"mimeType": TOOL_CALL_V1_MIME_TYPE},
        }
    ],
    # the URI-keyed metadata form, on a message and on a part
    {
        "metadata": {TOOL_CALL_V1_URI: {"toolCallId": "c3", "name": "s", "phase": "started"}},
        "parts": [{"text": "x"}],
    },
    [
        {
            "text": "x",
            "metadata": {
                TOOL_CALL_V1_URI: {
                    "toolCallId": "c4",
                    "name": "s",
                    "phase": "completed",
                    "result": [1],
                }
            },
        }
    ],
    # claims to be a frame but is not valid: skipped, the next valid one is found
    [
        tool_part({"name": "s", "phase": "started"}),
        tool_part({"toolCallId": "c5", "name": "s", "phase": "failed", "error": 3}),
        tool_part({"toolCallId": "c6", "name": "s", "phase": "failed", "error": "ok", "extra": 1}),
    ],
    [tool_part({"toolCallId": "c7", "name": "s", "phase": "begun"})],
    "not parts",
    None,
]


def test_parse_tool_call_js_reads_what_the_contract_reads(module_page: Watched) -> None:
    found = module_page.page.evaluate(
        """async ({url, shapes}) => {
            const { parseToolCall } = await import(url);
            return shapes.map((shape) => parseToolCall(shape));
        }""",
        {"url": module_url(module_page, "a2a.js"), "shapes": PART_SHAPES},
    )
    expected = [
        None if (frame := parse_tool_call(shape)) is None else frame.to_wire()
        for shape in PART_SHAPES
    ]
    assert found == expected
    assert sum(f is not None for f in found) == 6
