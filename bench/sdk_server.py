"""The benchmark workload on the official a2a-sdk server: Starlette routes under uvicorn.

An ``AgentExecutor`` written with the SDK's own types (``TaskUpdater``, protobuf parts) that
emits exactly what ``project/bench_agent.py`` emits: per tool call a ``started`` and a
``completed`` tool-call-v1 frame as artifact-updates, then a text answer and COMPLETED.

    python -m bench.sdk_server --port 9200
"""

from __future__ import annotations

import argparse
import asyncio
import time

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
from project.bench_agent import TOOL, parse


class BenchExecutor(AgentExecutor):
    """``bench k=<K> pad=<P>`` / ``bench hold=<S>`` with the SDK's types."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        k, p, hold = parse(context.get_user_input())
        pad = "x" * p
        await updater.start_work()
        metadata = struct_pb2.Struct()
        metadata.update({"mimeType": TOOL_CALL_V1_MIME_TYPE})
        for i in range(k):
            call_id = f"{task.id}:{i}"
            started = {
                "toolCallId": call_id,
                "name": TOOL,
                "phase": "started",
                "args": {"i": i, "t_emit": time.time(), "pad": pad},
            }
            await self._frame(updater, started, metadata)
            if hold is not None:
                await asyncio.sleep(hold)
            completed = {
                "toolCallId": call_id,
                "name": TOOL,
                "phase": "completed",
                "result": {"i": i, "t_emit": time.time(), "pad": pad},
            }
            await self._frame(updater, completed, metadata)
        await updater.add_artifact(
            [new_text_part(f"{k} tool calls done")], name="answer", last_chunk=True
        )
        await updater.complete()

    async def _frame(
        self, updater: TaskUpdater, frame: dict[str, object], metadata: struct_pb2.Struct
    ) -> None:
        part = pb.Part(
            data=ParseDict(frame, struct_pb2.Value()),
            metadata=metadata,
            media_type="application/json",
        )
        await updater.add_artifact(
            [part], name="tool-call", extensions=[TOOL_CALL_V1_URI], last_chunk=False
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        assert task is not None
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def build_app(base_url: str) -> Starlette:
    card = pb.AgentCard(
        name="SDK bench agent",
        description="The a2a-toolcall benchmark workload on the official a2a-sdk server.",
        version="1.0.0",
        supported_interfaces=[
            pb.AgentInterface(
                url=f"{base_url}/a2a/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=pb.AgentCapabilities(
            streaming=True, extensions=[pb.AgentExtension(uri=TOOL_CALL_V1_URI, required=False)]
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[pb.AgentSkill(id="bench", name="Benchmark", description="bench k=<K> pad=<P>")],
    )
    handler = DefaultRequestHandler(
        agent_executor=BenchExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a/")]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9200)
    args = parser.parse_args()
    app = build_app(f"http://127.0.0.1:{args.port}")
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        backlog=2048,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
