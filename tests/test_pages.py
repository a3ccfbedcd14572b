"""The live timeline page's view and templates; its behaviour in a browser: test_browser.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.contrib.staticfiles import finders
from django.shortcuts import resolve_url
from django.test import Client, override_settings
from django.urls import reverse

from a2a_toolcall.pages import TASK_ID_MAX_LENGTH

pytestmark = pytest.mark.django_db


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, **wanted: str) -> list[dict[str, str | None]]:
        return [
            attrs
            for name, attrs in self.tags
            if name == tag and all(attrs.get(k.replace("_", "-")) == v for k, v in wanted.items())
        ]

    def widget(self) -> dict[str, str | None]:
        (root,) = [attrs for _, attrs in self.tags if "data-a2a-live" in attrs]
        return root


def page(client: Client, url: str, **query: str) -> Tags:
    response = client.get(url, query)
    assert response.status_code == 200
    return Tags(response.content.decode())


def test_the_page_is_served_by_the_app(client: Client) -> None:
    assert reverse("a2a_toolcall:live") == "/live/"
    root = page(client, "/live/").widget()
    assert root["data-endpoint"] == reverse("a2a_toolcall:jsonrpc")
    assert root["data-task"] == ""


def test_the_task_parameter_is_passed_on_escaped(client: Client) -> None:
    assert page(client, "/live/", task=" abc-123 ").widget()["data-task"] == "abc-123"
    hostile = '"><script>alert(1)</script>'
    response = client.get("/live/", {"task": hostile})
    assert "<script>alert(1)" not in response.content.decode()
    assert Tags(response.content.decode()).widget()["data-task"] == hostile
    too_long = "x" * (TASK_ID_MAX_LENGTH + 1)
    assert page(client, "/live/", task=too_long).widget()["data-task"] == ""


@pytest.mark.parametrize("url", ["/live/", "/"])
def test_the_page_runs_under_a_strict_csp(client: Client, url: str) -> None:
    tags = page(client, url)
    scripts = tags.find("script")
    assert scripts and all(s.get("src") and s.get("type") == "module" for s in scripts)
    assert not tags.find("style")
    for tag, attrs in tags.tags:
        assert "style" not in attrs, tag
        assert not [a for a in attrs if a.startswith("on")], tag


def test_every_static_file_the_page_loads_exists(client: Client) -> None:
    tags = page(client, "/live/")
    urls = [a["href"] for a in tags.find("link")] + [a["src"] for a in tags.find("script")]
    static = "/" + settings.STATIC_URL.strip("/") + "/"
    names = [url.removeprefix(static) for url in urls if url and url.startswith(static)]
    assert {"a2a_toolcall/live.css", "a2a_toolcall/live.js", "a2a_toolcall/favicon.svg"} <= set(
        names
    )
    assert all(finders.find(name) for name in names)
    # ...and every module those scripts import, which the page preloads.
    imported: set[str] = set()
    pending = [n for n in names if n.endswith(".js")]
    while pending:
        path = finders.find(pending.pop())
        assert isinstance(path, str)
        with open(path) as module:
            for found in re.findall(r'\bfrom "\./([\w.]+)";', module.read()):
                if f"a2a_toolcall/{found}" not in imported:
                    imported.add(f"a2a_toolcall/{found}")
                    pending.append(f"a2a_toolcall/{found}")
    assert imported == {"a2a_toolcall/sse.js", "a2a_toolcall/a2a.js", "a2a_toolcall/timeline.js"}
    assert imported <= set(names)


def test_the_demo_home_page_is_the_live_page(client: Client) -> None:
    response = client.get("/", {"task": "t-1"})
    html = response.content.decode()
    assert "a2a-toolcall demo site" in html
    assert Tags(html).widget()["data-task"] == "t-1"
    assert "<summary>Stream a task with curl</summary>" in html
    assert 'placeholder="what is 6*7 and the time in Tokyo, wait 2 and fail"' in html


# --- who may open the page, and the session and CSRF token the endpoint needs ----------------


def locked() -> Any:
    """Anonymous callers off, as the app's default is."""
    return override_settings(A2A_TOOLCALL={**settings.A2A_TOOLCALL, "ALLOW_ANONYMOUS": False})


@pytest.mark.parametrize("url", ["/live/?task=t-1", "/?task=t-1"])
def test_without_anonymous_callers_the_page_asks_for_a_login(client: Client, url: str) -> None:
    with locked():
        response = client.get(url)
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.path == resolve_url(settings.LOGIN_URL)
    assert parse_qs(location.query) == {"next": [url]}
    assert settings.SESSION_COOKIE_NAME not in response.cookies  # no session for a refusal


def test_a_logged_in_user_gets_the_page(client: Client) -> None:
    client.force_login(User.objects.create_user("visitor", password="pw"))
    with locked():
        root = page(client, "/live/", task="t-1").widget()
    assert root["data-task"] == "t-1"
    assert root["data-csrf-token"]


def test_an_anonymous_visitor_is_given_a_session(client: Client) -> None:
    response = client.get("/live/")
    assert response.status_code == 200
    key = response.cookies[settings.SESSION_COOKIE_NAME].value
    assert Session.objects.filter(session_key=key).exists()
    # The same session on the next visit: the visitor's tasks stay its own.
    again = client.get("/live/")
    assert settings.SESSION_COOKIE_NAME not in again.cookies
    assert client.session.session_key == key


def get_missing_task(client: Client, **headers: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "no-such-task"}}
    return client.post(
        reverse("a2a_toolcall:jsonrpc"),
        data=json.dumps(body),
        content_type="application/json",
        headers={"A2A-Version": "1.0", **headers},
    )


@pytest.mark.parametrize("who", ["user", "anonymous"])
def test_the_page_carries_the_csrf_token_the_endpoint_asks_for(who: str) -> None:
    client = Client(enforce_csrf_checks=True)
    if who == "user":
        client.force_login(User.objects.create_user("visitor", password="pw"))
    token = page(client, "/live/").widget()["data-csrf-token"]
    assert token and settings.CSRF_COOKIE_NAME in client.cookies
    # The session cookie identifies the caller: without the token its POSTs are refused...
    refused = get_missing_task(client)
    assert refused.status_code == 401
    assert "CSRF" in refused.json()["error"]["message"]
    # ...and with it (as live.js sends it) they are answered: here, "no such task".
    answered = get_missing_task(client, **{"X-CSRFToken": token})
    assert answered.status_code == 200
    assert answered.json()["error"]["code"] == -32001
