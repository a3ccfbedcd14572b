"""A TCP proxy for end-to-end tests: it can hold back the server's bytes and cut every connection.

Put between a browser (or any client) and a live server, it forwards bytes both ways unchanged.
``hold()`` stops passing on what the server sends (the client sees a silent connection, the
server keeps going); ``sever()`` closes both ends of every open connection, as a server (or a
proxy in front of it) dropping its connections would, and lets bytes flow again. Held bytes
are dropped with their connection. Plain threads and blocking sockets, so it runs beside
Playwright's sync API.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from types import TracebackType


class _Link:
    """One client connection and its connection to the server."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self._open_pumps = 2
        self._lock = threading.Lock()

    def cut(self) -> None:
        # shutdown() wakes a thread blocked in recv() on the socket; close() alone may not.
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def pump_done(self) -> bool:
        """Called by each pump as it ends; True for the last one (which closes the sockets)."""
        with self._lock:
            self._open_pumps -= 1
            return self._open_pumps == 0

    def close(self) -> None:
        self.client.close()
        self.server.close()


class TCPProxy:
    """Forward ``127.0.0.1:<port>`` to ``upstream``; see the module docstring."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._links: set[_Link] = set()
        self._threads: list[threading.Thread] = []
        self.connections = 0
        """How many client connections were accepted so far."""
        self._start(self._accept)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            link = _Link(client, server)
            with self._lock:
                self._links.add(link)
                self.connections += 1
            self._start(self._pump, link, client, server, False)
            self._start(self._pump, link, server, client, True)

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket, downstream: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if downstream:
                    self._flowing.wait()
                dst.sendall(data)
            # Pass the end of one direction on, as TCP would (a half-close).
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            link.cut()  # one side failed: the connection as a whole is gone
        finally:
            if link.pump_done():
                with self._lock:
                    self._links.discard(link)
                link.close()

    def hold(self) -> None:
        """Stop passing on the server's bytes (connections stay open, silent)."""
        self._flowing.clear()

    def sever(self) -> int:
        """Close every open connection (held bytes are lost), then let bytes flow again.

        Returns how many connections were cut.
        """
        with self._lock:
            links = list(self._links)
        for link in links:
            link.cut()
        self._flowing.set()
        return len(links)

    def close(self) -> None:
        """Stop accepting, cut every connection and wait for the threads to end."""
        # On Linux shutdown() wakes the thread blocked in accept(); close() alone does not.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self.sever()
        for thread in self._threads:
            thread.join(timeout=10)

    def __enter__(self) -> TCPProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
