"""a2a_toolcall.handler: Django's own middleware without a thread hop where a hook does no I/O.

Every request sequence below goes through Django's ASGI handler and through ours, with
startproject's middleware, under several settings; the two must answer alike (status, headers,
cookies but for their random values, body) and leave the same sessions in the database. And
ours must make fewer thread hops: none for a hook its rule lets run on the loop.
"""

from __future__ import annotations

import asyncio
import collections
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.sessions.middleware import SessionMiddleware
from django.contrib.sessions.models import Session
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
from django.core.signals import request_started
from django.db import connections
from django.test import override_settings

from a2a_toolcall import asgi
from a2a_toolcall import handler as handler_module
from a2a_toolcall.handler import INLINE_HOOKS, ASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)

STARTPROJECT_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


@dataclass
class Step:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = ""


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class Browser:
    """Sends steps to an ASGI application, keeping its cookies as a browser would."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.cookies: dict[str, str] = {}

    async def send(self, step: Step) -> Answer:
        # "{csrftoken}" in a header or the body: that cookie's value (empty without it).
        cookies = collections.defaultdict(str, self.cookies)
        headers = {key: value.format_map(cookies) for key, value in step.headers.items()}
        body = step.body.replace(b"{csrftoken}", cookies["csrftoken"].encode())
        if self.cookies:
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if step.content_type:
            headers["content-type"] = step.content_type
        if body:
            headers["content-length"] = str(len(body))
        path, _, query = step.path.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": step.method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        sent: list[dict[str, Any]] = []
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client stays; Django cancels this wait
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        start = sent[0]
        assert start["type"] == "http.response.start"
        answer = Answer(
            status=start["status"],
            headers=[(k.decode().lower(), v.decode()) for k, v in start["headers"]],
            body=b"".join(m.get("body", b"") for m in sent[1:]),
        )
        for name, value in answer.headers:
            if name == "set-cookie":
                for morsel in SimpleCookie(value).values():
                    if morsel.value and morsel["max-age"] != "0":
                        self.cookies[morsel.key] = morsel.value
                    else:
                        self.cookies.pop(morsel.key, None)
        return answer


_RANDOM_COOKIE = re.compile(r"^(?P<name>[^=]+)=(?P<value>[^;]*)")
_EXPIRES = re.compile(r"expires=[^;]+", re.IGNORECASE)


def _cookie_value_out(match: re.Match[str]) -> str:
    empty = match["value"] in ("", '""')
    return f"{match['name']}={'<empty>' if empty else '<value>'}"


def normalised(answer: Answer) -> tuple[int, list[tuple[str, str]], bytes]:
    """The answer with what is random per run (cookie values, expiry times) taken out."""
    headers = []
    for name, value in answer.headers:
        if name == "set-cookie":
            value = _RANDOM_COOKIE.sub(_cookie_value_out, value)
            value = _EXPIRES.sub("expires=<time>", value)
        headers.append((name, value))
    return answer.status, sorted(headers), answer.body


async def stored_sessions() -> list[dict[str, Any]]:
    def read() -> list[dict[str, Any]]:
        # A CSRF secret kept in the session (CSRF_USE_SESSIONS) is random per run.
        sessions = [
            {k: "<secret>" if k == "_csrftoken" else v for k, v in s.get_decoded().items()}
            for s in Session.objects.all()
        ]
        return sorted(sessions, key=lambda d: sorted(d.items()))

    return await sync_to_async(read)()


async def transcript(app: App, steps: list[Step]) -> tuple[list[Any], list[dict[str, Any]]]:
    await sync_to_async(Session.objects.all().delete)()
    # Both handlers in the pool of threads get_asgi_application() serves them from: a thread
    # per request would leave its connection to the in-memory test database (which Django
    # never closes) to the garbage collector.
    browser = Browser(asgi.SharedThreads(app))
    answers = [normalised(await browser.send(step)) for step in steps]
    return answers, await stored_sessions()


FORM = "application/x-www-form-urlencoded"

SCENARIOS: dict[str, list[Step]] = {
    "plain": [Step("GET", "/plain/"), Step("HEAD", "/plain/"), Step("GET", "/sync/")],
    "append slash": [Step("GET", "/plain"), Step("GET", "/plain?x=1"), Step("GET", "/nowhere")],
    "session written, read, flushed": [
        Step("GET", "/session/write/?v=7"),
        Step("GET", "/session/read/"),
        Step("GET", "/session/write/?v=8"),
        Step("GET", "/session/read/"),
        Step("GET", "/session/flush/"),
        Step("GET", "/session/read/"),
    ],
    "a made-up session cookie": [
        Step("GET", "/session/read/", {"cookie": "sessionid=madeupmadeupmadeupmadeup"}),
    ],
    "messages added and read": [
        Step("GET", "/messages/add/"),
        Step("GET", "/messages/read/"),
        Step("GET", "/messages/read/"),
    ],
    "messages added to a stored session": [
        Step("GET", "/session/write/?v=2"),
        Step("GET", "/messages/add/"),
        Step("GET", "/messages/read/"),
    ],
    "csrf": [
        Step("POST", "/form/", body=b"a=1", content_type=FORM),
        Step("GET", "/token/"),
        Step("GET", "/token/read/"),
        Step("POST", "/form/", body=b"a=1", content_type=FORM),
        Step("POST", "/form/", {"x-csrftoken": "{csrftoken}"}, b"a=1", FORM),
        Step("POST", "/form/", body=b"csrfmiddlewaretoken={csrftoken}", content_type=FORM),
        Step("POST", "/form/", {"x-csrftoken": "wrong" * 8}, b"a=1", FORM),
        Step("POST", "/form/", {"origin": "http://evil.example"}, b"a=1", FORM),
        Step("POST", "/exempt/", body=b"{}", content_type="application/json"),
        Step("PUT", "/exempt/"),
    ],
    "a malformed csrf cookie": [
        Step("GET", "/token/read/", {"cookie": "csrftoken=not-a-token"}),
    ],
    "frames, streams, failures": [
        Step("GET", "/framable/"),
        Step("GET", "/streamed/"),
        Step("GET", "/fails/"),
    ],
    "log in": [
        Step("GET", "/whoami/"),
        Step("GET", "/login/"),
        Step("GET", "/whoami/"),
        Step("GET", "/session/write/?v=1"),
        Step("GET", "/whoami/"),
    ],
}

SETTINGS: dict[str, dict[str, Any]] = {
    "startproject": {},
    "csrf in the session": {"CSRF_USE_SESSIONS": True},
    "session saved on every request": {"SESSION_SAVE_EVERY_REQUEST": True},
    "signed cookie sessions": {
        "SESSION_ENGINE": "django.contrib.sessions.backends.signed_cookies",
    },
    "cached_db sessions": {"SESSION_ENGINE": "django.contrib.sessions.backends.cached_db"},
    "messages in the session": {
        "MESSAGE_STORAGE": "django.contrib.messages.storage.session.SessionStorage",
    },
    "https only": {"SECURE_SSL_REDIRECT": True, "SECURE_HSTS_SECONDS": 60},
    "no slash appended, www prepended": {"APPEND_SLASH": False, "PREPEND_WWW": True},
}


@pytest.fixture
def user() -> None:
    get_user_model().objects.create_user("handler-user", password="a-password-for-tests")


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_answers_as_django_s_own_handler(user: None, setting: str, scenario: str) -> None:
    overrides = {
        "ROOT_URLCONF": "tests.handler_urls",
        "MIDDLEWARE": STARTPROJECT_MIDDLEWARE,
        **SETTINGS[setting],
    }
    with override_settings(**overrides):
        django_transcript = await transcript(DjangoASGIHandler(), SCENARIOS[scenario])
        ours = await transcript(ASGIHandler(), SCENARIOS[scenario])
    assert ours == django_transcript
    statuses = [status for status, _, _ in django_transcript[0]]
    assert any(status < 400 for status in statuses)  # the scenario reached its views


def lane_calls() -> int:
    pool = asgi._the_pool(None)
    return sum(lane.given for lane in pool.lanes)


async def hops(app: App, step: Step) -> int:
    """Thread hops one request makes through SharedThreads' lanes (each a sync call)."""
    wrapped = asgi.SharedThreads(app)
    before = lane_calls()
    await Browser(wrapped).send(step)
    return lane_calls() - before


