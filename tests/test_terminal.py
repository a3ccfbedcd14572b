"""The terminal client, run as a real process: under a pseudo-terminal (pexpect) for the live
rendering, the prompt and Ctrl-C, and piped for ``--json``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pexpect
import pytest

from a2a_toolcall.client.events import RunState
from a2a_toolcall.client.terminal import TimelineView
from a2a_toolcall.contract import ToolTimeline, parse_tool_call
from a2a_toolcall.protocol.models import TaskState
from tests.live import ROOT, LiveServer, live_server

SPINNER = "[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]"  # rich's "dots" frames
ANSI = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def row(icon: str, name: str) -> str:
    """A timeline row as the terminal receives it: icon, space, tool name (styles between)."""
    return f"{icon}{ANSI} {ANSI}{name}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server("memory", tmp_path_factory.mktemp("terminal")) as running:
        yield running


def spawn(*args: str, columns: int = 120) -> pexpect.spawn[str]:
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    env.pop("COLUMNS", None)
    return pexpect.spawn(
        sys.executable,
        ["-m", "a2a_toolcall", *args],
        cwd=str(ROOT),
        env=env,
        encoding="utf-8",
        dimensions=(40, columns),
        timeout=60,
    )


def finish(child: pexpect.spawn[str]) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, child.signalstatus
    return int(child.exitstatus)


def get_task(server: LiveServer, task_id: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    answer = httpx.post(server.endpoint, json=body, headers={"A2A-Version": "1.0"}, timeout=10)
    return dict(answer.json()["result"])


def test_live_rows_spin_then_resolve(server: LiveServer) -> None:
    child = spawn(server.url, "what is 6*7 and the time in Tokyo, wait 2 and fail")
    transcript = io.StringIO()
    child.logfile_read = transcript
    # One rendering (no cursor-up in between) shows the calculator resolved while the slow
    # tool still spins: parallel rows, each resolving on its own.
    same_render = r"(?:(?!\x1b\[1A).)*?"
    child.expect(row("✓", "calculator") + same_render + row(SPINNER, "slow"))
    child.expect(row("✓", "slow"), timeout=30)
    child.expect("task completed")
    child.expect("6\\*7 = 42")
    assert finish(child) == 0
    everything = transcript.getvalue()
    # Each finished row previews its result or its error on the same line.
    assert re.search(row("✓", "slow") + r"[^\r\n]*waited 2 s", everything)
    assert re.search(
        row("✗", "broken") + r"[^\r\n]*RuntimeError: this tool always fails", everything
    )
    assert "thinking" in everything  # the narration line comes first
    assert everything.index("thinking") < everything.index("slow")


def test_a_question_is_answered_at_the_prompt(server: LiveServer) -> None:
    child = spawn(server.url, "what is 1+1 and ask me")
    child.expect("What is your name\\?")
    child.expect("> ")
    child.sendline("Ada")
    child.expect("nice to meet you, Ada")
    assert finish(child) == 0


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo's default agent (LangGraph), which asks for approval through ``interrupt``."""
    with live_server(
        "memory", tmp_path_factory.mktemp("assistant"), A2A_TEST_AGENT="assistant"
    ) as running:
        yield running


def test_the_choices_of_a_question_are_shown(assistant: LiveServer) -> None:
    child = spawn(assistant.url, "charge 5 to my card")
    child.expect("approve charge_card")
    child.expect("\\(approve / reject\\)")
    child.expect("> ")
    child.sendline("approve")
    child.expect(row("✓", "charge_card"))
    child.expect("task completed")
    assert finish(child) == 0


def test_the_choices_go_to_stderr_in_json_mode(assistant: LiveServer) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "a2a_toolcall", assistant.url, "--json", "charge 5 to my card"],
        cwd=ROOT,
        input="reject\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "approve charge_card" in result.stderr and "(approve / reject)" in result.stderr
    assert result.returncode == 0, result.stderr


