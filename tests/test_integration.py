"""The install story as the README tells it, on a fresh ``django-admin startproject``.

The project is built from the README's own text: the fenced blocks of "Using it in your
project" that follow a ``<!-- project-... -->`` marker (as .ci/run takes the test command after
``<!-- test-command -->``). It must pass ``check --fail-level WARNING``, migrate, and stream a
task with its tool frames under ``runserver``, daphne and uvicorn, with the admin still routed.

The extras are checked here too: without ``daphne`` and ``channels_redis`` the package imports
and serves (under uvicorn), and ``a2a_chat`` without the client extra fails with a one-line hint.
A missing module is emulated by a ``sitecustomize`` that puts ``None`` in ``sys.modules``, which
makes ``import`` raise ``ModuleNotFoundError`` exactly as for a package that is not installed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import httpx
import pytest
from packaging.requirements import Requirement

from a2a_toolcall.contract import ToolCallCompleted, ToolCallStarted, parse_tool_call
from a2a_toolcall.protocol.sse import SSEDecoder
from tests.servers import BIN, free_port, server_command, serving

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTION = "## Using it in your project"
MESSAGE = "count these five words please"

# A module named in A2A_TEST_BLOCK cannot be imported in the processes started with this on
# their path, as if it were not installed.
SITECUSTOMIZE = """\
import os
import sys

for name in os.environ.get("A2A_TEST_BLOCK", "").split(","):
    if name:
        sys.modules[name] = None
"""


@dataclass(frozen=True)
class Block:
    """A fenced block of the README section and the marker before it."""

    marker: str
    argument: str
    text: str


def readme_blocks() -> list[Block]:
    """The marked fenced blocks of the README's "Using it in your project", in order."""
    text = README.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else len(text)]
    found = re.finditer(
        r"^<!-- (project-[a-z]+)(?:: ([^>]*?))? -->\n```[a-z]*\n(.*?)^```",
        section,
        flags=re.DOTALL | re.MULTILINE,
    )
    return [Block(m[1], m[2] or "", m[3]) for m in found]


def command_lines(block: Block) -> list[list[str]]:
    """The shell lines of a block, comments dropped, split into words."""
    return [shlex.split(line, comments=True) for line in block.text.splitlines() if line.strip()]


