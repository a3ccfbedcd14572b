"""The demo project and the app's Django wiring."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.test import Client

from tests.servers import free_port, migrated, server_command, serving

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "a2a_toolcall" / "static"
TYPES = {"css": "text/css", "js": "text/javascript"}


@pytest.mark.django_db
def test_system_checks_pass() -> None:
    call_command("check", fail_level="WARNING")


@pytest.mark.django_db
def test_demo_home_page_renders(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert "a2a-toolcall demo site" in response.content.decode()


def test_app_is_registered() -> None:
    from django.apps import apps

    config = apps.get_app_config("a2a_toolcall")
    assert config.verbose_name == "A2A tool calls"


@pytest.mark.parametrize("server", ["daphne", "uvicorn"])
def test_the_demo_serves_its_static_files_with_debug_off(server: str, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DJANGO_DEBUG": "0",
        "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
    }
    migrated(env)
    command = server_command(server, "project.asgi:application", port)
    with serving(command, port=port, cwd=ROOT, env=env, log=tmp_path / "log") as base:
        page = httpx.get(base + "/")
        assert page.status_code == 200
        assets = re.findall(r'(?:href|src)="/static/([^"]+\.(css|js))"', page.text)
        assert {kind for _, kind in assets} == {"css", "js"}
        for name, kind in assets:
            response = httpx.get(f"{base}/static/{name}")
            assert response.status_code == 200, name
            assert response.headers["content-type"].startswith(TYPES[kind])
            assert response.content == (STATIC / name).read_bytes()


def test_a2a_serve_static_0_leaves_static_files_to_the_web_server(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DJANGO_DEBUG": "0",
        "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
        "A2A_SERVE_STATIC": "0",
    }
    command = server_command("uvicorn", "project.asgi:application", port)
    with serving(command, port=port, cwd=ROOT, env=env, log=tmp_path / "log") as base:
        assert httpx.get(base + "/static/a2a_toolcall/live.css").status_code == 404


def listen_backlog(port: int) -> int:
    """The backlog of the socket listening on ``port`` (``ss``: Send-Q of a listener)."""
    import subprocess

    out = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out and out[0] == "LISTEN", out
    return int(out[2])


@pytest.mark.parametrize(("options", "backlog"), [((), 1024), (("--backlog", "300"), 300)])
def test_the_demo_runserver_listens_with_a_backlog_for_bursts(
    tmp_path: Path, options: tuple[str, ...], backlog: int
) -> None:
    import sys

    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
    }
    migrated(env)
    command = [
        sys.executable,
        "manage.py",
        "runserver",
        "--noreload",
        *options,
        f"127.0.0.1:{port}",
    ]
    with serving(command, port=port, cwd=ROOT, env=env, log=tmp_path / "log") as base:
        assert httpx.get(base + "/.well-known/agent-card.json").status_code == 200
        # Twisted's default, and daphne's own runserver's, is 50.
        assert listen_backlog(port) == backlog
