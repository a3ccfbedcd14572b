"""Agent output is hostile input: every surface showing it shows it as text, links only http(s)
URLs, and the app's pages answer under a Content-Security-Policy.

The ``hostile_render`` agent (tests/agents_render.py) says markup, script, javascript: and data:
URLs, terminal escapes and a bidi override everywhere an agent can. The live page (and the demo
home page, which includes the same widget) and the admin are checked in a real Chromium against
a real daphne server; the terminal client's renderers are driven directly, as rich draws them.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory, override_settings
from django.utils import timezone
from playwright.sync_api import Browser, Page, Route, expect, sync_playwright

from a2a_toolcall.client.events import InputRequest, Narration, RunState
from a2a_toolcall.client.terminal import (
    Session,
    TimelineView,
    render_answer,
    render_question,
)
from a2a_toolcall.csp import (
    ADMIN_POLICY,
    HEADER,
    PAGE_POLICY,
    content_security_policy,
    policy_header,
)
from a2a_toolcall.models import Task, TaskEvent, ToolCall
from a2a_toolcall.protocol.models import Artifact, Part, TaskState
from a2a_toolcall.untrusted import is_web_url, json_for_terminal, text_for_terminal
from tests.agents_render import (
    ANSWER,
    ARGS,
    BIDI,
    DATA,
    DATA_URL,
    ERROR,
    ESCAPES,
    HTTP_URL,
    IMG,
    JAVASCRIPT_URL,
    LINKED,
    MARKUP,
    NARRATION,
    QUESTION,
    RESULT,
    SCRIPT,
    UNLINKED,
)
from tests.browser import launch
from tests.live import LiveServer, live_server

TIMEOUT_MS = 30_000
PASSWORD = "pw-render"
WEB = {"http:", "https:"}

# Whatever rendered the payloads as markup or followed them as links would show here: links
# with their scheme, event-handler attributes, inline scripts, images from anywhere but the
# site's static files, and the flag every payload sets.
AUDIT = """() => ({
  pwned: typeof window.__pwned,
  links: [...document.querySelectorAll('a[href]')].map(
    (a) => ({href: a.getAttribute('href'), protocol: new URL(a.href).protocol,
             text: a.textContent, rel: a.rel})),
  handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes]
    .filter((a) => a.name.startsWith('on')).map((a) => `${e.tagName} ${a.name}`)),
  inlineScripts: document.querySelectorAll(
    'script:not([src]):not([type="application/json"])').length,
  foreign: [...document.querySelectorAll('img, iframe, object, embed, frame')]
    .map((e) => e.getAttribute('src') ?? e.outerHTML)
    .filter((src) => !src.startsWith('/static/')),
})"""


def assert_nothing_ran(audit: dict[str, Any], where: str = "") -> None:
    assert audit["pwned"] == "undefined", where
    assert audit["handlers"] == [], where
    assert audit["inlineScripts"] == 0, where
    assert audit["foreign"] == [], where
    assert [link for link in audit["links"] if link["protocol"] not in WEB] == [], where


# --- the servers and the browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(
        "memory",
        tmp_path_factory.mktemp("render"),
        A2A_SERVE_STATIC="1",
        A2A_TEST_AGENT="hostile_render",
    ) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        launched = launch(pw)
        yield launched
        launched.close()


@dataclass
class Shown:
    """A page that ran the hostile agent's task to its end, and what it showed on the way."""

    page: Page
    headers: dict[str, str]
    problems: list[str] = field(default_factory=list)
    narration: str = ""
    narration_bidi: str = ""
    question: str = ""