@dataclass
class Site:
    """The project the README builds, and how the README says to serve it."""

    path: Path
    env: dict[str, str]
    servers: dict[str, list[str]]
    """Each server line of the README (runserver, daphne, uvicorn) as written."""
    api_key: str
    """The key the README's ``a2a_apikey create`` line printed."""

    def manage(self, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.path,
            env={**self.env, **extra_env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def command(self, server: str, port: int) -> list[str]:
        """The README's line for ``server``, told to listen on 127.0.0.1:``port``."""
        words = self.servers[server]
        if server == "runserver":
            assert words[:2] == ["python", "manage.py"]
            return [sys.executable, *words[1:], "--noreload", f"127.0.0.1:{port}"]
        # As written, with the port put in its place (and the loopback interface): the
        # README's options, the listen backlog for bursts among them, are kept.
        command = [str(BIN / server), *words[1:]]
        if server == "daphne":
            (endpoint,) = [w for w in command if w.startswith("tcp:")]
            assert ":backlog=" in endpoint, endpoint
            command[command.index(endpoint)] = endpoint.replace(
                "port=8000", f"port={port}:interface=127.0.0.1"
            )
        else:
            assert "--backlog" in command, command
            command[command.index("--port") + 1] = str(port)
            command[1:1] = ["--host", "127.0.0.1"]
        return command


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    blocks = readme_blocks()
    markers = {block.marker for block in blocks}
    assert markers == {"project-install", "project-file", "project-commands"}, markers
    path = tmp_path_factory.mktemp("readme-site")
    helpers = tmp_path_factory.mktemp("helpers")
    (helpers / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(helpers)
    env["PYTHONUNBUFFERED"] = "1"
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(path)],
        check=True,
        env=env,
    )
    servers: dict[str, list[str]] = {}
    api_key = ""
    # createsuperuser asks at a terminal; the tests answer through Django's environment
    # variables (--noinput).
    env["DJANGO_SUPERUSER_PASSWORD"] = SUPERUSER_PASSWORD
    env["DJANGO_SUPERUSER_EMAIL"] = "admin@example.com"
    for block in blocks:
        if block.marker == "project-file":
            name, _, mode = (part.strip() for part in block.argument.partition(","))
            target = path / name
            if mode == "append":
                with target.open("a") as out:
                    out.write("\n" + block.text)
            else:
                assert mode == "", block.argument
                target.write_text(block.text)
        elif block.marker == "project-commands":
            for words in command_lines(block):
                if words[:3] == ["python", "manage.py", "runserver"]:
                    servers["runserver"] = words
                elif words[0] in ("daphne", "uvicorn"):
                    servers[words[0]] = words
                else:
                    assert words[:2] == ["python", "manage.py"], words
                    if words[2] == "createsuperuser":
                        words = [*words, "--noinput"]
                    done = subprocess.run(
                        [sys.executable, *words[1:]],
                        cwd=path,
                        env=env,
                        check=True,
                        timeout=120,
                        capture_output=True,
                        text=True,
                    )
                    if words[2:4] == ["a2a_apikey", "create"]:
                        (api_key,) = re.findall(r"^a2a_\S+$", done.stdout, re.MULTILINE)
    assert set(servers) == {"runserver", "daphne", "uvicorn"}, servers
    assert api_key, "the README mints no API key"
    return Site(path, env, servers, api_key)


# --- the install line -------------------------------------------------------------------------


def test_the_install_line_names_extras_that_bring_what_the_project_uses() -> None:
    (install,) = [b for b in readme_blocks() if b.marker == "project-install"]
    (words,) = command_lines(install)
    assert words[:2] == ["pip", "install"]
    requirement = Requirement(words[2])
    assert requirement.name == "a2a-toolcall"
    assert requirement.extras == {"daphne"}
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in ("daphne", "redis"):
        for needed in extras[extra]:
            name = Requirement(needed).name
            try:
                version(name)
            except PackageNotFoundError:  # pragma: no cover - a broken venv
                pytest.fail(f"the {extra} extra needs {name}, which is not installed")
    assert "a2a-toolcall[daphne,redis,langgraph,client]" in extras["demo"]


# --- the project ------------------------------------------------------------------------------


def test_the_project_passes_every_check_with_no_warning(site: Site) -> None:
    result = site.manage("check", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "System check identified no issues (0 silenced)."


SUPERUSER_PASSWORD = "readme-admin-password"


def stream_task(base: str, text: str, api_key: str) -> list[dict[str, Any]]:
    """Send ``text`` with SendStreamingMessage (A2A 1.0) and return the decoded results."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}},
    }
    decoder = SSEDecoder()
    results: list[dict[str, Any]] = []
    with httpx.stream(
        "POST",
        base + "/a2a/",
        json=body,
        headers={"A2A-Version": "1.0", "X-API-Key": api_key},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        # Keepalives keep a stuck stream open past any read timeout: bound the whole task.
        deadline = time.monotonic() + 60
        for chunk in response.iter_bytes():
            results += [event.json()["result"] for event in decoder.feed(chunk)]
            assert time.monotonic() < deadline, f"the task did not end: {results}"
    return results


def assert_streams_a_task_with_its_tool_frames(base: str, api_key: str) -> None:
    # Nothing is open that the README did not open: no key, no task.
    refused = httpx.post(
        base + "/a2a/",
        json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        headers={"A2A-Version": "1.0"},
    )
    assert refused.status_code == 401 and refused.json()["error"]["code"] == -32041
    results = stream_task(base, MESSAGE, api_key)
    frames = [
        parse_tool_call(r["artifactUpdate"]["artifact"]["parts"])
        for r in results
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["name"] == "tool-call"
    ]
    assert [type(frame) for frame in frames] == [ToolCallStarted, ToolCallCompleted]
    started, completed = frames
    assert isinstance(started, ToolCallStarted) and isinstance(completed, ToolCallCompleted)
    assert started.name == "count_words" and started.args == {"text": MESSAGE}
    assert completed.tool_call_id == started.tool_call_id and completed.result == 5
    answers = [
        r["artifactUpdate"]["artifact"]
        for r in results
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["name"] == "answer"
    ]
    assert [a["parts"][0]["text"] for a in answers] == ["That is 5 words."]
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("server", ["runserver", "daphne", "uvicorn"])
def test_the_project_streams_a_task_and_keeps_its_admin(
    site: Site, server: str, tmp_path: Path
) -> None:
    port = free_port()
    with serving(
        site.command(server, port), port=port, cwd=site.path, env=site.env, log=tmp_path / "log"
    ) as base:
        card = httpx.get(base + "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
        assert card.json()["supportedInterfaces"][0]["url"] == base + "/a2a/"
        assert_streams_a_task_with_its_tool_frames(base, site.api_key)

        admin = httpx.get(base + "/admin/")
        assert admin.status_code == 302
        assert admin.headers["location"] == "/admin/login/?next=/admin/"
        login = httpx.get(base + "/admin/login/")
        assert login.status_code == 200 and "Django administration" in login.text

        # The live page asks for a login (the admin's, as LOGIN_URL says), then opens.
        assert httpx.get(base + "/live/").headers["location"] == "/admin/login/?next=/live/"
        with httpx.Client(base_url=base) as browser:
            browser.get("/admin/login/")
            logged_in = browser.post(
                "/admin/login/?next=/live/",
                data={
                    "username": "admin",
                    "password": SUPERUSER_PASSWORD,
                    "csrfmiddlewaretoken": browser.cookies["csrftoken"],
                    "next": "/live/",
                },
            )
            assert logged_in.status_code == 302 and logged_in.headers["location"] == "/live/"
            live = browser.get("/live/")
        assert live.status_code == 200
        assets = re.findall(r'(?:href|src)="(/static/[^"]+\.(?:css|js))"', live.text)
        assert assets
        served = {asset: httpx.get(base + asset).status_code for asset in assets}
        # As the README says: runserver serves static files (DEBUG is on); the ASGI servers
        # serve none, a production site's web server or WhiteNoise does.
        expected = 200 if server == "runserver" else 404
        assert served == dict.fromkeys(assets, expected)


# --- the extras -------------------------------------------------------------------------------


def test_without_daphne_and_channels_redis_the_package_imports_and_serves(
    site: Site, tmp_path: Path
) -> None:
    # A site on uvicorn that installed a2a-toolcall with no extra: no "daphne" app either.
    (site.path / "mysite" / "nodaphne.py").write_text(
        "from mysite.settings import *  # noqa: F403\n\n"
        'INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "daphne"]  # noqa: F405\n'
    )
    env = {
        **site.env,
        "A2A_TEST_BLOCK": "daphne,channels_redis",
        "DJANGO_SETTINGS_MODULE": "mysite.nodaphne",
    }
    walk = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, pkgutil, django, a2a_toolcall\n"
            "django.setup()\n"
            "for module in pkgutil.walk_packages(a2a_toolcall.__path__, 'a2a_toolcall.'):\n"
            "    if module.name != 'a2a_toolcall.__main__':  # runs the terminal client\n"
            "        importlib.import_module(module.name)\n"
            "from django.core.management import call_command\n"
            "call_command('check')\n",
        ],
        cwd=site.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert walk.returncode == 0, walk.stderr
    port = free_port()
    command = server_command("uvicorn", "mysite.asgi:application", port)
    with serving(command, port=port, cwd=site.path, env=env, log=tmp_path / "log") as base:
        assert_streams_a_task_with_its_tool_frames(base, site.api_key)


def test_a_redis_layer_without_the_redis_extra_is_a_check_error(site: Site) -> None:
    (site.path / "mysite" / "redislayer.py").write_text(
        "from mysite.settings import *  # noqa: F403\n\n"
        'CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}}\n'
    )
    result = site.manage(
        "check", A2A_TEST_BLOCK="channels_redis", DJANGO_SETTINGS_MODULE="mysite.redislayer"
    )
    assert result.returncode == 1
    assert "(a2a_toolcall.E012) CHANNEL_LAYERS['default']['BACKEND'] = " in result.stderr
    assert "HINT: Install the Redis layer: pip install 'a2a-toolcall[redis]'." in result.stderr


@pytest.mark.parametrize(
    ("blocked", "options", "missing"),
    [
        ("httpx,rich", [], "httpx"),
        ("httpx", ["--json"], "httpx"),
        ("rich", [], "rich"),
    ],
)
def test_a2a_chat_without_the_client_extra_says_what_to_install(
    site: Site, blocked: str, options: list[str], missing: str
) -> None:
    unreachable_port = free_port()
    result = site.manage(
        "a2a_chat", "hello", "--port", str(unreachable_port), *options, A2A_TEST_BLOCK=blocked
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"CommandError: a2a_chat needs {missing}, part of the client extra: "
        "pip install 'a2a-toolcall[client]'\n"
    )
    assert result.stdout == ""


def test_a2a_chat_json_needs_no_rich(site: Site) -> None:
    unreachable_port = free_port()
    result = site.manage(
        "a2a_chat", "hello", "--port", str(unreachable_port), "--json", A2A_TEST_BLOCK="rich"
    )
    # It goes on to the server, which is not there: the client's own error, not the extra's.
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: cannot reach http://127.0.0.1:{unreachable_port}/")
