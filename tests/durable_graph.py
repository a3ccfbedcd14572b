"""A LangGraph agent whose checkpoints live in PostgreSQL: it runs a tool, then asks a question
with ``interrupt()``; the answer can arrive after the worker that asked is gone."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from a2a_toolcall.runtime.langgraph import LangGraphAgent


@tool
def forecast(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def plan(state: MessagesState) -> dict[str, Any]:
    call = {"name": "forecast", "args": {"city": "Oslo"}, "id": f"call-{uuid.uuid4().hex[:8]}"}
    return {"messages": [AIMessage(content="", id=uuid.uuid4().hex, tool_calls=[call])]}


def ask(state: MessagesState) -> dict[str, Any]:
    city = interrupt({"question": "Which city next?", "choices": ["Paris", "Rome"]})
    found = state["messages"][-1].content
    return {"messages": [AIMessage(content=f"{found}; next: {city}", id=uuid.uuid4().hex)]}


def build() -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("plan", plan)
    graph.add_node("tools", ToolNode([forecast]))
    graph.add_node("ask", ask)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "ask")
    graph.add_edge("ask", END)
    return graph.compile()


async def postgres_saver() -> Any:
    """An ``AsyncPostgresSaver`` on the site's PostgreSQL database (its own pool)."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    db = settings.DATABASES["default"]
    conninfo = (
        f"host={db.get('HOST') or '127.0.0.1'} port={db.get('PORT') or 5432} "
        f"user={db.get('USER') or 'postgres'} dbname={db['NAME']}"
    )
    pool = AsyncConnectionPool(
        conninfo,
        min_size=1,
        max_size=4,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    await pool.open()
    saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    await saver.setup()
    return saver


durable_graph = LangGraphAgent(build(), checkpointer=postgres_saver)