def test_ctrl_c_cancels_the_task_on_the_server(server: LiveServer) -> None:
    child = spawn(server.url, "what is 6*7 and wait 30")
    transcript = io.StringIO()
    child.logfile_read = transcript
    child.expect(row("✓", "calculator") + r"[^\r\n]*42")  # a one-line preview of the result
    child.expect(row(SPINNER, "slow"))
    child.sendintr()
    child.expect(r"interrupted: task (\S+) is canceled")
    task_id = child.match.group(1)
    assert finish(child) == 130
    assert get_task(server, task_id)["status"]["state"] == "TASK_STATE_CANCELED"
    # The last rendering: the slow row ended as cancelled (in grey, not a red cross), the
    # finished row kept its result, and the header says the task was canceled.
    screen = transcript.getvalue()
    last = screen[screen.rindex("task canceled") :]
    assert re.search(row(r"\x1b\[90m⊘", "slow") + r"[^\r\n]*cancelled", screen)
    assert screen.rindex("⊘") > max(m.start() for m in re.finditer(row(SPINNER, "slow"), screen))
    assert re.search(row("✓", "calculator"), last) and not re.search(SPINNER, last)
    assert "\x1b[91m" not in last and "\x1b[31m" not in last  # nothing red


def test_ctrl_c_with_json_prints_the_task_with_its_calls_cancelled(server: LiveServer) -> None:
    child = spawn(server.url, "--json", "wait 30")
    child.expect(r'"phase":"started"')
    child.sendintr()
    child.expect(r'\{"task":.*\}\r\n')
    task = json.loads(child.match.group(0))["task"]
    assert finish(child) == 130
    assert task["status"]["state"] == "TASK_STATE_CANCELED"
    (call,) = task["metadata"]["https://proto-labs.ai/a2a/ext/tool-call-v1"]["toolCalls"]
    assert (call["name"], call["state"], call["error"]) == ("slow", "failed", "cancelled")


