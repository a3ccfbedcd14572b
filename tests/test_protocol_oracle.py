"""The official a2a-sdk as an oracle for our wire models and the 0.3 translation.

1.0: every JSON our models write parses into the SDK's protobuf types with unknown fields
disallowed, and what the SDK writes for that value parses back into our models with the same
meaning (checked by comparing protobuf messages, so ``1`` vs ``1.0`` and other proto3-JSON
spellings of one value do not matter).

0.3: our 0.3 JSON validates against the SDK's 0.3 pydantic types without any member being
dropped as unknown, and the SDK's own 0.3 -> 1.0 conversion of it gives the same protobuf as
our 1.0 JSON; and the SDK's 1.0 -> 0.3 conversion reads back through our translator.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.compat.v0_3 import conversions as sdk03
from a2a.compat.v0_3 import types as t03
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict, Parse
from google.protobuf.message import Message as ProtoMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_toolcall import contract
from a2a_toolcall.protocol import models as m
from a2a_toolcall.protocol import v03
from tests import strategies as s

PAIRS: list[tuple[type[m.WireModel], type[ProtoMessage], st.SearchStrategy[Any]]] = [
    (m.Part, pb.Part, s.parts()),
    (m.Message, pb.Message, s.messages),
    (m.Artifact, pb.Artifact, s.artifacts),
    (m.TaskStatus, pb.TaskStatus, s.task_statuses),
    (m.Task, pb.Task, s.tasks),
    (m.TaskStatusUpdateEvent, pb.TaskStatusUpdateEvent, s.status_updates),
    (m.TaskArtifactUpdateEvent, pb.TaskArtifactUpdateEvent, s.artifact_updates),
    (m.StreamResponse, pb.StreamResponse, s.stream_responses),
    (m.SendMessageResponse, pb.SendMessageResponse, s.send_message_responses),
    (m.SendMessageRequest, pb.SendMessageRequest, s.send_message_requests),
    (m.GetTaskRequest, pb.GetTaskRequest, s.get_task_requests),
    (m.ListTasksRequest, pb.ListTasksRequest, s.list_tasks_requests),
    (m.ListTasksResponse, pb.ListTasksResponse, s.list_tasks_responses),
    (m.CancelTaskRequest, pb.CancelTaskRequest, s.cancel_task_requests),
    (m.SubscribeToTaskRequest, pb.SubscribeToTaskRequest, s.subscribe_requests),
    (m.TaskPushNotificationConfig, pb.TaskPushNotificationConfig, s.push_configs),
    (m.SecurityScheme, pb.SecurityScheme, s.security_schemes),
    (m.AgentSkill, pb.AgentSkill, s.skills),
    (m.AgentCard, pb.AgentCard, s.agent_cards()),
]

ORACLE = settings()  # examples per test: the active profile (tests/conftest.py)


def strict_proto(model: m.WireModel, proto_cls: type[ProtoMessage]) -> ProtoMessage:
    """Parse our JSON with the SDK's protobuf parser, unknown fields disallowed."""
    return Parse(model.to_json().decode(), proto_cls(), ignore_unknown_fields=False)


@pytest.mark.parametrize(
    ("model_cls", "proto_cls", "strategy"), PAIRS, ids=[p[0].__name__ for p in PAIRS]
)
def test_our_json_parses_strictly_into_sdk_protobuf_and_back(
    model_cls: type[m.WireModel], proto_cls: type[ProtoMessage], strategy: Any
) -> None:
    @ORACLE
    @given(strategy)
    def check(value: m.WireModel) -> None:
        proto = strict_proto(value, proto_cls)
        # What the SDK writes for the same value reads back into our model unchanged in meaning.
        sdk_json = MessageToDict(proto, preserving_proto_field_name=False)
        ours = model_cls.from_wire(sdk_json)
        assert strict_proto(ours, proto_cls) == proto

    check()


