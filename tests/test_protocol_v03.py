"""Translation between the 1.0 models and the 0.3 JSON dialect."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from pydantic import ValidationError

from a2a_toolcall.contract import emit_tool_call
from a2a_toolcall.protocol import models as m
from a2a_toolcall.protocol import v03
from tests import strategies as s


def lossless(value: m.WireModel) -> dict[str, Any]:
    """The 1.0 JSON less what 0.3 cannot carry (media type and filename of text/data parts)."""

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

    return strip(value.to_wire())  # type: ignore[no-any-return]


@given(s.stream_responses)
def test_stream_results_round_trip_through_v03(value: m.StreamResponse) -> None:
    back = v03.result_from_v03(v03.stream_response_to_v03(value))
    assert lossless(back) == lossless(value)


@given(s.send_message_responses)
def test_send_results_round_trip_through_v03(value: m.SendMessageResponse) -> None:
    back = v03.result_from_v03(v03.send_message_response_to_v03(value))
    expected = lossless(value)
    assert lossless(back) == expected


@given(s.messages)
def test_messages_round_trip(value: m.Message) -> None:
    assert lossless(v03.message_from_v03(v03.message_to_v03(value))) == lossless(value)


@given(s.artifacts)
def test_artifacts_round_trip(value: m.Artifact) -> None:
    assert lossless(v03.artifact_from_v03(v03.artifact_to_v03(value))) == lossless(value)


@given(s.tasks)
def test_tasks_round_trip(value: m.Task) -> None:
    back = v03.task_from_v03(v03.task_to_v03(value))
    assert lossless(back) == lossless(value)
    assert v03.status_from_v03(v03.status_to_v03(value.status)).state == value.status.state


@given(s.send_message_requests)
def test_send_params_round_trip(value: m.SendMessageRequest) -> None:
    back = m.SendMessageRequest.from_wire(
        v03.params_from_v03("message/send", v03.params_to_v03("SendMessage", value))
    )
    expected = lossless(value)
    expected.pop("tenant", None)  # 0.3 has no tenant
    config = expected.get("configuration")
    if config is not None:
        # 0.3 `blocking` is always written; `returnImmediately` comes back explicit.
        config["returnImmediately"] = bool(config.get("returnImmediately"))
        push = config.get("taskPushNotificationConfig")
        if push is not None:
            push.pop("tenant", None)
            push.pop("taskId", None)
    assert lossless(back) == expected


def test_states_and_methods() -> None:
    assert v03.state_to_v03(m.TaskState.INPUT_REQUIRED) == "input-required"
    assert v03.state_from_v03("auth-required") is m.TaskState.AUTH_REQUIRED
    assert {v03.state_from_v03(v03.state_to_v03(st)) for st in m.TaskState} == set(m.TaskState)
    with pytest.raises(v03.V03TranslationError, match="unknown task state 'WORKING'"):
        v03.state_from_v03("WORKING")
    assert v03.METHODS_FROM_V03["message/stream"] == "SendStreamingMessage"
    assert v03.METHODS_TO_V03["SubscribeToTask"] == "tasks/resubscribe"
    assert "ListTasks" not in v03.METHODS_TO_V03  # 0.3 has no tasks/list


def test_tool_call_part_in_v03() -> None:
    part = emit_tool_call({"toolCallId": "c1", "name": "s", "phase": "started", "args": [1]})
    assert v03.part_to_v03(part) == {
        "kind": "data",
        "data": {"toolCallId": "c1", "name": "s", "phase": "started", "args": [1]},
        "metadata": {"mimeType": "application/vnd.protolabs.tool-call-v1+json"},
    }


def test_non_object_data_is_wrapped_for_v03() -> None:
    wrapped = v03.part_to_v03(m.Part(data=[1, 2]))
    assert wrapped == {
        "kind": "data",
        "data": {"value": [1, 2]},
        "metadata": {"data_part_compat": True},
    }
    assert v03.part_from_v03(wrapped) == m.Part(data=[1, 2])
    with pytest.raises(v03.V03TranslationError, match="holds a JSON object"):
        v03.part_from_v03({"kind": "data", "data": [1]})


def test_status_update_final_flag() -> None:
    def update(state: m.TaskState) -> m.StreamResponse:
        return m.StreamResponse(
            status_update=m.TaskStatusUpdateEvent(
                task_id="t", context_id="c", status=m.TaskStatus(state=state)
            )
        )

    assert v03.stream_response_to_v03(update(m.TaskState.WORKING))["final"] is False
    assert v03.stream_response_to_v03(update(m.TaskState.COMPLETED))["final"] is True
    interrupted = v03.stream_response_to_v03(update(m.TaskState.INPUT_REQUIRED), final=True)
    assert interrupted == {
        "kind": "status-update",
        "taskId": "t",
        "contextId": "c",
        "status": {"state": "input-required"},
        "final": True,
    }


def test_v03_send_params_from_a_real_client_shape() -> None:
    params = {
        "message": {
            "kind": "message",
            "messageId": "m1",
            "role": "user",
            "parts": [
                {"kind": "text", "text": "hi"},
                {
                    "kind": "file",
                    "file": {
                        "uri": "https://x.example/a.png",
                        "mimeType": "image/png",
                        "name": "a.png",
                    },
                },
                {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain"}},
            ],
        },
        "configuration": {
            "blocking": True,
            "historyLength": 0,
            "acceptedOutputModes": ["text/plain"],
        },
        "metadata": {"trace": "abc"},
    }
    req = m.SendMessageRequest.from_wire(v03.params_from_v03("message/send", params))
    assert req.message.role is m.Role.USER
    assert [p.kind for p in req.message.parts] == ["text", "url", "raw"]
    assert req.message.parts[1].media_type == "image/png"
    assert req.message.parts[1].filename == "a.png"
    assert req.message.parts[2].raw_bytes == b"hi"
    assert req.configuration is not None
    assert req.configuration.return_immediately is False
    assert req.configuration.history_length is None  # 0.3: 0 means no limit
    assert req.metadata == {"trace": "abc"}
    assert v03.params_from_v03("tasks/get", {"id": "t", "historyLength": 3}) == {
        "id": "t",
        "historyLength": 3,
    }
    assert v03.params_from_v03("tasks/cancel", {"id": "t", "metadata": {"a": 1}}) == {
        "id": "t",
        "metadata": {"a": 1},
    }
    assert v03.params_from_v03("tasks/resubscribe", {"id": "t", "metadata": {}}) == {"id": "t"}
    assert v03.params_from_v03(
        "tasks/pushNotificationConfig/set",
        {
            "taskId": "t",
            "pushNotificationConfig": {
                "url": "https://hook.example",
                "authentication": {"schemes": ["Bearer"]},
            },
        },
    ) == {"taskId": "t", "url": "https://hook.example", "authentication": {"scheme": "Bearer"}}


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"messageId": "m", "role": "robot", "parts": []}, "message.role"),
        ({"messageId": "m", "role": "user", "parts": "x"}, "message.parts: expected an array"),
        ({"messageId": "m", "role": "user", "parts": [{"kind": "video"}]}, "message.parts[0].kind"),
        (
            {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {}}]},
            "message.parts[0].file",
        ),
        ({"messageId": "m", "role": "user", "parts": [5]}, "message.parts[0]: expected an object"),
        ("not a message", "message: expected an object"),
    ],
)
def test_v03_input_errors_name_the_member(message: Any, error: str) -> None:
    with pytest.raises(v03.V03TranslationError, match=error.replace("[", r"\[")):
        v03.params_from_v03("message/send", {"message": message})


def test_missing_members_surface_as_validation_errors() -> None:
    with pytest.raises(ValidationError, match="messageId"):
        m.SendMessageRequest.from_wire(
            v03.params_from_v03("message/send", {"message": {"role": "user", "parts": []}})
        )


def test_parts_without_kind_are_inferred() -> None:
    assert v03.part_from_v03({"text": "x"}) == m.Part(text="x")
    assert v03.part_from_v03({"file": {"uri": "u"}}) == m.Part(url="u")
    assert v03.part_from_v03({"data": {"a": 1}}) == m.Part(data={"a": 1})


def test_unknown_result_kind() -> None:
    with pytest.raises(v03.V03TranslationError, match="unknown result kind"):
        v03.result_from_v03({"kind": "mystery"})


def test_params_to_v03_rejects_methods_without_an_equivalent() -> None:
    with pytest.raises(ValueError, match=r"no 0\.3 equivalent"):
        v03.params_to_v03("ListTasks", m.ListTasksRequest())
    assert v03.params_to_v03("GetTask", m.GetTaskRequest(id="t", history_length=2)) == {
        "id": "t",
        "historyLength": 2,
    }
    assert v03.params_to_v03("CancelTask", m.CancelTaskRequest(id="t")) == {"id": "t"}
    assert v03.params_to_v03("SubscribeToTask", m.SubscribeToTaskRequest(id="t")) == {"id": "t"}


@given(s.agent_cards(with_legacy=True))
def test_cards_round_trip_through_v03(card: m.AgentCard) -> None:
    back = v03.card_from_v03(v03.card_to_v03(card))
    legacy = [i for i in card.supported_interfaces if v03.is_legacy_version(i.protocol_version)]
    assert [i.url for i in back.supported_interfaces] == [i.url for i in legacy]
    assert back.skills == card.skills
    assert back.capabilities.streaming == card.capabilities.streaming
    assert back.capabilities.extended_agent_card == card.capabilities.extended_agent_card
    assert back.security_requirements == card.security_requirements
    if card.security_schemes:
        assert back.security_schemes is not None
        assert set(back.security_schemes) == set(card.security_schemes)


def test_card_without_a_v03_interface() -> None:
    card = m.AgentCard(
        name="a",
        description="d",
        version="1",
        supported_interfaces=[
            m.AgentInterface(
                url="https://x.example/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=m.AgentCapabilities(streaming=True),
    )
    with pytest.raises(ValueError, match=r"no interface with a 0\.3 protocolVersion"):
        v03.card_to_v03(card)
    assert v03.dual_card(card) == card.to_wire()


def test_is_legacy_version() -> None:
    assert [v03.is_legacy_version(v) for v in ("0.3", "0.3.0", "0.9", "1.0", "0.2", "x", None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