def test_a_reported_percentage_shows_as_a_progress_bar(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # tests.agents.echo narrates Progress("echoing", percent=50.0), then replies.
    with live_server("memory", tmp_path_factory.mktemp("echo"), A2A_TEST_AGENT="echo") as echo:
        child = spawn(echo.url, "hello")
        transcript = io.StringIO()
        child.logfile_read = transcript
        child.expect("task completed")
        assert finish(child) == 0
    # One line of one rendering: the bar half done (rich draws the done part, then "╺" and
    # the rest in another colour), the percentage, the narration.
    bar = re.search(
        rf"(━+){ANSI}╺{ANSI}(━+){ANSI} +{ANSI} ?50%{ANSI} +{ANSI}echoing", transcript.getvalue()
    )
    assert bar is not None, transcript.getvalue()
    assert (len(bar.group(1)), len(bar.group(2))) == (10, 9)


def test_input_required_without_input_exits_3(server: LiveServer) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "a2a_toolcall", server.url, "--no-input", "ask me"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert "waiting for input" in result.stderr


def _events_of(server: LiveServer, task_id: str) -> list[dict[str, Any]]:
    # closing(): a sqlite3 connection's own context manager commits but does not close.
    with contextlib.closing(sqlite3.connect(server.env["A2A_TEST_SQLITE"])) as db:
        rows = db.execute(
            "SELECT data FROM a2a_toolcall_taskevent WHERE task_id = ? ORDER BY seq", (task_id,)
        ).fetchall()
    return [json.loads(data) for (data,) in rows]


def test_json_lines_are_exactly_the_servers_events(server: LiveServer) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "a2a_toolcall", server.url, "--json", "what is 6*7 and fail"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    task_id = lines[0]["task"]["id"]
    # Every line is one event, in order, exactly as recorded in the task's event log.
    assert lines == _events_of(server, task_id)
    kinds = [next(iter(line)) for line in lines]
    assert kinds[0] == "task" and kinds.count("artifactUpdate") == 5  # 4 frames + the answer
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_json_lines_in_the_0_3_dialect(server: LiveServer) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "a2a_toolcall", server.url, "--json", "--protocol", "0.3", "6*7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["kind"] for line in lines][:2] == ["task", "status-update"]
    assert lines[-1]["final"] is True and lines[-1]["status"]["state"] == "completed"


def test_a_failed_task_exits_1(tmp_path_factory: pytest.TempPathFactory) -> None:
    with live_server(
        "memory", tmp_path_factory.mktemp("limit"), A2A_TEST_TIME_LIMIT="1"
    ) as limited:
        result = subprocess.run(
            [sys.executable, "-m", "a2a_toolcall", limited.url, "--json", "wait 10"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    # The time budget stopped the tool: its failed frame says "cancelled: <reason>", which
    # clients show as cancelled, not as the tool's failure.
    timeline = ToolTimeline(
        frame
        for line in lines
        if (
            frame := parse_tool_call(
                line.get("artifactUpdate", {}).get("artifact", {}).get("parts", [])
            )
        )
    )
    (slow,) = timeline
    assert slow.is_cancelled and slow.error is not None and slow.error.startswith("cancelled: ")


def test_usage_and_connection_errors_exit_2(server: LiveServer) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "a2a_toolcall", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    nothing = run(server.url)
    assert nothing.returncode == 2 and "give a message" in nothing.stderr
    unreachable = run("http://127.0.0.1:9", "hello")
    assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr
    missing = run(server.url, "--json", "--task", "no-such-task")
    assert missing.returncode == 2 and "error -32001" in missing.stderr


def test_manage_py_command_defaults_to_the_local_site(server: LiveServer) -> None:
    port = server.url.rsplit(":", 1)[1]
    result = subprocess.run(
        # No --url: this site (its card URL reversed from the urlconf) on 127.0.0.1:--port.
        [sys.executable, "manage.py", "a2a_chat", "--port", port, "--json", "what is 2+2"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["statusUpdate"]["status"]["state"] == (
        "TASK_STATE_COMPLETED"
    )


def test_a_closed_pipe_ends_the_client_quietly(server: LiveServer) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "a2a_toolcall", server.url, "--json", "wait 1 and what is 6*7"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:  # closes both pipes whatever happens
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()  # like `| head -1`
        process.stdout.close()
        assert json.loads(first)["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
        assert process.wait(60) == 141
        assert process.stderr.read() == b""


def _render(state: RunState) -> str:
    from rich.console import Console

    console = Console(width=100, color_system=None, file=io.StringIO())
    console.print(TimelineView(state))
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def test_rows_left_open_by_an_ended_task_are_not_drawn_running() -> None:
    # A server that does not close open calls when it cancels a task (no failed frame, no
    # summary): the row must not spin for ever once the task is over.
    state = RunState()
    state.timeline.feed({"toolCallId": "a", "name": "search", "phase": "started"}, at=1.0)
    state.timeline.feed({"toolCallId": "b", "name": "fetch", "phase": "started"}, at=1.0)
    state.timeline.feed(
        {"toolCallId": "b", "name": "fetch", "phase": "failed", "error": "cancelled: shutdown"},
        at=2.0,
    )
    state.state = TaskState.WORKING
    assert re.search(rf"{SPINNER} +search", _render(state))
    assert re.search(r"⊘ fetch +1\.0 s cancelled: shutdown", _render(state))
    state.state = TaskState.CANCELED
    screen = _render(state)
    assert re.search(r"⊘ search +cancelled", screen) and not re.search(SPINNER, screen)
    assert "task canceled" in screen


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A site that lets no anonymous caller in (the app's default)."""
    with live_server(
        "memory", tmp_path_factory.mktemp("locked"), A2A_TEST_ANONYMOUS="0"
    ) as running:
        yield running


def test_an_api_key_from_the_option_or_the_environment(locked: LiveServer) -> None:
    def chat(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "a2a_toolcall", locked.url, "--json", *args, "what is 6*7"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, **env},
        )

    refused = chat()
    assert refused.returncode != 0
    assert "Authentication required" in refused.stderr and "-32041" in refused.stderr
    key = locked.api_key()
    for done in (chat("--api-key", key), chat(A2A_API_KEY=key)):
        assert done.returncode == 0, done.stderr
        last = json.loads(done.stdout.splitlines()[-1])
        assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    wrong = chat("--api-key", "a2a_00000000_wrong")
    assert wrong.returncode != 0 and "Invalid API key" in wrong.stderr
