"""The tool-call-v1 contract: frames, emit_tool_call, parse_tool_call, ToolTimeline."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_toolcall import contract
from a2a_toolcall.contract import (
    CANCELLED_ERROR,
    TOOL_CALL_V1_MIME_TYPE,
    TOOL_CALL_V1_URI,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallParseError,
    ToolCallStarted,
    ToolState,
    ToolTimeline,
    emit_tool_call,
    frame_from_wire,
    is_cancelled_error,
    parse_tool_call,
)
from a2a_toolcall.protocol import models as m
from a2a_toolcall.protocol import v03
from tests import strategies as s

# The wire shapes of the notes (shared/notes/a2a-wire.md): what @a2a-js/sdk puts on the wire.
JS_V10_PART = {
    "data": {"toolCallId": "c1", "name": "search", "phase": "started", "args": {"q": "x"}},
    "metadata": {"mimeType": "application/vnd.protolabs.tool-call-v1+json"},
    "mediaType": "application/json",
}
JS_V03_PART = {
    "kind": "data",
    "data": {"toolCallId": "c1", "name": "search", "phase": "completed", "result": [1, 2]},
    "metadata": {"mimeType": "application/vnd.protolabs.tool-call-v1+json"},
}


def test_constants_are_the_published_identifiers() -> None:
    assert TOOL_CALL_V1_URI == "https://proto-labs.ai/a2a/ext/tool-call-v1"
    assert TOOL_CALL_V1_MIME_TYPE == "application/vnd.protolabs.tool-call-v1+json"


def test_contract_and_protocol_import_without_django() -> None:
    code = (
        "import sys\n"
        "import a2a_toolcall.contract, a2a_toolcall.protocol\n"
        "import a2a_toolcall.protocol.v03, a2a_toolcall.protocol.sse\n"
        "bad = sorted(n for n in sys.modules if n == 'django' or n.startswith('django.')\n"
        "             or n.startswith('channels'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


# --- frames ----------------------------------------------------------------------------------


def test_frames_serialise_with_wire_names_and_omit_absent_members() -> None:
    assert ToolCallStarted(tool_call_id="c1", name="search").to_wire() == {
        "toolCallId": "c1",
        "name": "search",
        "phase": "started",
    }
    assert ToolCallCompleted(tool_call_id="c1", name="s", result={"n": None}).to_wire() == {
        "toolCallId": "c1",
        "name": "s",
        "phase": "completed",
        "result": {"n": None},
    }
    assert ToolCallFailed(tool_call_id="c1", name="s", error="boom").to_wire()["error"] == "boom"


@given(s.frames)
def test_frames_round_trip_through_json(frame: Any) -> None:
    wire = json.loads(json.dumps(frame.to_wire()))
    assert frame_from_wire(wire) == frame
    # The required members are always there, never null; absent optional ones are omitted.
    assert wire["toolCallId"] is not None and wire["name"] is not None
    assert None not in wire.values()


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"name": "s", "phase": "started"}, "toolCallId: Field required"),
        ({"toolCallId": "", "name": "s", "phase": "started"}, "toolCallId"),
        ({"toolCallId": "c", "phase": "started"}, "name: Field required"),
        ({"toolCallId": "c", "name": "s", "phase": "running"}, "phase"),
        ({"toolCallId": "c", "name": "s"}, "phase"),
        ({"toolCallId": 7, "name": "s", "phase": "started"}, "toolCallId"),
        ({"toolCallId": "c", "name": "s", "phase": "failed", "error": {"x": 1}}, "error"),
        ({"toolCallId": "c", "name": "s", "phase": "started", "args": float("nan")}, "args"),
    ],
)
def test_invalid_frames_name_the_field_at_fault(payload: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolCallParseError) as info:
        frame_from_wire(payload)
    assert problem in str(info.value)


def test_unknown_frame_members_are_ignored_for_forward_compatibility() -> None:
    frame = frame_from_wire({"toolCallId": "c", "name": "s", "phase": "started", "startedAtMs": 5})
    assert frame.to_wire() == {"toolCallId": "c", "name": "s", "phase": "started"}


# --- emit ------------------------------------------------------------------------------------


def test_emit_builds_the_a2a_10_data_part() -> None:
    part = emit_tool_call(ToolCallStarted(tool_call_id="c1", name="search", args={"q": "x"}))
    assert json.loads(part.to_json()) == JS_V10_PART


def test_emit_accepts_and_validates_a_plain_dict() -> None:
    part = emit_tool_call({"toolCallId": "c1", "name": "search", "phase": "failed", "error": "x"})
    assert part.data == {"toolCallId": "c1", "name": "search", "phase": "failed", "error": "x"}
    with pytest.raises(ToolCallParseError, match="toolCallId"):
        emit_tool_call({"name": "search", "phase": "started"})


@given(s.frames)
def test_emit_then_parse_gives_the_frame_back(frame: Any) -> None:
    part = emit_tool_call(frame)
    assert parse_tool_call([part]) == frame
    assert parse_tool_call([json.loads(part.to_json())]) == frame
    assert parse_tool_call([v03.part_to_v03(part)]) == frame


# --- parse -----------------------------------------------------------------------------------


def test_parse_reads_the_js_sdk_10_and_03_shapes() -> None:
    started = parse_tool_call([JS_V10_PART])
    assert started == ToolCallStarted(tool_call_id="c1", name="search", args={"q": "x"})
    completed = parse_tool_call([{"kind": "text", "text": "hi"}, JS_V03_PART])
    assert completed == ToolCallCompleted(tool_call_id="c1", name="search", result=[1, 2])


def test_parse_reads_the_js_in_memory_content_form() -> None:
    part = {
        "content": {"$case": "data", "value": JS_V10_PART["data"]},
        "metadata": {"mimeType": TOOL_CALL_V1_MIME_TYPE},
        "filename": "",
        "mediaType": "application/json",
    }
    assert parse_tool_call([part]) == parse_tool_call([JS_V10_PART])


def test_parse_reads_the_uri_keyed_metadata_form_on_a_message() -> None:
    frame = {"toolCallId": "c9", "name": "fetch", "phase": "failed", "error": "timeout"}
    message = {
        "kind": "message",
        "role": "agent",
        "messageId": "m1",
        "parts": [{"kind": "text", "text": "running fetch"}],
        "metadata": {TOOL_CALL_V1_URI: frame},
    }
    expected = ToolCallFailed(tool_call_id="c9", name="fetch", error="timeout")
    assert parse_tool_call(message) == expected
    model = m.Message(
        message_id="m1",
        role=m.Role.AGENT,
        parts=[m.Part(text="x")],
        metadata={TOOL_CALL_V1_URI: frame},
    )
    assert parse_tool_call(model) == expected
    # ... and on a part, and a message's parts are scanned too.
    assert parse_tool_call([{"text": "x", "metadata": {TOOL_CALL_V1_URI: frame}}]) == expected
    assert parse_tool_call({"parts": [JS_V10_PART]}) == parse_tool_call([JS_V10_PART])


def test_parse_returns_the_first_valid_frame_and_skips_invalid_ones() -> None:
    bad = {**JS_V10_PART, "data": {"name": "search", "phase": "started"}}
    assert parse_tool_call([bad, JS_V03_PART, JS_V10_PART]) == parse_tool_call([JS_V03_PART])


MALFORMED: list[Any] = [
    None,
    42,
    "parts",
    b"parts",
    {"kind": "data"},
    [None, 1, "x", [], {}],
    [{"data": JS_V10_PART["data"]}],  # no MIME: not ours
    [{**JS_V10_PART, "metadata": {"mimeType": "application/json"}}],  # wrong MIME
    [{**JS_V10_PART, "metadata": "not-an-object"}],
    [{**JS_V10_PART, "data": "a string"}],
    [{**JS_V10_PART, "data": None}],
    [{**JS_V10_PART, "data": {"toolCallId": "c", "name": "s", "phase": "paused"}}],
    [{**JS_V10_PART, "data": {"toolCallId": ["c"], "name": "s", "phase": "started"}}],
    [{"metadata": {"mimeType": TOOL_CALL_V1_MIME_TYPE}, "text": "not data"}],
    [{"metadata": {TOOL_CALL_V1_URI: "not-a-frame"}}],
    {"metadata": {TOOL_CALL_V1_URI: 5}, "parts": 7},
    iter([JS_V10_PART["data"]]),
]


@pytest.mark.parametrize("value", MALFORMED, ids=range(len(MALFORMED)))
def test_lenient_parse_never_raises_on_malformed_input(value: Any) -> None:
    assert parse_tool_call(value) is None


def test_lenient_parse_survives_huge_and_deep_payloads() -> None:
    huge = {**JS_V10_PART, "data": {**JS_V10_PART["data"], "args": "x" * 20_000_000}}
    frame = parse_tool_call([huge])
    assert isinstance(frame, ToolCallStarted)
    assert len(frame.args) == 20_000_000  # type: ignore[arg-type]
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    too_deep = {**JS_V10_PART, "data": {**JS_V10_PART["data"], "args": deep}}
    assert parse_tool_call([too_deep]) is None
    many = [{"kind": "text", "text": "x"}] * 100_000 + [JS_V03_PART]
    assert parse_tool_call(many) == parse_tool_call([JS_V03_PART])


@given(
    st.recursive(
        s.json_scalars,
        lambda c: (
            st.lists(c, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "data",
                        "metadata",
                        "mimeType",
                        "kind",
                        "toolCallId",
                        "phase",
                        "name",
                        "parts",
                        TOOL_CALL_V1_URI,
                    ]
                ),
                c,
                max_size=4,
            )
        ),
    )
)
def test_lenient_parse_never_raises_on_arbitrary_json(value: Any) -> None:
    result = parse_tool_call(value)
    assert result is None or isinstance(
        result, ToolCallStarted | ToolCallCompleted | ToolCallFailed
    )


def test_strict_parse_names_the_offending_field() -> None:
    bad = {
        **JS_V10_PART,
        "data": {"toolCallId": "c", "name": "s", "phase": "started", "args": float("inf")},
    }
    with pytest.raises(ToolCallParseError) as info:
        parse_tool_call([{"kind": "text", "text": "x"}, bad], strict=True)
    assert info.value.where == "parts[1].data"
    assert "args" in str(info.value)
    with pytest.raises(ToolCallParseError, match=r"parts\[0\]\.data: toolCallId: Field required"):
        parse_tool_call([{**JS_V10_PART, "data": {"name": "s", "phase": "started"}}], strict=True)
    with pytest.raises(ToolCallParseError, match="expected a list of parts or a message"):
        parse_tool_call(42, strict=True)
    with pytest.raises(ToolCallParseError, match="must be a data part"):
        parse_tool_call(
            [{"metadata": {"mimeType": TOOL_CALL_V1_MIME_TYPE}, "text": "x"}], strict=True
        )
    # Parts that do not claim to be tool-call-v1 are not errors, even in strict mode.
    assert parse_tool_call([{"kind": "text", "text": "x"}], strict=True) is None


# --- ToolTimeline ----------------------------------------------------------------------------


def started(cid: str, name: str = "search", args: Any = None) -> ToolCallStarted:
    return ToolCallStarted(tool_call_id=cid, name=name, args=args)


def completed(cid: str, name: str = "search", result: Any = None) -> ToolCallCompleted:
    return ToolCallCompleted(tool_call_id=cid, name=name, result=result)


def failed(cid: str, name: str = "search", error: str | None = None) -> ToolCallFailed:
    return ToolCallFailed(tool_call_id=cid, name=name, error=error)


def test_timeline_stitches_frames_by_tool_call_id() -> None:
    timeline = ToolTimeline()
    timeline.feed(started("a", args={"q": 1}), at=10.0)
    timeline.feed(started("b", name="fetch"), at=10.5)
    assert [c.tool_call_id for c in timeline.pending] == ["a", "b"]
    timeline.feed(failed("b", name="fetch", error="404"), at=11.0)
    timeline.feed(completed("a", result=[1]), at=12.0)
    a, b = timeline["a"], timeline["b"]
    assert (a.state, a.args, a.result, a.duration) == (ToolState.COMPLETED, {"q": 1}, [1], 2.0)
    assert (b.state, b.error, b.duration, b.name) == (ToolState.FAILED, "404", 0.5, "fetch")
    assert (a.first_seen, a.last_seen, a.frames) == (10.0, 12.0, 2)
    assert [c.order for c in timeline] == [0, 1]
    assert len(timeline) == 2 and "a" in timeline and "zz" not in timeline
    assert timeline.completed == [a] and timeline.failed == [b] and not timeline.contradictions


def test_timeline_accepts_wire_dicts_and_no_timestamps() -> None:
    timeline = ToolTimeline([JS_V10_PART["data"], JS_V03_PART["data"]])
    call = timeline["c1"]
    assert call.state is ToolState.COMPLETED and call.args == {"q": "x"} and call.result == [1, 2]
    assert call.duration is None and call.first_seen is None


def test_timeline_tolerates_outcome_before_start_and_duplicates() -> None:
    timeline = ToolTimeline()
    timeline.feed(completed("a", result="ok"), at=5.0)
    assert timeline["a"].is_finished and not timeline["a"].has_started
    timeline.feed(started("a", args=[1]), at=4.0)
    timeline.feed(started("a", args=[1]), at=6.0)
    timeline.feed(completed("a", result="ok"), at=7.0)
    call = timeline["a"]
    assert (call.state, call.args, call.result, call.duration) == (
        ToolState.COMPLETED,
        [1],
        "ok",
        1.0,
    )
    assert call.frames == 4 and not timeline.contradictions


def test_timeline_flags_contradictions_instead_of_crashing() -> None:
    timeline = ToolTimeline()
    timeline.feed(started("a", args=1))
    timeline.feed(completed("a", result=1))
    timeline.feed(failed("a", error="late failure"))
    timeline.feed(completed("a", result=2))
    timeline.feed(started("a", args=2))
    timeline.feed(started("a", name="other"))
    call = timeline["a"]
    assert (call.state, call.result, call.args) == (ToolState.COMPLETED, 1, 1)
    assert [c.detail for c in call.contradictions] == [
        "two different outcomes",
        "the outcome was repeated with a different payload",
        "a second start with other args",
        "frames name different tools",
        "a second start with other args",
    ]
    assert timeline.contradictions == call.contradictions


@pytest.mark.parametrize(
    ("error", "cancelled"),
    [
        (CANCELLED_ERROR, True),
        ("cancelled: time budget of 300 s exceeded", True),
        ("cancelled: ", True),
        (None, False),
        ("", False),
        ("Cancelled", False),
        ("cancelled by the user", False),
        ("cancelledError: x", False),
        ("asyncio.CancelledError: cancelled", False),
    ],
)
def test_the_cancelled_rule(error: str | None, cancelled: bool) -> None:
    assert is_cancelled_error(error) is cancelled


def test_calls_stopped_with_their_task_are_cancelled_not_failed() -> None:
    timeline = ToolTimeline()
    for cid in "abcd":
        timeline.feed(started(cid))
    timeline.feed(failed("a", error="cancelled"))
    timeline.feed(failed("b", error="cancelled: shutdown"))
    timeline.feed(failed("c", error="ValueError: bad input"))
    timeline.feed(completed("d", result="cancelled"))  # a result, not an error
    assert [c.tool_call_id for c in timeline.cancelled] == ["a", "b"]
    assert [c.tool_call_id for c in timeline.failed] == ["a", "b", "c"]
    assert [c.is_cancelled for c in timeline] == [True, True, False, False]


def test_timeline_rejects_invalid_frames_with_a_precise_error() -> None:
    with pytest.raises(ToolCallParseError, match="phase"):
        ToolTimeline().feed({"toolCallId": "a", "name": "s", "phase": "done"})


@st.composite
def lifecycles(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """Calls with one start and one outcome each, delivered shuffled and with duplicates."""
    count = draw(st.integers(min_value=1, max_value=6))
    outcomes: dict[str, Any] = {}
    sent: list[Any] = []
    for i in range(count):
        cid = f"call-{i}"
        outcome = draw(st.sampled_from([completed(cid, result=i), failed(cid, error=str(i))]))
        outcomes[cid] = outcome
        sent += [started(cid, args={"i": i}), outcome]
    sent += draw(st.lists(st.sampled_from(sent), max_size=5))  # duplicates
    return outcomes, draw(st.permutations(sent))


@given(lifecycles())
def test_timeline_outcome_is_independent_of_arrival_order(case: Any) -> None:
    outcomes, sent = case
    timeline = ToolTimeline()
    for t, frame in enumerate(sent):
        timeline.feed(frame, at=float(t))
    assert not timeline.contradictions
    assert not timeline.pending
    for cid, outcome in outcomes.items():
        call = timeline[cid]
        assert call.state.value == outcome.phase
        assert call.has_started and call.args == {"i": int(cid.split("-")[1])}
        if isinstance(outcome, ToolCallCompleted):
            assert call.result == outcome.result
        else:
            assert call.error == outcome.error
        assert call.first_seen is not None and call.last_seen is not None
        assert call.first_seen <= call.last_seen


def test_public_names_are_exported() -> None:
    for name in contract.__all__:
        assert hasattr(contract, name)
