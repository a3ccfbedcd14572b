"""Regenerate the images in docs/images, against a real server and the machine's Chromium.

    .venv/bin/python -m tests.screenshots [--out DIR]

It serves the demo project with daphne on a fresh SQLite database (tests/live.py), drives the
Chromium tests/browser.py finds (or installs), and writes:

- ``live-page.png`` and ``live-page-dark.png``: the home page after the demo's parallel task
  (``what is 6*7 and the time in Tokyo, wait 2 and fail``), one row opened, in the light and
  the dark scheme;
- ``admin-timeline.png``: that task's timeline in the admin, seen by a superuser made with
  ``manage.py createsuperuser`` on the server's database.

The task runs for real, so times and durations differ from one run to the next.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

import httpx
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from tests.browser import launch
from tests.live import ROOT, LiveServer, live_server

PARALLEL = "what is 6*7 and the time in Tokyo, wait 2 and fail"
VIEWPORT: ViewportSize = {"width": 1100, "height": 900}
TIMEOUT_MS = 30_000
ADMIN_USER = "admin"


def warm_up(server: LiveServer) -> None:
    """One task first, so the pictures show a server past its first-request costs (imports,
    the first writes), as it runs most of the time."""
    message = {"messageId": "warm-up", "role": "ROLE_USER", "parts": [{"text": "what is 1+1"}]}
    answer = httpx.post(
        server.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}},
        headers={"A2A-Version": "1.0"},
        timeout=TIMEOUT_MS / 1000,
    ).json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer


def run_task(page: Page, server: LiveServer) -> str:
    """Send the demo's parallel task from the home page; its id, once it has finished."""
    page.goto(server.url + "/")
    box = page.get_by_label("Message to the agent")
    box.fill(PARALLEL)
    box.press("Enter")
    root = page.locator("[data-a2a-live]")
    expect(root).to_have_attribute("data-state", "completed", timeout=TIMEOUT_MS)
    # The page reads the finished task once more (the server's measures): let it settle.
    page.wait_for_load_state("networkidle")
    task_id = root.get_attribute("data-task-id")
    assert task_id, "the page shows no task id"
    return task_id


def live_page(
    browser: Browser, server: LiveServer, scheme: Literal["light", "dark"]
) -> tuple[bytes, str]:
    """The home page with the parallel task done and its first row opened; and the task id."""
    context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        task_id = run_task(page, server)
        page.locator('.a2a-call[data-name="calculator"] summary').click()
        page.evaluate("() => document.activeElement?.blur()")  # no focus ring in the picture
        return page.screenshot(full_page=True), task_id
    finally:
        context.close()


def create_superuser(server: LiveServer) -> str:
    """A superuser on the live server's database (manage.py createsuperuser); its password."""
    password = secrets.token_urlsafe(16)
    subprocess.run(
        [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", ADMIN_USER],
        cwd=ROOT,
        env={
            **server.env,
            "DJANGO_SUPERUSER_PASSWORD": password,
            "DJANGO_SUPERUSER_EMAIL": "admin@example.com",
        },
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return password


def admin_timeline(browser: Browser, server: LiveServer, task_id: str, password: str) -> bytes:
    """The timeline section of the task's page in the admin."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/admin/a2a_toolcall/task/{task_id}/change/")
        page.get_by_label("Username").fill(ADMIN_USER)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        timeline = page.locator("#a2a-timeline")
        expect(timeline).to_contain_text("4 tool calls, 1 failed")
        return timeline.screenshot()
    finally:
        context.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "images", help="where to write the PNGs"
    )
    out: Path = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="a2a-screenshots-") as tmp,
        live_server("memory", Path(tmp), A2A_SERVE_STATIC="1") as server,
        sync_playwright() as pw,
    ):
        warm_up(server)
        browser = launch(pw)
        try:
            images: dict[str, bytes] = {}
            images["live-page.png"], task_id = live_page(browser, server, "light")
            images["live-page-dark.png"], _ = live_page(browser, server, "dark")
            password = create_superuser(server)
            images["admin-timeline.png"] = admin_timeline(browser, server, task_id, password)
        finally:
            browser.close()
    for name, image in images.items():
        (out / name).write_bytes(image)
        print(out / name)


if __name__ == "__main__":
    main()
