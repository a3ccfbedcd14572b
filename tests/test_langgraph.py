"""The LangGraph adapter on real graphs (no LangGraph mocks): exact frames and narration."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any
from unittest.mock import ANY

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from a2a_toolcall.bus import TOPIC_INPUT_REQUEST, TOPIC_TOOLFRAME
from a2a_toolcall.contract import ToolCallCompleted, ToolCallFailed, ToolCallStarted
from a2a_toolcall.runtime.langgraph import (
    ABANDONED,
    LangGraphAgent,
    extract_tool_frames,
    input_request,
    message_text,
)
from a2a_toolcall.runtime.limits import bound
from a2a_toolcall.testing import AgentRun, run_agent, user_message
from project.langgraph_agent import CHARGES, PlannerChatModel, build_graph, plan_calls
from tests.scripted_model import asks_twice, call, confirm, scripted

# --- tools -------------------------------------------------------------------------------------

AFTER_NAP: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def nap(seconds: float) -> str:
    """Sleep a while."""
    await asyncio.sleep(seconds)
    AFTER_NAP.append("woke")  # cancellation must keep this from running
    return "rested"


@tool
def explode() -> str:
    """Always raises."""
    raise RuntimeError("kaboom")


@tool
def grumpy() -> str:
    """Returns an error as a string, without raising."""
    return "Error: the service said no"


def react(model: Any, tools: Sequence[BaseTool], *, checkpointer: Any = None) -> Any:
    bound_model = model.bind_tools(list(tools))

    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound_model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node("tools", ToolNode(list(tools), handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def sequence(run: AgentRun) -> list[tuple[str, str, str, Any]]:
    out = []
    for frame in run.frames:
        detail = (
            frame.args
            if isinstance(frame, ToolCallStarted)
            else frame.result
            if isinstance(frame, ToolCallCompleted)
            else frame.error
        )
        out.append((frame.phase, frame.tool_call_id, frame.name, detail))
    return out


# --- extraction --------------------------------------------------------------------------------


def test_extract_tool_frames_each_message_once_with_a_cursor() -> None:
    messages = [
        HumanMessage("hi", id="h1"),
        AIMessage("", id="a1", tool_calls=[call("add", "c1", a=1, b=2), call("", "c2")]),
    ]
    frames, cursor = extract_tool_frames(messages, 0)
    assert [(f.phase, f.tool_call_id) for f in frames] == [("started", "c1")]  # nameless dropped
    messages.append(ToolMessage("3", tool_call_id="c1", name="add", id="t1"))
    frames, cursor = extract_tool_frames(messages, cursor)
    assert frames == [ToolCallCompleted(tool_call_id="c1", name="add", result="3")]
    assert extract_tool_frames(messages, cursor) == ([], 3)


def test_results_errors_and_content_blocks() -> None:
    messages = [
        AIMessage("", id="a", tool_calls=[call("f", "1"), call("g", "2"), call("h", "3")]),
        ToolMessage('{"rows": [1, 2]}', tool_call_id="1", name="f"),
        ToolMessage("boom", tool_call_id="2", name="g", status="error"),
        ToolMessage(
            [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            tool_call_id="3",
            name="h",
        ),
    ]
    frames, _ = extract_tool_frames(messages, 1)
    assert frames == [
        ToolCallCompleted(tool_call_id="1", name="f", result={"rows": [1, 2]}),
        ToolCallFailed(tool_call_id="2", name="g", error="boom"),
        ToolCallCompleted(
            tool_call_id="3",
            name="h",
            result=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        ),
    ]
    assert message_text(messages[3]) == "ab"


def test_calls_without_ids_stitch_to_their_results() -> None:
    messages = [
        AIMessage(
            "", id="a1", tool_calls=[call("add", None, a=1, b=1), call("add", None, a=2, b=2)]
        ),
        ToolMessage("2", tool_call_id="", name="add"),
        ToolMessage("4", tool_call_id="", name="add"),
    ]
    frames, _ = extract_tool_frames(messages, 0)
    assert [(f.phase, f.tool_call_id) for f in frames] == [
        ("started", "a1:0"),
        ("started", "a1:1"),
        ("completed", "a1:0"),
        ("completed", "a1:1"),
    ]


def test_large_values_are_cut_with_a_marker_stating_the_size() -> None:
    huge = "x" * 100
    assert bound(huge, 10) == "xxxxxxxxxx… [truncated: 100 characters in all, the first 10 shown]"
    assert bound({"a": 1}, 100) == {"a": 1}
    messages = [AIMessage("", id="a", tool_calls=[call("f", "1", blob=huge)])]
    (frame,) = extract_tool_frames(messages, 0, limit=20)[0]
    assert isinstance(frame, ToolCallStarted)
    text = json.dumps({"blob": huge}, separators=(",", ":"))  # compact JSON
    assert (
        frame.args
        == text[:20] + f"… [truncated: {len(text)} characters in all, the first 20 shown]"
    )


# --- graphs ------------------------------------------------------------------------------------


async def test_parallel_tool_calls_in_one_turn() -> None:
    model = scripted(
        AIMessage(
            "",
            tool_calls=[
                call("add", "c1", a=1, b=2),
                call("add", "c2", a=3, b=4),
                call("nap", "c3", seconds=0.2),
            ],
        ),
        AIMessage("3 and 7, and rested"),
    )
    run = await run_agent(LangGraphAgent(react(model, [add, nap])), "sums please")
    assert run.narration == ["thinking", "running add; running nap"]
    frames = sequence(run)
    assert frames[:3] == [
        ("started", "c1", "add", {"a": 1, "b": 2}),
        ("started", "c2", "add", {"a": 3, "b": 4}),
        ("started", "c3", "nap", {"seconds": 0.2}),
    ]
    # The fast tools resolve (in whichever order they finish) while nap still sleeps.
    assert sorted(frames[3:5]) == [("completed", "c1", "add", "3"), ("completed", "c2", "add", "7")]
    assert frames[5] == ("completed", "c3", "nap", "rested")
    assert run.response == {"status": "completed", "text": "3 and 7, and rested"}


async def test_a_raising_tool_fails_its_frame_and_the_task_completes() -> None:
    model = scripted(
        AIMessage("", tool_calls=[call("explode", "e1"), call("add", "a1", a=1, b=1)]),
        AIMessage("one tool broke"),
    )
    run = await run_agent(LangGraphAgent(react(model, [explode, add])), "go")
    frames = sequence(run)
    assert frames[:2] == [
        ("started", "e1", "explode", {}),
        ("started", "a1", "add", {"a": 1, "b": 1}),
    ]
    # The two tools run side by side: their outcomes come in the order they finish.
    assert sorted(frames[2:]) == [
        ("completed", "a1", "add", "2"),
        ("failed", "e1", "explode", "RuntimeError: kaboom"),
    ]
    assert run.status == "completed" and run.text == "one tool broke"


async def test_a_tool_returning_an_error_string_completes() -> None:
    model = scripted(AIMessage("", tool_calls=[call("grumpy", "g1")]), AIMessage("it said no"))
    run = await run_agent(LangGraphAgent(react(model, [grumpy])), "go")
    assert sequence(run) == [
        ("started", "g1", "grumpy", {}),
        ("completed", "g1", "grumpy", "Error: the service said no"),
    ]
    assert run.narration == ["thinking", "running grumpy"]


async def test_follow_ups_on_a_checkpointer_do_not_repeat_earlier_calls() -> None:
    model = scripted(
        AIMessage("", tool_calls=[call("add", "first", a=1, b=1)]),
        AIMessage("2"),
        AIMessage("", tool_calls=[call("add", "second", a=2, b=2)]),
        AIMessage("4"),
    )
    agent = LangGraphAgent(react(model, [add], checkpointer=InMemorySaver()))
    one = await run_agent(agent, "1+1", context_id="conversation-1")
    two = await run_agent(agent, "now 2+2", context_id="conversation-1")
    assert [(f.phase, f.tool_call_id) for f in one.frames] == [
        ("started", "first"),
        ("completed", "first"),
    ]
    assert [(f.phase, f.tool_call_id) for f in two.frames] == [
        ("started", "second"),
        ("completed", "second"),
    ]
    state = await agent.graph.aget_state({"configurable": {"thread_id": "conversation-1"}})
    assert len(state.values["messages"]) == 8  # the second run saw the whole conversation
    other = await run_agent(agent, "hi", context_id="conversation-2")
    assert other.text == "4"  # the script is exhausted: it repeats its last answer
    assert other.frames == []


async def test_history_is_sent_when_the_graph_keeps_no_state() -> None:
    seen: list[int] = []

    async def count(state: MessagesState) -> dict[str, Any]:
        seen.append(len(state["messages"]))
        return {"messages": [AIMessage(f"I see {len(state['messages'])} messages")]}

    graph = StateGraph(MessagesState)
    graph.add_node("count", count)
    graph.add_edge(START, "count")
    graph.add_edge("count", END)
    history = (user_message("earlier"),)
    run = await run_agent(LangGraphAgent(graph.compile()), "now", history=history)
    assert run.text == "I see 2 messages"


async def test_tools_inside_a_sub_graph_are_streamed_live() -> None:
    inner_model = scripted(
        AIMessage("", tool_calls=[call("add", "inner-1", a=5, b=5)]),
        AIMessage("the researcher found 10"),
    )
    researcher = react(inner_model, [add])

    async def delegate(state: MessagesState) -> dict[str, Any]:
        result = await researcher.ainvoke({"messages": state["messages"]})
        return {"messages": result["messages"][len(state["messages"]) :]}

    outer = StateGraph(MessagesState)
    outer.add_node("researcher", researcher)
    outer.add_edge(START, "researcher")
    outer.add_edge("researcher", END)
    run = await run_agent(LangGraphAgent(outer.compile()), "research")
    assert sequence(run) == [
        ("started", "inner-1", "add", {"a": 5, "b": 5}),
        ("completed", "inner-1", "add", "10"),
    ]
    assert run.narration == ["thinking", "running add"]
    assert run.text == "the researcher found 10"


async def test_cancel_while_a_tool_sleeps_cancels_the_tool() -> None:
    from channels.layers import InMemoryChannelLayer

    from a2a_toolcall.bus import Bus
    from a2a_toolcall.runtime import Runtime, build_request
    from a2a_toolcall.testing import TaskRecorder

    AFTER_NAP.clear()
    model = scripted(AIMessage("", tool_calls=[call("nap", "n1", seconds=30)]), AIMessage("done"))
    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(
        bus=bus, agents={"lg": LangGraphAgent(react(model, [nap]))}, default_agent="lg", retain=0
    )
    work = build_request("lg-cancel-1", user_message("nap"))
    async with TaskRecorder(bus, work["cid"]) as recorder:
        running = asyncio.ensure_future(runtime.run(work))
        await recorder.wait_for("agent.skill.toolframe")
        await asyncio.sleep(0.1)
        await recorder.cancel("stop")
        run = await recorder.wait(10)
        await running
    await asyncio.sleep(0.1)
    assert run.response == {"status": "canceled", "reason": "stop"}
    assert sequence(run) == [
        ("started", "n1", "nap", {"seconds": 30}),
        ("failed", "n1", "nap", "cancelled"),
    ]
    assert AFTER_NAP == []


async def test_the_recursion_limit_fails_the_task_readably() -> None:
    # A model that never stops asking for tools.
    model = scripted(
        *(AIMessage("", tool_calls=[call("add", f"loop-{i}", a=i, b=1)]) for i in range(20))
    )
    run = await run_agent(LangGraphAgent(react(model, [add]), recursion_limit=5), "loop")
    assert run.response == {
        "status": "failed",
        "error": "the agent stopped after 5 steps without an answer (the recursion limit; "
        "raise LANGGRAPH_RECURSION_LIMIT if the task needs more)",
    }
    assert [(f.phase, f.tool_call_id) for f in run.frames] == [
        ("started", "loop-0"),
        ("completed", "loop-0"),
        ("started", "loop-1"),
        ("completed", "loop-1"),
        ("started", "loop-2"),
        ("failed", "loop-2"),
    ]
    assert run.frames[-1].error == (  # type: ignore[union-attr]
        "abandoned: the agent failed before this tool finished"
    )


async def test_a_model_error_fails_the_task_readably() -> None:
    @tool
    def fine() -> str:
        """Fine."""
        return "ok"

    async def broken_model(state: MessagesState) -> dict[str, Any]:
        raise ConnectionError("the model endpoint refused the connection")

    graph = StateGraph(MessagesState)
    graph.add_node("agent", broken_model)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    run = await run_agent(LangGraphAgent(graph.compile()), "hello")
    assert run.response == {
        "status": "failed",
        "error": "the agent failed: ConnectionError: the model endpoint refused the connection",
    }


async def test_create_agent_graphs_and_structured_output() -> None:
    from langchain.agents import create_agent
    from pydantic import BaseModel

    class Total(BaseModel):
        value: int

    model = scripted(
        AIMessage("", tool_calls=[call("add", "s1", a=20, b=22)]),
        AIMessage("", tool_calls=[call("Total", "s2", value=42)]),
    )
    graph = create_agent(model, [add], response_format=Total)
    run = await run_agent(LangGraphAgent(graph), "add")
    assert [(f.phase, f.name) for f in run.frames][:2] == [("started", "add"), ("completed", "add")]
    assert run.response is not None
    assert {"data": {"value": 42}} in run.response["parts"]


# --- the demo agent ----------------------------------------------------------------------------


def test_the_planner_reads_requests() -> None:
    assert plan_calls("search the docs for keepalive and what is 2+2") == [
        {"name": "search_docs", "args": {"query": "keepalive"}},
        {"name": "calculator", "args": {"expression": "2+2"}},
    ]


async def test_the_demo_assistant_end_to_end_in_process() -> None:
    agent = LangGraphAgent(build_graph(PlannerChatModel()))
    run = await run_agent(agent, "what is 6*7 and the time in Paris and fail", context_id="demo-1")
    assert run.narration == ["thinking", "running calculator; running clock; running broken"]
    assert [(f.phase, f.name) for f in run.frames][:3] == [
        ("started", "calculator"),
        ("started", "clock"),
        ("started", "broken"),
    ]
    assert run.text is not None and run.text.startswith("6*7 = 42; it is ")
    assert "broken failed: Error: RuntimeError('this tool always fails" in run.text
    help_run = await run_agent(agent, "hello there", context_id="demo-2")
    assert help_run.frames == [] and help_run.text is not None and "arithmetic" in help_run.text


@pytest.fixture(autouse=True)
def _reset_naps() -> None:
    AFTER_NAP.clear()


# --- human in the loop: interrupt -> input-required -> Command(resume=...) ---------------------


def kinds(run: AgentRun) -> list[tuple[str, Any]]:
    """Frames and questions in publication order: what a client sees of the task."""
    seen: list[tuple[str, Any]] = []
    for envelope in run.envelopes:
        if envelope.topic == TOPIC_TOOLFRAME:
            frame = envelope.payload["frame"]
            seen.append((frame["phase"], frame["toolCallId"]))
        elif envelope.topic == TOPIC_INPUT_REQUEST:
            seen.append(("asked", envelope.payload["question"]))
    return seen


@pytest.mark.parametrize("checkpointer", [None, "own"])
async def test_two_interrupts_in_one_task_each_resumed_by_an_answer(
    checkpointer: str | None,
) -> None:
    model = scripted(
        AIMessage("", tool_calls=[call("confirm", "q1", question="Ship it?")]),
        AIMessage("", tool_calls=[call("confirm", "q2", question="Really?")]),
        AIMessage("shipped"),
    )
    saver = InMemorySaver() if checkpointer else None
    agent = LangGraphAgent(react(model, [confirm], checkpointer=saver))
    run = await run_agent(agent, "ship", answers=["yes", "sure"], context_id="hitl-1")
    assert run.status == "completed" and run.text == "shipped"
    # Each tool started before its question and completed with the answer after it.
    assert kinds(run) == [
        ("started", "q1"),
        ("asked", "Ship it?"),
        ("completed", "q1"),
        ("started", "q2"),
        ("asked", "Really?"),
        ("completed", "q2"),
    ]
    results = [f.result for f in run.frames if isinstance(f, ToolCallCompleted)]
    assert results == ["the user said yes", "the user said sure"]
    assert run.narration == ["thinking", "running confirm", "running confirm"]
    if saver is None:
        # The in-memory saver the agent brought forgets the task's thread when it ends.
        assert agent.task_saver is not None and not agent.task_saver.storage
    else:
        state = await agent.graph.aget_state({"configurable": {"thread_id": "hitl-1"}})
        assert state.next == () and len(state.values["messages"]) == 6


async def test_a_dict_interrupt_asks_its_question_and_offers_its_choices() -> None:
    async def approve(state: MessagesState) -> dict[str, Any]:
        decision = interrupt(
            {"question": "Deploy to production?", "choices": ["approve", "reject"]}
        )
        return {"messages": [AIMessage(f"decision: {decision}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("approve", approve)
    graph.add_edge(START, "approve")
    graph.add_edge("approve", END)
    run = await run_agent(LangGraphAgent(graph.compile()), "deploy", answers=["approve"])
    assert run.text == "decision: approve"
    (request,) = [e.payload for e in run.of(TOPIC_INPUT_REQUEST)]
    assert request["question"] == "Deploy to production?"
    assert request["meta"]["choices"] == ["approve", "reject"]
    assert request["meta"]["value"] == {
        "question": "Deploy to production?",
        "choices": ["approve", "reject"],
    }


def test_input_request_reads_interrupt_values() -> None:
    from langgraph.types import Interrupt

    assert input_request(Interrupt("Your name?", id="i1")).question == "Your name?"
    assert input_request(Interrupt({"prompt": "Pick one"}, id="i2")).question == "Pick one"
    other = input_request(Interrupt({"amount": 5}, id="i3"))
    assert other.question == '{"amount": 5}' and other.meta == {
        "interruptId": "i3",
        "value": {"amount": 5},
    }
    assert input_request(Interrupt(None, id="i4")).question == (
        "The agent needs your input to go on."
    )


async def test_parallel_interrupts_in_one_step_are_asked_in_turn_and_resumed_together() -> None:
    def branch(name: str) -> Any:
        async def node(state: MessagesState) -> dict[str, Any]:
            return {"messages": [AIMessage(f"{name}={interrupt(f'{name}?')}", id=name)]}

        return node

    graph = StateGraph(MessagesState)
    graph.add_node("left", branch("left"))
    graph.add_node("right", branch("right"))
    graph.add_node("join", lambda state: {"messages": [AIMessage("joined")]})
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge(["left", "right"], "join")
    graph.add_edge("join", END)
    run = await run_agent(LangGraphAgent(graph.compile()), "go", answers=["L", "R"])
    assert run.status == "completed" and run.text == "joined"
    assert run.questions == ["left?", "right?"]
    agent = LangGraphAgent(graph.compile(checkpointer=InMemorySaver()))
    run = await run_agent(agent, "go", answers=["L", "R"], context_id="parallel")
    state = await agent.graph.aget_state({"configurable": {"thread_id": "parallel"}})
    assert [m.content for m in state.values["messages"][1:]] == ["left=L", "right=R", "joined"]


async def test_an_interrupt_inside_a_sub_graph_resumes_the_sub_graph() -> None:
    inner_model = scripted(
        AIMessage("", tool_calls=[call("confirm", "inner-q", question="Inner question?")]),
        AIMessage("the sub-agent is done"),
    )
    outer = StateGraph(MessagesState)
    outer.add_node("researcher", react(inner_model, [confirm]))
    outer.add_edge(START, "researcher")
    outer.add_edge("researcher", END)
    run = await run_agent(LangGraphAgent(outer.compile()), "research", answers=["fine"])
    assert run.status == "completed" and run.text == "the sub-agent is done"
    assert kinds(run) == [
        ("started", "inner-q"),
        ("asked", "Inner question?"),
        ("completed", "inner-q"),
    ]


async def test_cancel_while_waiting_then_a_new_task_in_the_context_is_not_a_resume() -> None:
    from channels.layers import InMemoryChannelLayer

    from a2a_toolcall.bus import Bus
    from a2a_toolcall.runtime import Runtime, build_request
    from a2a_toolcall.testing import TaskRecorder

    model = scripted(
        AIMessage("", tool_calls=[call("confirm", "waiting", question="Go ahead?")]),
        AIMessage("", tool_calls=[call("add", "fresh", a=1, b=1)]),
        AIMessage("2"),
    )
    agent = LangGraphAgent(react(model, [confirm, add], checkpointer=InMemorySaver()))
    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(bus=bus, agents={"lg": agent}, default_agent="lg", retain=0)
    work = build_request("lg-wait-cancel", user_message("ask first"), context_id="ctx-1")
    async with TaskRecorder(bus, work["cid"]) as recorder:
        running = asyncio.ensure_future(runtime.run(work))
        await recorder.wait_for(TOPIC_INPUT_REQUEST)
        await recorder.cancel("never mind")
        canceled = await recorder.wait(10)
        await running
    await runtime.shutdown()
    assert canceled.response == {"status": "canceled", "reason": "never mind"}
    assert kinds(canceled) == [
        ("started", "waiting"),
        ("asked", "Go ahead?"),
        ("failed", "waiting"),
    ]
    # The context's thread still holds the interrupted run: the next task goes on beside it,
    # with the unanswered call closed, and is never taken for the answer to "Go ahead?".
    assert await agent.conversation_thread("ctx-1") == ("ctx-1~2", ANY)
    follow_up = await run_agent(agent, "1+1", context_id="ctx-1")
    assert follow_up.status == "completed" and follow_up.text == "2"
    assert follow_up.questions == [] and kinds(follow_up) == [
        ("started", "fresh"),
        ("completed", "fresh"),
    ]
    state = await agent.graph.aget_state({"configurable": {"thread_id": "ctx-1~2"}})
    closed = state.values["messages"][2]
    assert isinstance(closed, ToolMessage) and closed.tool_call_id == "waiting"
    assert closed.status == "error" and closed.content == ABANDONED
    assert [type(m).__name__ for m in state.values["messages"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    # The thread it went on is clean: the next task stays there.
    assert (await agent.conversation_thread("ctx-1"))[0] == "ctx-1~2"


async def test_an_interrupt_without_a_checkpointer_fails_with_a_hint() -> None:
    async def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(str(interrupt("name?")))]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    run = await run_agent(LangGraphAgent(graph.compile(checkpointer=False)), "hi")
    assert run.status == "failed"
    assert run.response is not None and "no checkpointer to resume from" in run.response["error"]


# --- the demo assistant asks through interrupt ---------------------------------------------------


async def test_the_demo_assistant_asks_your_name_through_interrupt() -> None:
    agent = LangGraphAgent(build_graph(PlannerChatModel()))
    run = await run_agent(agent, "what is 6*7 and ask me", answers=["Grace"], context_id="ask")
    assert run.questions == ["What is your name?"]
    assert run.text == "6*7 = 42; nice to meet you, Grace."
    assert [(f.phase, f.name) for f in run.frames] == [
        ("started", "calculator"),
        ("started", "ask_user"),
        ("completed", "calculator"),
        ("completed", "ask_user"),
    ]


async def test_the_demo_assistant_charges_only_once_approved() -> None:
    CHARGES.clear()
    agent = LangGraphAgent(build_graph(PlannerChatModel()))
    approved = await run_agent(
        agent, "charge 5 to my card and what is 1+1", answers=["approve"], context_id="pay-1"
    )
    (request,) = [e.payload for e in approved.of(TOPIC_INPUT_REQUEST)]
    assert request["question"] == "approve charge_card(amount=5)? Answer approve or reject."
    assert request["meta"]["choices"] == ["approve", "reject"]
    assert [c["charged"] for c in CHARGES] == [5.0]
    assert approved.text is not None
    assert approved.text.startswith("charged 5 EUR (receipt demo-") and "1+1 = 2" in approved.text
    # The calculator ran once, before the question: resuming re-runs only the waiting tool.
    assert [(f.phase, f.name) for f in approved.frames] == [
        ("started", "charge_card"),
        ("started", "calculator"),
        ("completed", "calculator"),
        ("completed", "charge_card"),
    ]
    rejected = await run_agent(agent, "charge 7 to my card", answers=["no"], context_id="pay-2")
    assert [c["charged"] for c in CHARGES] == [5.0]  # nothing more was charged
    assert rejected.status == "completed"
    assert rejected.text == (
        "charge_card was not run: rejected by the user (answered 'no'); nothing was done."
    )
    (failed,) = [f for f in rejected.frames if isinstance(f, ToolCallFailed)]
    assert failed.name == "charge_card" and failed.error.startswith("rejected by the user")


async def test_the_demo_assistant_says_what_it_did_not_understand() -> None:
    agent = LangGraphAgent(build_graph(PlannerChatModel()))
    run = await run_agent(
        agent, "what is 6*7 and the time in Tokyo and in Lima and fly me to the moon"
    )
    assert [(f.phase, f.name, getattr(f, "args", None)) for f in run.frames][:3] == [
        ("started", "calculator", {"expression": "6*7"}),
        ("started", "clock", {"place": "Tokyo"}),
        ("started", "clock", {"place": "Lima"}),
    ]
    assert run.text is not None and "(America/Lima)" in run.text
    assert run.text.endswith(". I did not understand: 'fly me to the moon'.")


async def test_a_checkpointer_made_on_the_event_loop_once_keeps_the_conversation() -> None:
    made: list[InMemorySaver] = []
    attempts: list[int] = []

    async def make_saver() -> InMemorySaver:
        await asyncio.sleep(0.01)  # an AsyncPostgresSaver opens its pool here
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("the database is not up yet")
        made.append(InMemorySaver())
        return made[-1]

    model = scripted(
        AIMessage("", tool_calls=[call("confirm", "c1", question="Sure?")]), AIMessage("done")
    )
    agent = LangGraphAgent(react(model, [confirm]), checkpointer=make_saver)
    assert agent.keeps_conversation and agent.task_saver is None
    failed = await run_agent(agent, "go", context_id="made")
    assert failed.response == {
        "status": "failed",
        "error": "the agent's checkpointer could not be made: ConnectionError: the database is "
        "not up yet (it is tried again with the next task)",
    }
    one = await run_agent(agent, "go", answers=["yes"], context_id="made")
    two = await run_agent(agent, "again", context_id="made")
    assert one.text == "done" and two.text == "done"
    assert len(attempts) == 2 and len(made) == 1  # made once it worked, then kept
    state = await made[0].aget_tuple({"configurable": {"thread_id": "made", "checkpoint_ns": ""}})
    assert state is not None and len(state.checkpoint["channel_values"]["messages"]) == 6


async def test_the_scripted_agent_asks_twice_in_one_task() -> None:
    run = await run_agent(asks_twice, "ship", answers=["yes", "sure"])
    assert run.questions == ["Ship it?", "Really?"]
    assert run.text == "shipped: the user said yes, the user said sure"
    assert kinds(run) == [
        ("started", "confirm-1"),
        ("asked", "Ship it?"),
        ("completed", "confirm-1"),
        ("started", "confirm-2"),
        ("asked", "Really?"),
        ("completed", "confirm-2"),
    ]
