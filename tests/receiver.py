"""A real webhook receiver for the push-notification tests: an HTTP server in a thread.

It answers each POST as its script says (a status, a redirect, or no answer at all) and keeps
every request it received, in order, with its headers and body.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    """One request the receiver got."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: bytes
    answered: int | None
    """The status it was answered with (None: it was never answered)."""

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """``script(n)`` (n counts POSTs from 0) says how to answer: an int status, ``"hang"``
    (hold the connection without answering), or ``("redirect", url)``."""

    def __init__(self, script: Callable[[int], Any] = lambda n: 200) -> None:
        self.script = script
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    n = len(receiver.received)
                    action = receiver.script(n)
                    status = action if isinstance(action, int) else None
                    if isinstance(action, tuple):
                        status = 302
                    receiver.received.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            status,
                        )
                    )
                if action == "hang":
                    receiver._release.wait(60)
                    return
                self.send_response(status or 500)
                if isinstance(action, tuple):
                    self.send_header("Location", action[1])
                answer = b"" if 200 <= (status or 500) < 300 else b"not now " * 200
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def delivered(self) -> list[Received]:
        """The requests answered 2xx, in order."""
        with self._lock:
            return [r for r in self.received if r.answered is not None and r.answered < 300]

    def wait_for(self, condition: Callable[[Receiver], bool], timeout: float = 30) -> None:
        """Wait until ``condition(self)`` holds; fail the test after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not condition(self):
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver did not get what was expected: {self.received}")
            time.sleep(0.05)


@contextlib.contextmanager
def receiving(script: Callable[[int], Any] = lambda n: 200) -> Iterator[Receiver]:
    with Receiver(script) as receiver:
        yield receiver