def test_tool_call_part_is_a_valid_sdk_part_with_data_and_mime_metadata() -> None:
    part = contract.emit_tool_call(
        {"toolCallId": "c1", "name": "search", "phase": "started", "args": {"q": "django"}}
    )
    proto = strict_proto(part, pb.Part)
    assert proto.WhichOneof("content") == "data"
    assert MessageToDict(proto.data) == {
        "toolCallId": "c1",
        "name": "search",
        "phase": "started",
        "args": {"q": "django"},
    }
    assert proto.metadata["mimeType"] == contract.TOOL_CALL_V1_MIME_TYPE
    assert proto.media_type == "application/json"


@ORACLE
@given(s.frames)
def test_every_frame_part_survives_the_sdk_both_ways(frame: Any) -> None:
    proto = strict_proto(contract.emit_tool_call(frame), pb.Part)
    assert contract.parse_tool_call([MessageToDict(proto)]) == _normalised(frame)
    compat = sdk03.to_compat_part(proto).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert contract.parse_tool_call([compat]) == _normalised(frame)


def _normalised(frame: Any) -> Any:
    # Through a protobuf Value every number is a double: compare frames as JSON meaning.
    return contract.frame_from_wire(json.loads(json.dumps(frame.to_wire())))


# --- 0.3 -------------------------------------------------------------------------------------


def assert_nothing_dropped(ours: Any, sdk_dump: Any, path: str = "$") -> None:
    """Every member we wrote is still there after the SDK's 0.3 model parsed it."""
    if isinstance(ours, dict):
        assert isinstance(sdk_dump, dict), path
        for key, value in ours.items():
            assert key in sdk_dump, f"{path}.{key} dropped by the SDK's 0.3 model (unknown member)"
            assert_nothing_dropped(value, sdk_dump[key], f"{path}.{key}")
    elif isinstance(ours, list):
        assert isinstance(sdk_dump, list) and len(ours) == len(sdk_dump), path
        for i, (a, b) in enumerate(zip(ours, sdk_dump, strict=True)):
            assert_nothing_dropped(a, b, f"{path}[{i}]")
    else:
        assert ours == sdk_dump, path