@override_settings(ROOT_URLCONF="tests.handler_urls", MIDDLEWARE=STARTPROJECT_MIDDLEWARE)
async def test_the_hooks_of_a_request_that_needs_no_io_make_no_thread_hop() -> None:
    step = Step("GET", "/plain/")
    django_hops = await hops(DjangoASGIHandler(), step)
    our_hops = await hops(ASGIHandler(), step)
    # Django: request_started, each hook of the seven (12 with CsrfViewMiddleware's
    # process_view), the response's close. Ours: the request signal and the close only.
    assert django_hops >= 14
    assert our_hops == 2


def detached_calls() -> int:
    return sum(lane.detached for lane in asgi._the_pool(None).lanes)


@override_settings(ROOT_URLCONF="tests.handler_urls", MIDDLEWARE=STARTPROJECT_MIDDLEWARE)
async def test_a_request_in_a_lane_does_not_wait_for_django_s_request_signal() -> None:
    # Of the two lane calls, the request waits for the response's close only: Django's own
    # request_started receivers are given to the lane without a caller waiting.
    before = detached_calls()
    assert await hops(ASGIHandler(), Step("GET", "/plain/")) == 2
    assert detached_calls() - before == 1
    before = detached_calls()
    await hops(DjangoASGIHandler(), Step("GET", "/plain/"))
    assert detached_calls() == before


