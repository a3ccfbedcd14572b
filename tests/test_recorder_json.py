"""The recorder's tool-frame events, put together from the frame's JSON, equal the models'."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from a2a_toolcall.contract import TOOL_CALL_ARTIFACT_NAME, TOOL_CALL_V1_URI, emit_tool_call
from a2a_toolcall.protocol.models import Artifact, StreamResponse, TaskArtifactUpdateEvent
from a2a_toolcall.recorder import frame_event_json, frame_event_prefix
from a2a_toolcall.runtime.events import Frame
from a2a_toolcall.store import LoggedEvent
from tests import strategies as s


def by_the_models(task_id: str, context_id: str, artifact_id: str, frame: Frame) -> bytes:
    artifact = Artifact(
        artifact_id=artifact_id,
        name=TOOL_CALL_ARTIFACT_NAME,
        parts=[emit_tool_call(frame)],
        extensions=[TOOL_CALL_V1_URI],
    )
    update = TaskArtifactUpdateEvent(
        task_id=task_id, context_id=context_id, artifact=artifact, append=False, last_chunk=False
    )
    return StreamResponse(artifact_update=update).to_json()


@given(
    frame=s.frames,
    task_id=st.text(min_size=1, max_size=40),
    context_id=st.text(max_size=40),
    artifact_id=st.from_regex(r"\A[0-9a-f]{32}\Z"),
)
def test_a_frame_event_is_byte_for_byte_the_models(
    frame: Frame, task_id: str, context_id: str, artifact_id: str
) -> None:
    made = frame_event_json(frame_event_prefix(task_id, context_id), artifact_id, frame)
    assert made == by_the_models(task_id, context_id, artifact_id, frame)


@given(frame=s.frames)
def test_an_event_made_from_json_reads_back_as_its_model(frame: Frame) -> None:
    made = frame_event_json(frame_event_prefix("t", "c"), "ab12", frame)
    event = LoggedEvent.from_artifact_json(7, made, None)  # type: ignore[arg-type]
    assert event.state is None and not event.ends_stream
    assert event.response == StreamResponse.from_json(by_the_models("t", "c", "ab12", frame))
    assert event.json is made