def v03_projection(value: m.WireModel, proto_cls: type[ProtoMessage]) -> ProtoMessage:
    """``value`` as protobuf, less what 0.3 cannot carry: a text or data part's media type and
    filename (0.3 has them only on file parts)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            if "text" in node or "data" in node:
                node.pop("mediaType", None)
                node.pop("filename", None)
            for key, child in node.items():
                if key not in ("data", "metadata"):
                    strip(child)
        elif isinstance(node, list):
            for child in node:
                strip(child)
        return node

    return Parse(json.dumps(strip(value.to_wire())), proto_cls())


V03_PAIRS: list[tuple[str, Any, Any, Any, Any, type[ProtoMessage]]] = [
    ("part", s.parts(), v03.part_to_v03, t03.Part, sdk03.to_core_part, pb.Part),
    ("message", s.messages, v03.message_to_v03, t03.Message, sdk03.to_core_message, pb.Message),
    (
        "artifact",
        s.artifacts,
        v03.artifact_to_v03,
        t03.Artifact,
        sdk03.to_core_artifact,
        pb.Artifact,
    ),
    (
        "status",
        s.task_statuses,
        v03.status_to_v03,
        t03.TaskStatus,
        sdk03.to_core_task_status,
        pb.TaskStatus,
    ),
    ("task", s.tasks, v03.task_to_v03, t03.Task, sdk03.to_core_task, pb.Task),
]


@pytest.mark.parametrize(
    ("name", "strategy", "ours_to_v03", "sdk_model", "sdk_to_core", "proto_cls"),
    V03_PAIRS,
    ids=[p[0] for p in V03_PAIRS],
)
def test_our_v03_json_matches_the_sdk_compat_layer(
    name: str,
    strategy: Any,
    ours_to_v03: Any,
    sdk_model: Any,
    sdk_to_core: Any,
    proto_cls: type[ProtoMessage],
) -> None:
    @ORACLE
    @given(strategy)
    def check(value: m.WireModel) -> None:
        ours = ours_to_v03(value)
        parsed = sdk_model.model_validate(ours)
        assert_nothing_dropped(
            ours, parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        assert sdk_to_core(parsed) == v03_projection(value, proto_cls)

    check()


@ORACLE
@given(s.stream_responses)
def test_stream_results_in_v03_match_the_sdk(value: m.StreamResponse) -> None:
    ours = v03.stream_response_to_v03(value)
    parsed = t03.SendStreamingMessageSuccessResponse.model_validate(
        {"jsonrpc": "2.0", "id": 1, "result": ours}
    )
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)["result"]
    assert_nothing_dropped(ours, dumped)
    assert sdk03.to_core_stream_response(parsed) == v03_projection(value, pb.StreamResponse)
    # The SDK's 1.0 -> 0.3 conversion of the same value reads back through our translator.
    sdk_v03 = sdk03.to_compat_stream_response(strict_proto(value, pb.StreamResponse), 1)
    back = v03.result_from_v03(
        sdk_v03.model_dump(mode="json", by_alias=True, exclude_none=True)["result"]
    )
    assert strict_proto(back, pb.StreamResponse) == v03_projection(value, pb.StreamResponse)
    if value.status_update is not None:
        assert ours["final"] == value.status_update.status.state.is_terminal
        assert ours["final"] == dumped["final"]


@ORACLE
@given(s.send_message_requests)
def test_v03_send_params_translate_like_the_sdk(value: m.SendMessageRequest) -> None:
    # The SDK's 1.0 -> 0.3 request conversion, then our 0.3 -> 1.0 params translation.
    sdk_req = sdk03.to_compat_send_message_request(strict_proto(value, pb.SendMessageRequest), 1)
    params = sdk_req.params.model_dump(mode="json", by_alias=True, exclude_none=True)
    ours = m.SendMessageRequest.from_wire(v03.params_from_v03("message/send", params))
    assert strict_proto(ours, pb.SendMessageRequest) == sdk03.to_core_send_message_request(sdk_req)
    # And ours in the other direction validates in the SDK's 0.3 request type.
    mine = v03.params_to_v03("SendMessage", value)
    parsed = t03.MessageSendParams.model_validate(mine)
    assert_nothing_dropped(mine, parsed.model_dump(mode="json", by_alias=True, exclude_none=True))


@ORACLE
@given(s.agent_cards(with_legacy=True))
def test_v03_card_matches_the_sdk(card: m.AgentCard) -> None:
    ours = v03.card_to_v03(card)
    parsed = t03.AgentCard.model_validate(ours)
    assert_nothing_dropped(ours, parsed.model_dump(mode="json", by_alias=True, exclude_none=True))
    sdk = sdk03.to_compat_agent_card(strict_proto(card, pb.AgentCard)).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    # The SDK always writes an extension's `required`; we omit it when the card does.
    for ext in sdk.get("capabilities", {}).get("extensions", []):
        if ext.get("required") is False:
            ext.pop("required")
    for ext in ours.get("capabilities", {}).get("extensions", []):
        if ext.get("required") is False:
            ext.pop("required")
    assert drop_empty_strings(ours) == drop_empty_strings(sdk)


def drop_empty_strings(node: Any) -> Any:
    """proto3 has no presence for plain strings: ``""`` and absent mean the same."""
    if isinstance(node, dict):
        return {
            k: v if k in ("params", "header") else drop_empty_strings(v)
            for k, v in node.items()
            if v != ""
        }
    if isinstance(node, list):
        return [drop_empty_strings(v) for v in node]
    return node


@ORACLE
@given(s.agent_cards(with_legacy=True))
def test_dual_card_is_a_valid_card_in_both_dialects(card: m.AgentCard) -> None:
    dual = v03.dual_card(card)
    assert Parse(json.dumps(dual), pb.AgentCard(), ignore_unknown_fields=True) == strict_proto(
        card, pb.AgentCard
    )
    legacy = t03.AgentCard.model_validate(dual)
    assert legacy.url == v03.card_to_v03(card)["url"]
    assert m.AgentCard.from_wire(dual) == card
