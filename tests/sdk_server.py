"""The demo agent served by the official a2a-sdk server (Starlette routes under uvicorn).

A peer for interoperability tests: the same tools as ``project.agents`` (parallel calls,
failures, a question), written as an SDK ``AgentExecutor`` with the SDK's own types, streaming
tool-call-v1 frames as artifact-updates. Both JSON-RPC dialects are served on one URL.

Run: ``python -m tests.sdk_server --port 9100``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict
from starlette.applications import Starlette

from a2a_toolcall.contract import TOOL_CALL_V1_MIME_TYPE, TOOL_CALL_V1_URI
from project.agents import HELP, plan
from tests.live import ROOT, _wait_until_up, free_port


def _agent_message(text: str, task: pb.Task) -> pb.Message:
    return pb.Message(
        message_id=uuid.uuid4().hex,
        role=pb.Role.ROLE_AGENT,
        parts=[new_text_part(text)],
        task_id=task.id,
        context_id=task.context_id,
    )


class DemoExecutor(AgentExecutor):
    """Plans tool calls from the text, runs them in parallel and streams a frame per event."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        if task.status.state == pb.TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.start_work()
            await self._answer(updater, task, f"nice to meet you, {text.strip() or 'stranger'}.")
            return
        await updater.update_status(
            pb.TaskState.TASK_STATE_WORKING, message=_agent_message("thinking", task)
        )
        calls, ask = plan(text)
        if not calls and not ask:
            await self._answer(updater, task, HELP)
            return
        lines = await asyncio.gather(*(self._run(updater, call) for call in calls))
        if ask:
            await updater.requires_input(message=_agent_message("What is your name?", task))
            return
        await self._answer(updater, task, "; ".join(lines) + ".")

    async def _run(self, updater: TaskUpdater, call: Any) -> str:
        call_id = uuid.uuid4().hex
        started = {"toolCallId": call_id, "name": call.name, "phase": "started", "args": call.args}
        await self._frame(updater, started)
        try:
            value = call.run(**call.args)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            await self._frame(
                updater,
                {"toolCallId": call_id, "name": call.name, "phase": "failed", "error": error},
            )
            return f"{call.name} failed: {error}"
        await self._frame(
            updater,
            {"toolCallId": call_id, "name": call.name, "phase": "completed", "result": value},
        )
        return f"{call.name}: {value}"

    async def _frame(self, updater: TaskUpdater, frame: dict[str, Any]) -> None:
        metadata = struct_pb2.Struct()
        metadata.update({"mimeType": TOOL_CALL_V1_MIME_TYPE})
        part = pb.Part(
            data=ParseDict(frame, struct_pb2.Value()),
            metadata=metadata,
            media_type="application/json",
        )
        await updater.add_artifact(
            [part], name="tool-call", extensions=[TOOL_CALL_V1_URI], last_chunk=False
        )

    async def _answer(self, updater: TaskUpdater, task: pb.Task, text: str) -> None:
        await updater.add_artifact([new_text_part(text)], name="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        assert task is not None
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def build_app(base_url: str) -> Starlette:
    """The Starlette app: the agent card and one JSON-RPC route serving 1.0 and 0.3."""
    card = pb.AgentCard(
        name="SDK demo agent",
        description="The a2a-toolcall demo tools behind the official a2a-sdk server.",
        version="1.0.0",
        supported_interfaces=[
            pb.AgentInterface(
                url=f"{base_url}/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
            ),
            pb.AgentInterface(
                url=f"{base_url}/a2a", protocol_binding="JSONRPC", protocol_version="0.3"
            ),
        ],
        capabilities=pb.AgentCapabilities(
            streaming=True,
            extensions=[pb.AgentExtension(uri=TOOL_CALL_V1_URI, required=False)],
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            pb.AgentSkill(id="tools", name="Demo tools", description=HELP, tags=["demo"]),
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=DemoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/a2a", enable_v0_3_compat=True),
    ]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--public-url", help="the base URL the card names (default: this server)")
    args = parser.parse_args()
    base = args.public_url or f"http://127.0.0.1:{args.port}"
    uvicorn.run(build_app(base), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()


@contextlib.contextmanager
def running(log: Path, *, port: int | None = None, public_url: str = "") -> Iterator[str]:
    """Serve the SDK demo agent in a subprocess; yield its base URL.

    ``public_url`` is the base URL its card names (a proxy in front of it, say).
    """
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "tests.sdk_server", "--port", str(port)]
    if public_url:
        command += ["--public-url", public_url]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
