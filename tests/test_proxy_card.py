"""The agent card behind a reverse proxy: scheme, host and path prefix (docs/deployment.md).

The card's interface URLs follow Django's own settings: ``SECURE_PROXY_SSL_HEADER`` for the
scheme, ``USE_X_FORWARDED_HOST`` for the host, ``FORCE_SCRIPT_NAME`` or the server's ASGI
``root_path`` for a prefix the proxy strips. Forwarded headers are trusted only when those
settings say so. The headers a proxy would add are sent here directly, as the proxy would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import AsyncClient, override_settings

from tests.servers import free_port, migrated, server_command, serving

ROOT = Path(__file__).resolve().parent.parent
FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "agents.example.com"}
BEHIND_PROXY = {
    "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    "USE_X_FORWARDED_HOST": True,
}


def interface_urls(card: dict[str, Any]) -> set[str]:
    """Every URL the card gives for the endpoint: the 1.0 interfaces and the 0.3 members."""
    urls = {interface["url"] for interface in card["supportedInterfaces"]}
    urls |= {interface["url"] for interface in card.get("additionalInterfaces", [])}
    if "url" in card:
        urls.add(card["url"])
    return urls


async def served_card(**headers: str) -> dict[str, Any]:
    response = await AsyncClient().get("/.well-known/agent-card.json", headers=headers)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


# --- in process -------------------------------------------------------------------------------


async def test_forwarded_headers_are_not_trusted_without_the_settings() -> None:
    card = await served_card(**FORWARDED)
    assert interface_urls(card) == {"http://testserver/a2a/"}


@override_settings(**BEHIND_PROXY)
async def test_behind_a_proxy_the_card_gives_the_public_https_url() -> None:
    card = await served_card(**FORWARDED)
    assert interface_urls(card) == {"https://agents.example.com/a2a/"}
    # The 1.0 card, asked for explicitly, says the same.
    strict = await served_card(**FORWARDED, **{"A2A-Version": "1.0"})
    assert interface_urls(strict) == {"https://agents.example.com/a2a/"}


@override_settings(**BEHIND_PROXY)
async def test_without_forwarded_headers_the_settings_change_nothing() -> None:
    card = await served_card()
    assert interface_urls(card) == {"http://testserver/a2a/"}


@pytest.mark.parametrize("prefix", ["/agents", "/agents/"])
async def test_force_script_name_puts_the_prefix_in_the_card(prefix: str) -> None:
    with override_settings(FORCE_SCRIPT_NAME=prefix, **BEHIND_PROXY):
        card = await served_card(**FORWARDED)
    assert interface_urls(card) == {"https://agents.example.com/agents/a2a/"}


@override_settings(
    FORCE_SCRIPT_NAME="/agents",
    A2A_TOOLCALL={"AGENTS": {"a": "tests.agents.echo"}, "CARD": {"url": "https://a2a.example/"}},
    **BEHIND_PROXY,
)
async def test_card_url_wins_over_everything_the_request_says() -> None:
    card = await served_card(**FORWARDED)
    assert interface_urls(card) == {"https://a2a.example/"}


# --- under real servers -----------------------------------------------------------------------


def demo_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return migrated(
        {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
            "A2A_DEMO_AGENT": "plain",
            **extra,
        }
    )


@pytest.mark.parametrize("server", ["daphne", "uvicorn"])
def test_a_server_root_path_and_trusted_forwarded_headers_make_the_public_url(
    server: str, tmp_path: Path
) -> None:
    port = free_port()
    command = server_command(server, "project.asgi:application", port, "--root-path", "/agents")
    # The forwarded host is checked against ALLOWED_HOSTS like any other.
    hosts = "agents.example.com,127.0.0.1"
    env = demo_env(tmp_path, DJANGO_BEHIND_PROXY="1", DJANGO_ALLOWED_HOSTS=hosts)
    with serving(command, port=port, cwd=ROOT, env=env, log=tmp_path / "log") as base:
        # What the proxy forwards: the prefix stripped, the public scheme and host in headers.
        card = httpx.get(base + "/.well-known/agent-card.json", headers=FORWARDED).json()
        assert interface_urls(card) == {"https://agents.example.com/agents/a2a/"}
        # The live page posts to the prefixed endpoint too.
        page = httpx.get(base + "/live/", headers=FORWARDED)
        assert 'data-endpoint="/agents/a2a/"' in page.text
        # ... and the endpoint answers behind the stripped prefix.
        reply = httpx.post(
            base + "/a2a/",
            json={"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}},
            headers={"A2A-Version": "1.0", **FORWARDED},
        ).json()
        assert reply["error"]["code"] == -32601  # the endpoint's own "method not found"


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        # daphne trusts no forwarded header unless run with --proxy-headers.
        ("daphne", "http://127.0.0.1:{port}/a2a/"),
        # uvicorn itself applies X-Forwarded-Proto from --forwarded-allow-ips (127.0.0.1 by
        # default) to the ASGI scheme; the host it never takes from a header.
        ("uvicorn", "https://127.0.0.1:{port}/a2a/"),
    ],
)
def test_without_the_settings_django_trusts_no_forwarded_header(
    server: str, expected: str, tmp_path: Path
) -> None:
    port = free_port()
    command = server_command(server, "project.asgi:application", port)
    env = demo_env(tmp_path)
    with serving(command, port=port, cwd=ROOT, env=env, log=tmp_path / "log") as base:
        card = httpx.get(base + "/.well-known/agent-card.json", headers=FORWARDED).json()
        assert interface_urls(card) == {expected.format(port=port)}


def test_force_script_name_under_a_real_server(tmp_path: Path) -> None:
    port = free_port()
    command = server_command("daphne", "project.asgi:application", port)
    env = demo_env(tmp_path, DJANGO_FORCE_SCRIPT_NAME="/agents")
    with serving(command, port=port, cwd=ROOT, env=env, log=tmp_path / "log") as base:
        card = httpx.get(base + "/.well-known/agent-card.json").json()
        assert interface_urls(card) == {f"http://127.0.0.1:{port}/agents/a2a/"}
        page = httpx.get(base + "/live/").text
        assert 'data-endpoint="/agents/a2a/"' in page
        # The demo gives STATIC_URL in full under a prefix, as docs/deployment.md says to.
        assert 'href="/agents/static/a2a_toolcall/live.css"' in page
