"""The live timeline page's view and templates; its behaviour in a browser: test_browser.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client
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