def open_page(browser: Browser, *, strip_policy_of: str = "") -> tuple[Page, list[str]]:
    """A fresh page recording its console errors (a CSP violation is one) and uncaught errors;
    with ``strip_policy_of``, the pages under that URL come without their policy."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    if strip_policy_of:

        def without_policy(route: Route) -> None:
            response = route.fetch()
            headers = {k: v for k, v in response.headers.items() if k.lower() != HEADER.lower()}
            route.fulfill(response=response, headers=headers)

        base = strip_policy_of
        context.route(
            lambda url: url.startswith(base) and "/a2a" not in url and "/static/" not in url,
            without_policy,
        )
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text} ({m.location.get('url')})")
            if m.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    return page, problems


def run_on_page(page: Page, url: str, problems: list[str]) -> Shown:
    """Open the live widget at ``url``, send a message, answer the question, wait for the end."""
    response = page.goto(url)
    assert response is not None and response.ok
    shown = Shown(page=page, headers=response.headers, problems=problems)
    box = page.get_by_label("Message to the agent")
    box.fill("go")
    box.press("Enter")
    # The agent's first narration line stays up for PAUSE seconds.
    narration = page.locator("[data-role=narration]")
    expect(narration).to_contain_text(SCRIPT)
    shown.narration = narration.text_content() or ""
    shown.narration_bidi = narration.evaluate("e => getComputedStyle(e).unicodeBidi")
    question = page.locator("[data-role=question]")
    expect(question).to_be_visible()
    shown.question = page.locator("[data-role=question-text]").text_content() or ""
    page.locator("[data-role=reply]").fill("yes")
    page.locator("[data-role=reply]").press("Enter")
    expect(page.locator("[data-a2a-live]")).to_have_attribute("data-state", "completed")
    page.wait_for_load_state("networkidle")  # the GetTask reconciling the durations
    return shown


@pytest.fixture(scope="module", params=["/live/", "/"], ids=["live-page", "demo-home"])
def shown(request: pytest.FixtureRequest, server: LiveServer, browser: Browser) -> Iterator[Shown]:
    page, problems = open_page(browser)
    yield run_on_page(page, server.url + request.param, problems)
    page.context.close()


# --- rule 1: the live page shows agent output as text, and links only http(s) URLs ------------


@pytest.mark.browser
def test_the_live_page_shows_agent_strings_as_text(shown: Shown) -> None:
    page = shown.page
    assert_nothing_ran(page.evaluate(AUDIT))
    widget = page.locator("[data-a2a-live]")
    assert widget.locator("script, img, iframe, object, embed").count() == 0
    # Every payload is there, as the characters the agent sent.
    assert shown.narration == NARRATION
    assert shown.question == QUESTION
    rows = page.eval_on_selector_all(
        ".a2a-call",
        """rows => rows.map(r => ({name: r.dataset.name,
            shown: r.querySelector('.a2a-call-name').textContent,
            preview: r.querySelector('.a2a-call-preview').textContent,
            args: r.querySelector('.a2a-args').textContent,
            outcome: r.querySelector('.a2a-outcome').textContent}))""",
    )
    assert [(r["name"], r["shown"]) for r in rows] == [(IMG, IMG), ("broken", "broken")]
    assert json.loads(rows[0]["args"]) == ARGS and json.loads(rows[0]["outcome"]) == RESULT
    assert rows[1]["outcome"] == f"RuntimeError: {ERROR}"
    said = page.locator("[data-role=dialogue] .a2a-said").all_text_contents()
    assert said == ["You: go", f"Agent asks: {QUESTION}", "You: yes"]
    texts = page.locator(".a2a-answer-text").all_text_contents()
    assert texts == [f"{ANSWER}\n(you said yes)"]
    assert [json.loads(t) for t in page.locator(".a2a-answer-data").all_text_contents()] == [DATA]
    assert shown.problems == []


@pytest.mark.browser
def test_the_live_page_links_only_http_urls(shown: Shown) -> None:
    page = shown.page
    links = page.locator("[data-role=answer-body] a").evaluate_all(
        "links => links.map(a => [a.getAttribute('href'), a.textContent, a.rel])"
    )
    assert links == [[HTTP_URL, "report.pdf", "noopener noreferrer"]]
    files = page.locator(".a2a-answer-file").evaluate_all(
        """ps => ps.map(p => [p.querySelector('.a2a-file-name')?.textContent ?? null,
            p.querySelector('.a2a-unlinked-url')?.textContent ?? null])"""
    )
    # javascript:, data:, vbscript:, relative and malformed URLs: their name and URL, as text.
    assert files == [*([name, url] for name, url in UNLINKED.items()), [None, None]]
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    assert all(urlsplit(href).scheme in ("http", "https") for href in hrefs), hrefs


@pytest.mark.browser
def test_a_bidi_override_stays_inside_its_isolate_on_the_live_page(shown: Shown) -> None:
    page = shown.page
    assert BIDI in shown.narration and shown.narration_bidi == "isolate"
    isolated = page.locator(".a2a-answer-file > *").evaluate_all(
        "es => es.map(e => getComputedStyle(e).unicodeBidi)"
    )
    assert isolated and set(isolated) == {"isolate"}
    assert BIDI in (page.locator(".a2a-answer-text").text_content() or "")


@pytest.mark.browser
def test_the_live_page_sends_a_strict_policy(shown: Shown) -> None:
    policy = shown.headers.get(HEADER.lower())
    assert policy == policy_header(PAGE_POLICY)
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'" and "unsafe" not in policy
    assert directives["object-src"] == "'none'"
    assert directives["base-uri"] == directives["frame-ancestors"] == "'self'"
    assert shown.problems == []  # the page runs under it: no violation reported


@pytest.mark.browser
def test_without_the_policy_the_page_still_runs_nothing(
    server: LiveServer, browser: Browser
) -> None:
    # The policy is the second line: the rendering alone keeps every payload inert.
    page, problems = open_page(browser, strip_policy_of=server.url)
    try:
        shown = run_on_page(page, server.url + "/live/", problems)
        assert HEADER.lower() not in shown.headers
        assert_nothing_ran(page.evaluate(AUDIT))
        assert page.locator("[data-a2a-live] script, [data-a2a-live] img").count() == 0
        assert problems == []
    finally:
        page.context.close()


# Where the JavaScript and the Python readers of agent URLs agree (the Python one also refuses
# control and bidi characters anywhere: it writes a link into a terminal escape sequence).
URL_TABLE = {
    HTTP_URL: True,
    "http://example.com": True,
    "HTTPS://EXAMPLE.COM/x?y#z": True,
    "https://user@example.com:8443/x": True,
    JAVASCRIPT_URL: False,
    " JAVASCRIPT:window.__pwned=1": False,
    "java\tscript:window.__pwned=1": False,
    "java\nscript:window.__pwned=1": False,
    DATA_URL: False,
    "vbscript:msgbox(1)": False,
    "file:///etc/passwd": False,
    "ftp://example.com/x": False,
    "/files/report.pdf": False,
    "report.pdf": False,
    "//example.com/x": False,
    "https//example.com/report.pdf": False,
    "http://": False,
    "http://[::1": False,
    "": False,
}


@pytest.mark.browser
def test_js_and_python_read_agent_urls_alike(server: LiveServer, browser: Browser) -> None:
    page, problems = open_page(browser)
    try:
        page.goto(server.url + "/live/")
        found = page.evaluate(
            """async (urls) => {
                const { httpURL } = await import('/static/a2a_toolcall/a2a.js');
                return urls.map((url) => httpURL(url));
            }""",
            list(URL_TABLE),
        )
        assert {url: href is not None for url, href in zip(URL_TABLE, found, strict=True)} == (
            URL_TABLE
        )
        assert {url: is_web_url(url) for url in URL_TABLE} == URL_TABLE
        assert problems == []
    finally:
        page.context.close()


def test_python_refuses_urls_with_control_or_bidi_characters() -> None:
    for url in ("https://example.com/\x1b]8;;x", f"https://example.com/{BIDI}", "https://a\x9b"):
        assert not is_web_url(url)
    assert not is_web_url(None) and not is_web_url(["https://example.com"])


# --- rules 2 and 3: the admin ----------------------------------------------------------------


def rpc(server: LiveServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(
        server.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"A2A-Version": "1.0"},
        timeout=60,
    ).json()
    return dict(answer["result"])


def message(text: str, **ids: str) -> dict[str, Any]:
    return {
        "messageId": f"m-{time.monotonic_ns()}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **ids,
    }


def run_task(server: LiveServer) -> str:
    """The hostile agent's task, run to its end through the endpoint (SendMessage blocks)."""
    asked = rpc(server, "SendMessage", {"message": message("go")})["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    ids = {"taskId": asked["id"], "contextId": asked["contextId"]}
    done = rpc(server, "SendMessage", {"message": message("yes", **ids)})["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    return str(done["id"])


@dataclass
class AdminVisit:
    """The admin pages of the hostile agent's task, as a superuser saw them."""

    page: Page
    problems: list[str]
    task_id: str
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    audits: dict[str, dict[str, Any]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def admin_visit(server: LiveServer, browser: Browser) -> Iterator[AdminVisit]:
    task_id = run_task(server)
    server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser('root', password={PASSWORD!r})",
    )
    page, problems = open_page(browser)
    visit = AdminVisit(page, problems, task_id)
    page.goto(f"{server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#content-main")
    pages = {
        "task list": "/admin/a2a_toolcall/task/",
        "tool call list": "/admin/a2a_toolcall/toolcall/",
        "task page": f"/admin/a2a_toolcall/task/{task_id}/change/",
    }
    for name, path in pages.items():
        response = page.goto(server.url + path)
        assert response is not None and response.ok, name
        visit.headers[name] = response.headers
        visit.audits[name] = page.evaluate(AUDIT)
        visit.texts[name] = page.locator("#content").text_content() or ""
    yield visit  # left on the task's page
    page.context.close()


@pytest.mark.browser
def test_the_admin_pages_send_the_policy(admin_visit: AdminVisit) -> None:
    expected = policy_header(ADMIN_POLICY)
    assert {name: h.get(HEADER.lower()) for name, h in admin_visit.headers.items()} == {
        "task list": expected,
        "tool call list": expected,
        "task page": expected,
    }
    directives = dict(d.split(" ", 1) for d in expected.split("; "))
    assert directives["script-src"] == "'self'" and directives["object-src"] == "'none'"
    # Inline styles only (the task page's bars are placed by style attributes).
    assert directives["style-src"] == "'self' 'unsafe-inline'"
    # The admin runs under it: no violation reported (the admin names no icon: the browser's
    # own request for /favicon.ico is answered 404, which is no problem of the page).
    assert [p for p in admin_visit.problems if "/favicon.ico)" not in p] == []


@pytest.mark.browser
def test_the_admin_shows_agent_strings_as_text(admin_visit: AdminVisit) -> None:
    for name, audit in admin_visit.audits.items():
        assert_nothing_ran(audit, name)
    page = admin_visit.page
    assert page.locator(".a2a-section script, .a2a-section img").count() == 0
    labels = page.locator(".a2a-call .a2a-label bdi").all_text_contents()
    assert labels == [IMG, "broken"]
    args = [json.loads(t) for t in page.locator(".a2a-args").all_text_contents()]
    assert args == [ARGS, {"markup": MARKUP}]
    outcomes = page.locator(".a2a-outcome").all_text_contents()
    assert json.loads(outcomes[0]) == RESULT and outcomes[1] == f"RuntimeError: {ERROR}"
    narration = page.locator(".a2a-row.a2a-narration").all_text_contents()
    assert any(NARRATION in line for line in narration)
    answers = page.locator(".a2a-answer:not(.a2a-file)").all_text_contents()
    assert f"{ANSWER}\n(you said yes)" in answers
    assert (
        IMG in admin_visit.texts["tool call list"] and ERROR in admin_visit.texts["tool call list"]
    )


@pytest.mark.browser
def test_the_admin_links_only_http_urls(admin_visit: AdminVisit) -> None:
    page = admin_visit.page
    links = page.locator(".a2a-file a").evaluate_all(
        "links => links.map(a => [a.getAttribute('href'), a.textContent, a.rel])"
    )
    assert links == [[HTTP_URL, "report.pdf", "noopener noreferrer"]]
    shown = page.locator(".a2a-file .a2a-unlinked-url").all_text_contents()
    assert shown == list(UNLINKED.values())
    for audit in admin_visit.audits.values():
        assert {link["protocol"] for link in audit["links"]} <= WEB


# In process (no browser): the admin's task page, and the policy's rules.


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the page's text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def hostile_task() -> Task:
    """The hostile agent's task as the recorder keeps it, written directly."""
    start = timezone.now() - timedelta(seconds=10)
    task = Task.objects.create(
        id="hostile",
        context_id="c",
        agent="hostile_render",
        state="TASK_STATE_COMPLETED",
        status={"state": "TASK_STATE_COMPLETED"},
        created_at=start,
        finished_at=start + timedelta(seconds=3),
        tool_call_count=1,
        failed_tool_count=1,
        artifacts=[
            {
                "artifactId": "files",
                "parts": [{"url": url, "filename": n} for n, url in {**UNLINKED, **LINKED}.items()],
            },
            {"artifactId": "answer", "parts": [{"text": ANSWER}, {"data": DATA}]},
        ],
    )
    ToolCall.objects.create(
        task=task,
        tool_call_id="c1",
        name=IMG,
        order=0,
        status="failed",
        args=ARGS,
        error=ERROR,
        started_at=start,
        finished_at=start + timedelta(seconds=1),
        duration_ms=1000.0,
    )
    TaskEvent.objects.create(
        task=task,
        seq=1,
        kind="status",
        state="TASK_STATE_WORKING",
        emitted_at=start,
        data={
            "statusUpdate": {
                "status": {
                    "state": "TASK_STATE_WORKING",
                    "message": {"parts": [{"text": NARRATION}]},
                }
            }
        },
    )
    return task


@pytest.mark.django_db
def test_the_admin_task_page_escapes_and_links_only_http_urls(client: Client) -> None:
    task = hostile_task()
    client.force_login(User.objects.create_superuser("root", password=PASSWORD))
    for url in ("/admin/a2a_toolcall/task/", "/admin/a2a_toolcall/toolcall/"):
        listed = client.get(url)
        assert listed[HEADER] == policy_header(ADMIN_POLICY)
        assert SCRIPT not in listed.content.decode() and IMG not in listed.content.decode()
    response = client.get(f"/admin/a2a_toolcall/task/{task.id}/change/")
    assert response.status_code == 200 and response[HEADER] == policy_header(ADMIN_POLICY)
    html = response.content.decode()
    for payload in (SCRIPT, IMG):
        assert payload not in html  # escaped: &lt;script&gt;...
    page = Tags(html)
    text = "".join(page.text)
    assert SCRIPT in text and IMG in text and NARRATION in text and JAVASCRIPT_URL in text
    hrefs = [attrs["href"] or "" for tag, attrs in page.tags if tag == "a" and "href" in attrs]
    assert HTTP_URL in hrefs
    assert [h for h in hrefs if urlsplit(h).scheme not in ("", "http", "https")] == []
    assert not [url for url in UNLINKED.values() if url in hrefs]
    assert [t for t, attrs in page.tags if any(a.startswith("on") for a in attrs)] == []


# --- rule 2: the policy, in process ----------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/live/", "/"])
def test_the_live_page_and_the_demo_home_send_the_policy(client: Client, url: str) -> None:
    assert client.get(url)[HEADER] == (
        "script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'; "
        "frame-ancestors 'self'"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("setting", ["SECURE_CSP", "CONTENT_SECURITY_POLICY"])
def test_a_sites_own_policy_is_left_alone(client: Client, setting: str) -> None:
    # A site-wide policy (Django 6.0's middleware, django-csp's): its middleware adds it after
    # the view; the page must not have set its own first.
    with override_settings(**{setting: {"default-src": ["'self'"]}}):
        assert HEADER not in client.get("/live/")


def test_a_policy_already_on_the_response_is_kept() -> None:
    @content_security_policy(PAGE_POLICY)
    def view(request: HttpRequest) -> HttpResponse:
        response = HttpResponse("ok")
        response[HEADER] = "default-src 'none'"
        return response

    @content_security_policy(PAGE_POLICY)
    def plain(request: HttpRequest) -> HttpResponse:
        return HttpResponse("ok")

    request = RequestFactory().get("/")
    assert view(request)[HEADER] == "default-src 'none'"
    assert plain(request)[HEADER] == policy_header(PAGE_POLICY)


@override_settings(STATIC_URL="https://cdn.example.com/static/")
def test_static_files_on_another_host_are_allowed() -> None:
    directives = dict(d.split(" ", 1) for d in policy_header(ADMIN_POLICY).split("; "))
    assert directives["script-src"] == "'self' https://cdn.example.com"
    assert directives["style-src"] == "'self' 'unsafe-inline' https://cdn.example.com"
    assert directives["object-src"] == "'none'"


# --- rule 4: the terminal client -------------------------------------------------------------

OSC8 = re.compile(r"\x1b\]8;[^;\x1b]*;([^\x1b]*)\x1b\\")
"""A terminal hyperlink's opening (or closing, with an empty target) escape sequence."""


def draw(*renderables: Any) -> str:
    """What rich writes to a colour terminal for ``renderables``: styles and hyperlinks too."""
    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=400)
    for renderable in renderables:
        console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def assert_inert_on_a_terminal(screen: str, links: tuple[str, ...] = ()) -> None:
    """No escape but rich's own: no clear screen, no title, no hyperlink but ``links``, no C1
    CSI, no bidi override; each shown as a visible escape instead."""
    assert "\x1b[2J" not in screen and "\x1b]0;" not in screen and "\x9b" not in screen
    assert "\u202e" not in screen and "\x07" not in screen
    assert [target for target in OSC8.findall(screen) if target] == list(links)
    assert "\\x1b[2J" in screen and "\\u202e" in screen and "\\x9b" in screen


def hostile_run(state: TaskState) -> RunState:
    run = RunState(state=state, narration=f"{MARKUP} {ESCAPES} {BIDI}")
    run.timeline.feed({"toolCallId": "a", "name": MARKUP, "phase": "started", "args": ARGS}, 1.0)
    run.timeline.feed(
        {"toolCallId": "a", "name": MARKUP, "phase": "completed", "result": RESULT}, 2.0
    )
    run.timeline.feed({"toolCallId": "b", "name": ESCAPES, "phase": "started"}, 1.0)
    run.timeline.feed(
        {"toolCallId": "b", "name": ESCAPES, "phase": "failed", "error": f"{MARKUP} {ESCAPES}"},
        2.0,
    )
    return run


def test_the_terminal_draws_narration_and_rows_as_text() -> None:
    screen = draw(TimelineView(hostile_run(TaskState.WORKING)))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", screen)  # rich's own styles off
    assert MARKUP in plain  # the markup as written: not parsed, not styled, not linked
    assert f"{MARKUP} {text_for_terminal(ESCAPES)} \\u202eevil" in plain
    assert_inert_on_a_terminal(screen)


def test_the_terminal_question_is_text() -> None:
    question = InputRequest(
        task_id="t",
        context_id="c",
        question=f"{MARKUP} {ESCAPES} {BIDI}",
        meta={"choices": [MARKUP, ESCAPES]},
    )
    screen = draw(*render_question(question))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", screen)
    assert f"? {MARKUP} " in plain and f"({MARKUP} / {text_for_terminal(ESCAPES)})" in plain
    assert_inert_on_a_terminal(screen)


def test_the_terminal_links_only_http_urls() -> None:
    run = RunState(state=TaskState.COMPLETED)
    files = {**UNLINKED, **LINKED, ESCAPES: f"https://example.com/{ESCAPES}"}
    run.artifacts["files"] = Artifact(
        artifact_id="files", parts=[Part(url=url, filename=name) for name, url in files.items()]
    )
    run.artifacts["answer"] = Artifact(
        artifact_id="answer",
        parts=[
            Part(text=f"{ANSWER}\n{ESCAPES}"),
            Part(data={"html": SCRIPT, "bidi": BIDI, "c1": "\x9b"}),
        ],
    )
    screen = draw(*render_answer(run))
    # One hyperlink, the http(s) URL: javascript:, data:... and a URL holding escapes are text.
    assert_inert_on_a_terminal(screen, links=(HTTP_URL,))
    plain = OSC8.sub("", re.sub(r"\x1b\[[0-9;]*m", "", screen))
    for name, url in UNLINKED.items():
        shown = text_for_terminal(url, one_line=True)
        assert f"file {text_for_terminal(name, one_line=True)} {shown}" in plain
    assert f"file report.pdf {HTTP_URL}" in plain
    assert MARKUP in plain and SCRIPT in plain
    # The data part: the same JSON value, the bidi and C1 characters as JSON escapes.
    assert '"bidi": "\\u202eevil"' in plain and '"c1": "\\u009b"' in plain


def test_terminal_json_lines_keep_their_value_without_raw_controls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    raw = {"statusUpdate": {"status": {"message": {"parts": [{"text": f"{ESCAPES} {BIDI} é"}]}}}}
    session = Session(argparse.Namespace(json=True), "", {})
    session.print_json(Narration(task_id="t", context_id="c", raw=raw, text=""))
    line = capsys.readouterr().out
    assert json.loads(line) == raw
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", line)
    assert "é" in line  # other characters stay as they are
    assert json_for_terminal(json.dumps(BIDI, ensure_ascii=False)) == '"\\u202eevil"'
