"""``DB_THREAD_NICE``: the thread that does the app's batched database work (asgiref's shared
thread) runs at a lower OS priority, the rest of the process as it was.

Each case runs in a process of its own (an unprivileged process cannot take a thread's nice
value back down, and the test process keeps its own as it is): it builds the application as
an ASGI module does and prints every thread's nice value from ``/proc``. The live case serves
real tasks from a uvicorn process with the setting on and reads its threads the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_toolcall.contract import TOOL_CALL_V1_URI
from tests.live import call, live_server, stream

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's"
)

ROOT = Path(__file__).resolve().parent.parent

BUILD = """
import json, logging, os, sys, threading
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
from asgiref.sync import SyncToAsync
from a2a_toolcall.asgi import get_asgi_application
from a2a_toolcall.priority import lower_database_thread_priority
get_asgi_application()
again = lower_database_thread_priority(int(os.environ.get("AGAIN", "0")) or None)
again = again.result(timeout=20) if again is not None else "nothing"
# The thread's work is done in order: once this is, so is the lowering.
shared = SyncToAsync.single_thread_executor.submit(threading.get_native_id).result(timeout=20)
nice = {tid: os.getpriority(os.PRIO_PROCESS, int(tid)) for tid in os.listdir("/proc/self/task")}
print(json.dumps({"main": threading.get_native_id(), "shared": shared, "nice": nice,
                  "again": again}))
"""


def python(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by a Python process of its own, with the test settings and ``env``."""
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def build(**env: str) -> tuple[dict[str, Any], str]:
    done = python(BUILD, **env)
    return json.loads(done.stdout), done.stderr


def thread_nices(pid: int) -> dict[int, int]:
    """Every thread of process ``pid`` and its nice value (field 19 of its stat)."""
    nices = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        nices[int(tid)] = int(fields[16])  # field 19 of stat; fields[0] is field 3
    return nices


def test_the_database_thread_alone_is_lowered() -> None:
    built, log = build(A2A_TEST_DB_THREAD_NICE="7")
    nice = {int(tid): value for tid, value in built["nice"].items()}
    assert nice.pop(built["shared"]) == 7
    assert nice[built["main"]] == 0
    assert set(nice.values()) == {0}, nice
    assert f"database thread {built['shared']}: nice 0 -> 7 (DB_THREAD_NICE)" in log


def test_it_is_lowered_once_and_never_past_19() -> None:
    built, _ = build(A2A_TEST_DB_THREAD_NICE="15", AGAIN="15")
    assert built["again"] is None  # already lowered: not again by as much
    nice = {int(tid): value for tid, value in built["nice"].items()}
    assert nice[built["shared"]] == 15
    built, _ = build(A2A_TEST_DB_THREAD_NICE="40")
    nice = {int(tid): value for tid, value in built["nice"].items()}
    assert nice[built["shared"]] == 19


def test_by_default_every_thread_keeps_the_process_priority() -> None:
    built, log = build()
    assert built["again"] == "nothing"  # no setting: nothing submitted
    assert set(built["nice"].values()) == {0}
    assert "DB_THREAD_NICE" not in log


def test_called_from_the_database_thread_itself_it_lowers_it_in_place() -> None:
    # As when sync code run through sync_to_async imports the ASGI module: waiting on the
    # thread from the thread would hang.
    script = (
        "import os, threading\n"
        "from asgiref.sync import SyncToAsync\n"
        "from a2a_toolcall.priority import lower_database_thread_priority\n"
        "executor = SyncToAsync.single_thread_executor\n"
        "inner = executor.submit(lower_database_thread_priority, 6).result(timeout=20)\n"
        "done = inner.result(timeout=20)\n"
        "tid = executor.submit(threading.get_native_id).result(timeout=20)\n"
        "print(done[0] == tid, done[1:], os.getpriority(os.PRIO_PROCESS, tid))\n"
    )
    assert python(script).stdout.split() == ["True", "(0,", "6)", "6"]


def test_elsewhere_than_linux_nothing_changes_and_it_is_said() -> None:
    script = (
        "import logging, sys; logging.basicConfig(level=logging.INFO)\n"
        "sys.platform = 'darwin'\n"
        "from a2a_toolcall.priority import lower_database_thread_priority\n"
        "print(lower_database_thread_priority(5))\n"
    )
    done = python(script)
    assert done.stdout.strip() == "None"
    assert "DB_THREAD_NICE is set but only works on Linux" in done.stderr


def test_a_server_with_the_setting_serves_and_stores_tasks(tmp_path: Path) -> None:
    with live_server("memory", tmp_path, http="uvicorn", A2A_TEST_DB_THREAD_NICE="10") as server:
        pid = server.processes[0].pid
        niced = [tid for tid, value in thread_nices(pid).items() if value == 10]
        assert len(niced) == 1, thread_nices(pid)
        params = {
            "message": {
                "messageId": "m-priority",
                "role": "ROLE_USER",
                "parts": [{"text": "what is 6*7"}],
            }
        }
        events = list(stream(server, params))
        task_id = events[0]["task"]["id"]
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        stored = call(server, "GetTask", {"id": task_id})
        assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
        (call_,) = stored["metadata"][TOOL_CALL_V1_URI]["toolCalls"]
        assert (call_["name"], call_["state"], call_["result"]) == ("calculator", "completed", 42)
        # Still one thread lowered, the same one; every other thread at the process's.
        after = thread_nices(pid)
        assert [tid for tid, value in after.items() if value == 10] == niced
        assert {value for tid, value in after.items() if tid not in niced} == {0}
        assert httpx.get(server.url + "/.well-known/agent-card.json").status_code == 200
