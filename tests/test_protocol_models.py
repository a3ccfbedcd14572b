"""A2A 1.0 wire models: exact serialisation, tolerant parsing, round trips."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from pydantic import ValidationError

from a2a_toolcall.protocol import models as m
from tests import strategies as s

ROUND_TRIPS: list[tuple[type[m.WireModel], Any]] = [
    (m.Part, s.parts()),
    (m.Message, s.messages),
    (m.Artifact, s.artifacts),
    (m.TaskStatus, s.task_statuses),
    (m.Task, s.tasks),
    (m.TaskStatusUpdateEvent, s.status_updates),
    (m.TaskArtifactUpdateEvent, s.artifact_updates),
    (m.StreamResponse, s.stream_responses),
    (m.SendMessageResponse, s.send_message_responses),
    (m.SendMessageRequest, s.send_message_requests),
    (m.GetTaskRequest, s.get_task_requests),
    (m.ListTasksRequest, s.list_tasks_requests),
    (m.ListTasksResponse, s.list_tasks_responses),
    (m.CancelTaskRequest, s.cancel_task_requests),
    (m.SubscribeToTaskRequest, s.subscribe_requests),
    (m.TaskPushNotificationConfig, s.push_configs),
    (m.SecurityScheme, s.security_schemes),
    (m.AgentCard, s.agent_cards()),
]


@pytest.mark.parametrize(
    ("model_cls", "strategy"), ROUND_TRIPS, ids=[r[0].__name__ for r in ROUND_TRIPS]
)
def test_every_wire_model_round_trips(model_cls: type[m.WireModel], strategy: Any) -> None:
    @given(strategy)
    def check(value: m.WireModel) -> None:
        text = value.to_json()
        assert b"\n" not in text  # one SSE data line per event
        assert model_cls.from_json(text) == value
        wire = value.to_wire()
        assert json.loads(text) == wire
        assert model_cls.from_wire(wire) == value
        assert not _has_null_member(wire)

    check()


def _has_null_member(wire: Any) -> bool:
    """True if a member of the model itself (not free-form JSON such as data) is null."""
    if isinstance(wire, dict):
        return any(
            v is None or _has_null_member(v)
            for k, v in wire.items()
            if k not in ("data", "metadata", "params", "header")
        )
    if isinstance(wire, list):
        return any(_has_null_member(v) for v in wire)
    return False


def test_status_update_serialises_exactly() -> None:
    event = m.TaskStatusUpdateEvent(
        task_id="t1",
        context_id="c1",
        status=m.TaskStatus(
            state=m.TaskState.WORKING,
            message=m.Message(message_id="m1", role=m.Role.AGENT, parts=[m.Part(text="thinking")]),
            timestamp="2026-12-02T10:00:00.000Z",
        ),
        metadata={"step": 1},
    )
    assert event.to_json() == (
        b'{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING",'
        b'"message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"thinking"}]},'
        b'"timestamp":"2026-12-02T10:00:00.000Z"},"metadata":{"step":1}}'
    )


def test_artifact_update_keeps_explicit_false_flags() -> None:
    event = m.TaskArtifactUpdateEvent(
        task_id="t",
        context_id="c",
        artifact=m.Artifact(artifact_id="a", name="tool-call", parts=[m.Part(data={"k": 1})]),
        append=False,
        last_chunk=False,
    )
    assert event.to_wire() == {
        "taskId": "t",
        "contextId": "c",
        "artifact": {"artifactId": "a", "name": "tool-call", "parts": [{"data": {"k": 1}}]},
        "append": False,
        "lastChunk": False,
    }


def test_parsing_is_tolerant_like_proto3_json() -> None:
    message = m.Message.from_wire(
        {
            "message_id": "m1",  # proto field names are accepted too
            "role": 1,  # so are enum numbers
            "parts": [{"text": "hi", "futureMember": True}],
            "someFutureField": {"x": 1},
        }
    )
    assert message.role is m.Role.USER
    assert message.to_wire() == {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    status = m.TaskStatus.from_wire({"state": 6})
    assert status.state is m.TaskState.INPUT_REQUIRED
    # Repeated members the spec requires may be absent: proto3 JSON omits empty arrays.
    assert m.Message.from_wire({"messageId": "m", "role": "ROLE_AGENT"}).parts == []
    assert m.ListTasksResponse.from_wire({}).to_wire() == {
        "tasks": [],
        "nextPageToken": "",
        "pageSize": 0,
        "totalSize": 0,
    }


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "exactly one of text, raw, url, data (found: none)"),
        ({"text": "a", "url": "https://x"}, "found: text, url"),
        ({"text": "a", "data": None}, "found: text, data"),
        ({"raw": "%%%"}, "base64"),
        ({"data": float("nan")}, "finite"),
    ],
)
def test_part_content_is_validated(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        m.Part.model_validate(payload)


def test_part_data_null_is_kept_distinct_from_absent() -> None:
    part = m.Part.from_wire({"data": None})
    assert part.kind == "data"
    assert part.to_json() == b'{"data":null}'
    assert m.Part(text="x").to_wire() == {"text": "x"}


def test_part_raw_accepts_bytes_and_url_safe_base64() -> None:
    part = m.Part(raw=b"\xfb\xff")
    assert part.raw == "+/8=" and part.raw_bytes == b"\xfb\xff" and part.kind == "raw"
    assert m.Part(raw="-_8").raw_bytes == b"\xfb\xff"
    assert m.Part(text="x").raw_bytes is None


def test_stream_response_holds_exactly_one_payload() -> None:
    with pytest.raises(ValidationError, match="found: none"):
        m.StreamResponse()
    task = m.Task(id="t", status=m.TaskStatus(state=m.TaskState.SUBMITTED))
    message = m.Message(message_id="m", role=m.Role.USER)
    with pytest.raises(ValidationError, match="found: task, message"):
        m.StreamResponse(task=task, message=message)
    with pytest.raises(ValidationError, match="a SendMessageResponse holds exactly one"):
        m.SendMessageResponse()


def test_one_of_rules_for_security_schemes_and_flows() -> None:
    with pytest.raises(ValidationError, match="a SecurityScheme holds exactly one"):
        m.SecurityScheme()
    with pytest.raises(ValidationError, match="OAuthFlows holds exactly one"):
        m.OAuthFlows()


def test_string_list_uses_the_proto_member_name() -> None:
    req = m.SecurityRequirement(schemes={"oauth": m.StringList(values=["read"])})
    assert req.to_wire() == {"schemes": {"oauth": {"list": ["read"]}}}
    assert m.SecurityRequirement.from_wire(req.to_wire()) == req


def test_task_state_properties() -> None:
    terminal = {s for s in m.TaskState if s.is_terminal}
    assert terminal == {
        m.TaskState.COMPLETED,
        m.TaskState.FAILED,
        m.TaskState.CANCELED,
        m.TaskState.REJECTED,
    }
    interrupted = {s for s in m.TaskState if s.is_interrupted}
    assert interrupted == {m.TaskState.INPUT_REQUIRED, m.TaskState.AUTH_REQUIRED}
    with pytest.raises(ValueError, match="working"):
        m.TaskState("working")
    with pytest.raises(ValueError, match="99"):
        m.TaskState(99)


def test_timestamps() -> None:
    moment = datetime(2026, 12, 2, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert m.format_timestamp(moment) == "2026-12-02T08:00:00.123Z"
    # Four-digit years below 1000 too, and whole seconds keep their ".000".
    early = datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert m.format_timestamp(early) == "0999-12-31T23:59:59.000Z"
    assert m.parse_timestamp(m.format_timestamp(early)) == early
    status = m.TaskStatus(state=m.TaskState.WORKING, timestamp=moment)
    assert status.timestamp == "2026-12-02T08:00:00.123Z"
    assert m.parse_timestamp("2026-12-02T08:00:00.123456789Z") == datetime(
        2026, 12, 2, 8, 0, 0, 123456, tzinfo=UTC
    )
    assert m.parse_timestamp("2026-12-02T10:00:00+02:00") == datetime(2026, 12, 2, 8, tzinfo=UTC)
    with pytest.raises(ValueError, match="timezone-aware"):
        m.format_timestamp(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="RFC 3339"):
        m.parse_timestamp("yesterday")
    with pytest.raises(ValidationError, match="RFC 3339"):
        m.TaskStatus(state=m.TaskState.WORKING, timestamp="2026-12-02 10:00")


@given(s.timestamps())
def test_generated_timestamps_parse(text: str) -> None:
    assert m.parse_timestamp(text).tzinfo is not None


def test_models_are_frozen_values() -> None:
    part = m.Part(text="x")
    with pytest.raises(ValidationError):
        part.text = "y"  # type: ignore[misc]
    assert part == m.Part(text="x")
