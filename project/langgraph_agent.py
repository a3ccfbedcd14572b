"""The demo site's default agent: a LangGraph ReAct loop with real tools.

The model is, by default, an offline deterministic planner written as a LangChain chat model:
it reads the request as a list of things to do (see ``project.agents``), answers with one tool
call per thing, all in one turn (so they run in parallel), then answers from the tool results.
No network, no key. Set ``A2A_DEMO_OPENAI_MODEL`` (and ``A2A_DEMO_OPENAI_BASE_URL``,
``A2A_DEMO_OPENAI_API_KEY``) to use an OpenAI-compatible model instead (needs
``langchain-openai``, the ``openai`` extra).

Tools: ``calculator``, ``clock``, ``slow``, ``broken`` (as in the plain demo agent) and
``search_docs``, a search over this project's own documentation.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from a2a_toolcall.runtime.langgraph import LangGraphAgent, message_text
from project import agents as plain

DOCS = Path(__file__).resolve().parent.parent / "docs"
README = DOCS.parent / "README.md"

# --- tools -------------------------------------------------------------------------------------


@tool
def calculator(expression: str) -> float | int:
    """Evaluate arithmetic: + - * / // % ** and parentheses."""
    return plain.calculator(expression)


@tool
def clock(place: str) -> dict[str, str]:
    """The current time in a city or an IANA time zone such as Europe/Paris."""
    return plain.clock(place)


@tool
async def slow(seconds: float) -> str:
    """Wait a number of seconds (at most 120), then say so."""
    return await plain.slow(seconds)


@tool
def broken() -> str:
    """Always fails, to show a failed tool call."""
    return plain.broken()


@tool
def search_docs(query: str) -> list[dict[str, Any]]:
    """Search this project's documentation; returns matching lines with file and line number."""
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
    if not words:
        raise ValueError("say what to search for")
    hits: list[tuple[int, dict[str, Any]]] = []
    for path in sorted([README, *DOCS.glob("*.md")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            score = sum(word in line.lower() for word in words)
            if score:
                where = str(path.relative_to(DOCS.parent))
                hits.append((score, {"file": where, "line": number, "text": line.strip()[:200]}))
    hits.sort(key=lambda hit: -hit[0])
    return [hit for _, hit in hits[:5]]


TOOLS: list[BaseTool] = [calculator, clock, slow, broken, search_docs]

# --- the offline planner -----------------------------------------------------------------------

_SEARCH = re.compile(
    r"\b(?:search|look\s+up|find)\s+(?:in\s+)?(?:the\s+)?docs?\s+(?:for|about)\s+(?P<q>.+)$",
    re.IGNORECASE,
)


def plan_calls(text: str) -> list[dict[str, Any]]:
    """The tool calls (name, args) a request asks for, in order."""
    calls: list[dict[str, Any]] = []
    rest = []
    for clause in filter(None, (c.strip() for c in plain._SPLIT.split(text))):
        match = _SEARCH.search(clause)
        if match:
            calls.append({"name": "search_docs", "args": {"query": match["q"].strip()}})
        else:
            rest.append(clause)
    planned, _ = plain.plan(" and ".join(rest))
    calls += [{"name": call.name, "args": dict(call.args or {})} for call in planned]
    return calls


def _describe(name: str, args: dict[str, Any], message: ToolMessage) -> str:
    if message.status == "error":
        first_line = message_text(message).strip().splitlines()[0]
        return f"{name} failed: {first_line}"
    try:
        value: Any = json.loads(message_text(message))
    except ValueError:
        value = message_text(message)
    if name == "calculator":
        return f"{args.get('expression')} = {value}"
    if name == "clock" and isinstance(value, dict):
        return f"it is {value['time']} in {value['place']} ({value['zone']})"
    if name == "search_docs" and isinstance(value, list):
        found = ", ".join(f"{hit['file']}:{hit['line']}" for hit in value) or "nothing"
        return f"the docs mention {args.get('query')!r} at {found}"
    return f"{name}: {value}"


class PlannerChatModel(BaseChatModel):
    """A deterministic, offline chat model that plans tool calls from the request's wording."""

    bound_tools: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "a2a-toolcall-offline-planner"

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.model_copy(update={"bound_tools": names})

    def _decide(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            calls = [c for c in plan_calls(message_text(last)) if c["name"] in self.bound_tools]
            if not calls:
                return AIMessage(content=plain.HELP)
            return AIMessage(
                content="",
                tool_calls=[
                    {"name": c["name"], "args": c["args"], "id": f"call_{uuid.uuid4().hex[:24]}"}
                    for c in calls
                ],
            )
        # Tool results: answer from the results of the last turn.
        asked = next(m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls)
        results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
        lines = [
            _describe(call["name"], call["args"], results[call["id"]])
            for call in asked.tool_calls
            if call["id"] in results
        ]
        return AIMessage(content="; ".join(lines) + ".")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._decide(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop)


def default_model() -> BaseChatModel:
    """The offline planner, or an OpenAI-compatible model when the environment names one."""
    model = os.environ.get("A2A_DEMO_OPENAI_MODEL")
    if not model:
        return PlannerChatModel()
    from langchain_openai import ChatOpenAI  # the "openai" extra

    chat: BaseChatModel = ChatOpenAI(
        model=model,
        base_url=os.environ.get("A2A_DEMO_OPENAI_BASE_URL") or None,
        api_key=os.environ.get("A2A_DEMO_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY"),
    )
    return chat


def build_graph(model: BaseChatModel, tools: Sequence[BaseTool] = TOOLS) -> Any:
    """A ReAct loop: the model, then the tools it asked for (in parallel), until it answers."""
    bound = model.bind_tools(list(tools))

    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node("tools", ToolNode(list(tools), handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


assistant = LangGraphAgent(build_graph(default_model()))
"""The demo site's default agent (``A2A_TOOLCALL['AGENTS']['assistant']``)."""