def _obsolete_connection() -> None:
    # The calling thread's default connection, open and past its CONN_MAX_AGE.
    connection = connections["default"]
    connection.ensure_connection()
    connection.close_at = 0.0


@override_settings(ROOT_URLCONF="tests.handler_urls", MIDDLEWARE=STARTPROJECT_MIDDLEWARE)
@pytest.mark.parametrize("handler", [ASGIHandler, DjangoASGIHandler], ids=["ours", "django"])
async def test_the_request_signal_tidies_the_lane_s_connections_before_the_request_uses_them(
    handler: type[DjangoASGIHandler],
) -> None:
    # close_old_connections closes a connection past its age before the request's first sync
    # call finds it, whether the request waited for the signal (Django's handler) or not.
    for lane in asgi._the_pool(None).lanes:
        await lane.submit(_obsolete_connection)
    answer = await Browser(asgi.SharedThreads(handler())).send(Step("GET", "/connection/"))
    assert answer.body == b"closed"


@override_settings(ROOT_URLCONF="tests.handler_urls", MIDDLEWARE=STARTPROJECT_MIDDLEWARE)
async def test_another_request_signal_receiver_is_sent_to_and_waited_for_as_django_does() -> None:
    from tests.handler_urls import TRACE

    def receiver(**kwargs: Any) -> None:
        time.sleep(0.05)  # the request must wait for it, as Django's handler makes it
        TRACE.append("receiver")

    TRACE.clear()
    request_started.connect(receiver)
    try:
        before = detached_calls()
        answer = await Browser(asgi.SharedThreads(ASGIHandler())).send(Step("GET", "/connection/"))
    finally:
        request_started.disconnect(receiver)
    assert answer.status == 200
    assert TRACE == ["receiver", "view"]
    assert detached_calls() == before


async def test_the_handler_runs_django_s_own_handle_code() -> None:
    # Django's handle() with our request signal in its globals: where that cannot be made
    # (another Django's handle), Django's runs as it is.
    assert handler_module._HANDLE is not None
    assert handler_module._HANDLE.__code__ is DjangoASGIHandler.handle.__code__


@override_settings(ROOT_URLCONF="tests.handler_urls", MIDDLEWARE=STARTPROJECT_MIDDLEWARE)
async def test_a_session_that_must_be_saved_goes_to_a_thread(user: None) -> None:
    # The hop count of a request that modifies its session: one more (process_response of
    # SessionMiddleware), and the session is in the database.
    assert await hops(ASGIHandler(), Step("GET", "/session/write/?v=3")) == 3
    assert await stored_sessions() == [{"value": "3"}]


@override_settings(
    ROOT_URLCONF="tests.handler_urls",
    MIDDLEWARE=STARTPROJECT_MIDDLEWARE,
    A2A_TOOLCALL={"INLINE_MIDDLEWARE": False},
)
async def test_inline_middleware_off_is_django_s_handler() -> None:
    step = Step("GET", "/plain/")
    assert await hops(ASGIHandler(), step) == await hops(DjangoASGIHandler(), step)


class SessionMiddlewareOfOurOwn(SessionMiddleware):
    """A subclass: its hooks may do anything."""


@override_settings(
    ROOT_URLCONF="tests.handler_urls",
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "tests.test_handler.SessionMiddlewareOfOurOwn",
    ],
)
async def test_only_django_s_exact_classes_run_on_the_loop() -> None:
    # SecurityMiddleware's two hooks run in place; the subclass's two go to the thread.
    assert await hops(ASGIHandler(), Step("GET", "/plain/")) == 4


def test_the_table_names_importable_middleware_classes() -> None:
    from django.utils.deprecation import MiddlewareMixin
    from django.utils.module_loading import import_string

    for path in INLINE_HOOKS:
        assert issubclass(import_string(path), MiddlewareMixin)
