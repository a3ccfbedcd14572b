"""How soon a client sees motion: request -> the Task, the ``thinking`` line, the first tool.

Starts the demo site (daphne, SQLite, in-memory layer, the LangGraph assistant) unless
``--url`` names a running one, streams ``--runs`` requests one after another and prints the
median and p90 of the time from sending the request to each of: the first event (the Task),
the ``thinking`` narration, the first ``started`` frame (after the planner's first decision).
The first request after the server came up is reported on its own line (a server that
imports its agents on the first request shows it there: ``warm_up()``, docs/deployment.md).

    python -m bench.first_event --runs 50
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from a2a_toolcall.contract import parse_tool_call
from a2a_toolcall.protocol.sse import SSEDecoder

ROOT = Path(__file__).resolve().parent.parent
ASK = "what is 6*7 and the time in Tokyo"


def measure(http: httpx.Client, url: str) -> tuple[float, float, float]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": ASK}],
            }
        },
    }
    decoder = SSEDecoder()
    marks: dict[str, float] = {}
    start = time.perf_counter()
    with http.stream(
        "POST", url + "/a2a/", json=body, timeout=30, headers={"A2A-Version": "1.0"}
    ) as response:
        for chunk in response.iter_bytes():
            now = time.perf_counter()
            for event in decoder.feed(chunk):
                result = json.loads(event.data)["result"]
                marks.setdefault("task", now)
                update = result.get("statusUpdate", {}).get("status", {})
                if update.get("message", {}).get("parts", [{}])[0].get("text") == "thinking":
                    marks.setdefault("thinking", now)
                artifact = result.get("artifactUpdate", {}).get("artifact")
                if artifact and "started" not in marks:
                    frame = parse_tool_call(artifact["parts"])
                    if frame is not None and frame.phase == "started":
                        marks["started"] = now
    return tuple((marks[k] - start) * 1000 for k in ("task", "thinking", "started"))  # type: ignore[return-value]


def serve() -> tuple[str, subprocess.Popen[bytes]]:
    database = Path(tempfile.mkdtemp()) / "bench.sqlite3"
    env = {
        **os.environ,
        "DATABASE_PATH": str(database),
        "DJANGO_DEBUG": "0",
        "A2A_DEMO_AGENT": "assistant",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = "8931"
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-p", port, "project.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.get(url + "/.well-known/agent-card.json", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    return url, process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running site (default: start the demo site)")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    process = None
    url = args.url
    if url is None:
        url, process = serve()
    try:
        # One client for all requests: building an httpx client (its TLS context) costs ~40 ms,
        # which would otherwise be counted as server latency.
        # TCP_NODELAY: httpx writes headers and body separately; without it, Nagle's
        # algorithm holds the body for the server's delayed ACK (~40 ms on Linux).
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        with httpx.Client(
            timeout=30, transport=httpx.HTTPTransport(socket_options=nodelay)
        ) as http:
            cold = measure(http, url)  # the first request after start: not in the samples
            samples = [measure(http, url) for _ in range(args.runs)]
    finally:
        if process is not None:
            process.terminate()
            process.wait(10)
    print(f"the first request after start, milliseconds from sending ({ASK!r}):")
    task, thinking, started = cold
    print(f"  first event {task:.1f}, thinking {thinking:.1f}, first started frame {started:.1f}")
    print(f"{args.runs} streamed requests to {url} ({ASK!r}), milliseconds from sending:")
    for i, label in enumerate(("first event (Task)", "thinking narration", "first started frame")):
        values = sorted(s[i] for s in samples)
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"  {label:22s} median {statistics.median(values):7.1f}   p90 {p90:7.1f}")
    ahead = sorted(s[2] - s[1] for s in samples)
    print(
        f"  thinking ahead of the first tool decision by {statistics.median(ahead):.1f} ms "
        f"(median); in {sum(a > 0 for a in ahead)}/{len(ahead)} runs it came first"
    )


if __name__ == "__main__":
    main()
