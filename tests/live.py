"""Real servers for end-to-end tests: daphne serving the demo project, in a subprocess.

Two configurations, as deployed: ``memory`` (SQLite and the in-memory layer, agents in the web
process: the embedded default) and ``redis`` (PostgreSQL and the Redis layer, agents in two
``a2a_worker`` processes). ``lossy`` is ``memory`` with a layer that drops a fifth of its group
messages.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent


WORKER_COMMAND = [sys.executable, "manage.py", "a2a_worker", "--layer", "default"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    """A running site: its base URL and processes."""

    url: str
    config: str
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    logs: Path | None = None
    log_files: list[Path] = field(default_factory=list)
    """The web process's log, then each worker's."""
    web_command: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return self.url + "/a2a/"

    def manage(self, *args: str) -> str:
        """Run ``manage.py`` against this server's database; its standard output."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout

    def start_worker(self) -> Path:
        """Start one more ``a2a_worker`` process; returns its log, once it is ready."""
        assert self.logs is not None
        log = self.logs / f"worker-{len(self.processes)}-{uuid.uuid4().hex[:6]}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                WORKER_COMMAND, cwd=ROOT, env=self.env, stdout=out, stderr=out
            )
        self.processes.append(process)
        deadline = time.monotonic() + 60
        while b"a2a_worker ready" not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log.read_text()}")
            time.sleep(0.1)
        return log

    def kill_and_restart_web(self) -> None:
        """SIGKILL the web process and start it again on the same port and database."""
        assert self.logs is not None
        old = self.processes[0]
        old.kill()
        old.wait(10)
        log = self.logs / f"web-restarted-{uuid.uuid4().hex[:6]}.log"
        with log.open("wb") as out:
            self.processes[0] = subprocess.Popen(
                self.web_command, cwd=ROOT, env=self.env, stdout=out, stderr=out
            )
        self.log_files[0] = log
        _wait_until_up(self.url, self.processes[0], log)

    def api_key(self, user: str = "tester") -> str:
        """An API key acting as ``user`` (created if need be), minted by ``a2a_apikey``;
        the same key for the same user on this server."""
        if user not in self.keys:
            self.keys[user] = self.manage(
                "a2a_apikey", "create", user, "tests", "--create-user", "--quiet"
            ).strip()
        return self.keys[user]


def call(server: LiveServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A 1.0 JSON-RPC call with the server's test API key; its result (asserted present)."""
    reply = httpx.post(
        server.endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"A2A-Version": "1.0", "X-API-Key": server.api_key()},
        timeout=60,
    ).json()
    assert "result" in reply, reply
    return reply["result"]  # type: ignore[no-any-return]


def stream(server: LiveServer, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The results of a SendStreamingMessage with ``params``, as they arrive."""
    from a2a_toolcall.protocol.sse import SSEDecoder

    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params}
    decoder = SSEDecoder()
    headers = {"A2A-Version": "1.0", "X-API-Key": server.api_key()}
    with httpx.stream("POST", server.endpoint, json=body, headers=headers, timeout=60) as response:
        for chunk in response.iter_bytes():
            for event in decoder.feed(chunk):
                yield event.json()["result"]


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/.well-known/agent-card.json", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the server did not come up:\n{log.read_text()}")


def _open_files_limit(soft: int) -> Callable[[], None]:
    def limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return limit


@contextlib.contextmanager
def live_server(
    config: str,
    tmp: Path,
    *,
    workers: int = 2,
    http: str = "daphne",
    app: str = "project.asgi:application",
    open_files: int | None = None,
    **extra_env: str,
) -> Iterator[LiveServer]:
    """Migrate a fresh database and serve the project with daphne, or uvicorn with
    ``http="uvicorn"`` (plus ``workers`` worker processes for Redis;
    :meth:`LiveServer.start_worker` starts more). ``open_files``: the web process starts
    with that soft limit of open files (as under systemd's default of 1,024)."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONUNBUFFERED": "1",
        "A2A_TEST_LAYER": config,
        "A2A_TEST_REDIS_PREFIX": f"a2a-live-{uuid.uuid4().hex[:10]}",
        **extra_env,
    }
    database = f"a2a_live_{uuid.uuid4().hex[:10]}"
    if config == "redis":
        env["A2A_TEST_DB"] = "postgres"
        env["A2A_TEST_PG_NAME"] = database
        with psycopg.connect("host=127.0.0.1 user=postgres dbname=test", autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{database}"')
    else:
        env["A2A_TEST_DB"] = "sqlite"
        env["A2A_TEST_SQLITE"] = str(tmp / f"{database}.sqlite3")
    server = LiveServer(url=f"http://127.0.0.1:{port}", config=config, env=env)
    logs: list[Path] = []
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
        )
        if http == "uvicorn":
            web = ["-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port)]
        else:
            # A listen backlog for bursts (Twisted's default is 50), as docs/deployment.md says.
            web = ["-m", "daphne", "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=1024"]
        commands = [[sys.executable, *web, app]]
        if config == "redis":
            commands += [WORKER_COMMAND] * workers
        for i, command in enumerate(commands):
            log = tmp / f"{database}-{i}.log"
            logs.append(log)
            limit = _open_files_limit(open_files) if i == 0 and open_files else None
            with log.open("wb") as out:
                server.processes.append(
                    subprocess.Popen(
                        command, cwd=ROOT, env=env, stdout=out, stderr=out, preexec_fn=limit
                    )
                )
        _wait_until_up(server.url, server.processes[0], logs[0])
        server.web_command = commands[0]
        server.logs = tmp
        server.log_files = logs
        yield server
    finally:
        for process in server.processes:
            if process.poll() is None:
                process.terminate()
        for process in server.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if config == "redis":
            with psycopg.connect("host=127.0.0.1 user=postgres dbname=test", autocommit=True) as db:
                db.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
