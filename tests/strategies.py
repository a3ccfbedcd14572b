"""Hypothesis strategies for tool-call-v1 frames and every A2A 1.0 wire model.

They generate values that are valid on the wire in the proto3-JSON sense: required strings
and required enums are non-empty/non-default (proto3 JSON omits those, so they could not
round-trip through the official SDK), optional objects and arrays are either absent or
non-empty (the SDK's 0.3 conversion drops empty ones), numbers are finite and within the
53-bit range a ``google.protobuf.Value`` number holds exactly.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

from a2a_toolcall import contract
from a2a_toolcall.protocol import models as m

text = st.text(max_size=12)
ids = st.text(min_size=1, max_size=12)
urls = st.from_regex(r"\Ahttps://[a-z]{1,8}\.example/[a-z0-9/]{0,10}\Z")

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | text
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, min_size=1, max_size=3)


def model(cls: Any, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Instances of a pydantic model from per-field strategies (by Python field name)."""
    return st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """None or a value of ``strategy``."""
    return st.none() | strategy


def some(strategy: st.SearchStrategy[Any], max_size: int = 3) -> st.SearchStrategy[Any]:
    """Absent or a non-empty list."""
    return st.none() | st.lists(strategy, min_size=1, max_size=max_size)


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """RFC 3339 text as proto3 JSON writes it: UTC, 0/3/6/9 fraction digits."""
    moment = draw(
        st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1))
    ).replace(tzinfo=UTC)
    digits = draw(st.sampled_from([0, 3, 6, 9]))
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if digits == 0:
        return base + "Z"
    nanos = draw(st.integers(min_value=1, max_value=999_999_999))
    frac = f"{nanos:09d}"[:digits]
    return f"{base}.{frac}Z"


# --- tool-call-v1 frames ---------------------------------------------------------------------

frames_started = model(contract.ToolCallStarted, tool_call_id=ids, name=ids, args=json_values)
frames_completed = model(contract.ToolCallCompleted, tool_call_id=ids, name=ids, result=json_values)
frames_failed = model(contract.ToolCallFailed, tool_call_id=ids, name=ids, error=optional(text))
frames = frames_started | frames_completed | frames_failed


# --- content ---------------------------------------------------------------------------------


@st.composite
def parts(draw: st.DrawFn) -> m.Part:
    kind = draw(st.sampled_from(["text", "raw", "url", "data"]))
    extra: dict[str, Any] = {
        "metadata": draw(optional(json_objects)),
        "filename": draw(optional(ids)),
        "media_type": draw(optional(st.sampled_from(["text/plain", "application/json"]))),
    }
    if kind == "text":
        return m.Part(text=draw(text), **extra)
    if kind == "raw":
        return m.Part(raw=base64.b64encode(draw(st.binary(max_size=24))).decode(), **extra)
    if kind == "url":
        return m.Part(url=draw(urls), **extra)
    return m.Part(data=draw(json_values), **extra)


roles = st.sampled_from([m.Role.USER, m.Role.AGENT])
states = st.sampled_from([s for s in m.TaskState if s is not m.TaskState.UNSPECIFIED])

messages = model(
    m.Message,
    message_id=ids,
    context_id=optional(ids),
    task_id=optional(ids),
    role=roles,
    parts=st.lists(parts(), max_size=3),
    metadata=optional(json_objects),
    extensions=some(urls),
    reference_task_ids=some(ids),
)

artifacts = model(
    m.Artifact,
    artifact_id=ids,
    name=optional(ids),
    description=optional(text),
    parts=st.lists(parts(), max_size=3),
    metadata=optional(json_objects),
    extensions=some(urls),
)

task_statuses = model(
    m.TaskStatus, state=states, message=optional(messages), timestamp=optional(timestamps())
)

tasks = model(
    m.Task,
    id=ids,
    context_id=optional(ids),
    status=task_statuses,
    artifacts=some(artifacts, 2),
    history=some(messages, 2),
    metadata=optional(json_objects),
)

status_updates = model(
    m.TaskStatusUpdateEvent,
    task_id=ids,
    context_id=ids,
    status=task_statuses,
    metadata=optional(json_objects),
)

artifact_updates = model(
    m.TaskArtifactUpdateEvent,
    task_id=ids,
    context_id=ids,
    artifact=artifacts,
    append=optional(st.booleans()),
    last_chunk=optional(st.booleans()),
    metadata=optional(json_objects),
)

stream_responses = st.one_of(
    tasks.map(lambda v: m.StreamResponse(task=v)),
    messages.map(lambda v: m.StreamResponse(message=v)),
    status_updates.map(lambda v: m.StreamResponse(status_update=v)),
    artifact_updates.map(lambda v: m.StreamResponse(artifact_update=v)),
)

send_message_responses = st.one_of(
    tasks.map(lambda v: m.SendMessageResponse(task=v)),
    messages.map(lambda v: m.SendMessageResponse(message=v)),
)

# --- requests --------------------------------------------------------------------------------

push_configs = model(
    m.TaskPushNotificationConfig,
    tenant=optional(ids),
    id=optional(ids),
    task_id=optional(ids),
    url=urls,
    token=optional(ids),
    authentication=optional(model(m.AuthenticationInfo, scheme=ids, credentials=optional(ids))),
)

send_configurations = model(
    m.SendMessageConfiguration,
    accepted_output_modes=some(st.sampled_from(["text/plain", "application/json"])),
    task_push_notification_config=optional(push_configs),
    history_length=optional(st.integers(min_value=1, max_value=1000)),
    return_immediately=optional(st.booleans()),
)

send_message_requests = model(
    m.SendMessageRequest,
    tenant=optional(ids),
    message=messages,
    configuration=optional(send_configurations),
    metadata=optional(json_objects),
)

get_task_requests = model(
    m.GetTaskRequest,
    tenant=optional(ids),
    id=ids,
    history_length=optional(st.integers(min_value=0, max_value=1000)),
)

list_tasks_requests = model(
    m.ListTasksRequest,
    tenant=optional(ids),
    context_id=optional(ids),
    status=optional(states),
    page_size=optional(st.integers(min_value=1, max_value=100)),
    page_token=optional(ids),
    history_length=optional(st.integers(min_value=0, max_value=100)),
    status_timestamp_after=optional(timestamps()),
    include_artifacts=optional(st.booleans()),
)

list_tasks_responses = model(
    m.ListTasksResponse,
    tasks=st.lists(tasks, max_size=2),
    next_page_token=text,
    page_size=st.integers(min_value=0, max_value=100),
    total_size=st.integers(min_value=0, max_value=10_000),
)

cancel_task_requests = model(
    m.CancelTaskRequest, tenant=optional(ids), id=ids, metadata=optional(json_objects)
)

subscribe_requests = model(m.SubscribeToTaskRequest, tenant=optional(ids), id=ids)

# --- agent card ------------------------------------------------------------------------------

scopes = st.dictionaries(ids, text, max_size=3)

oauth_flows = st.one_of(
    model(
        m.AuthorizationCodeOAuthFlow,
        authorization_url=urls,
        token_url=urls,
        refresh_url=optional(urls),
        scopes=scopes,
    ).map(lambda f: m.OAuthFlows(authorization_code=f)),
    model(
        m.ClientCredentialsOAuthFlow, token_url=urls, refresh_url=optional(urls), scopes=scopes
    ).map(lambda f: m.OAuthFlows(client_credentials=f)),
    model(
        m.ImplicitOAuthFlow, authorization_url=urls, refresh_url=optional(urls), scopes=scopes
    ).map(lambda f: m.OAuthFlows(implicit=f)),
    model(m.PasswordOAuthFlow, token_url=urls, refresh_url=optional(urls), scopes=scopes).map(
        lambda f: m.OAuthFlows(password=f)
    ),
)

security_schemes = st.one_of(
    model(
        m.APIKeySecurityScheme,
        description=optional(text),
        location=st.sampled_from(["header", "query", "cookie"]),
        name=ids,
    ).map(lambda s: m.SecurityScheme(api_key_security_scheme=s)),
    model(
        m.HTTPAuthSecurityScheme,
        description=optional(text),
        scheme=st.sampled_from(["bearer", "basic"]),
        bearer_format=optional(ids),
    ).map(lambda s: m.SecurityScheme(http_auth_security_scheme=s)),
    model(
        m.OAuth2SecurityScheme,
        description=optional(text),
        flows=oauth_flows,
        oauth2_metadata_url=optional(urls),
    ).map(lambda s: m.SecurityScheme(oauth2_security_scheme=s)),
    model(m.OpenIdConnectSecurityScheme, description=optional(text), open_id_connect_url=urls).map(
        lambda s: m.SecurityScheme(open_id_connect_security_scheme=s)
    ),
    model(m.MutualTlsSecurityScheme, description=optional(text)).map(
        lambda s: m.SecurityScheme(mtls_security_scheme=s)
    ),
)

security_requirements = model(
    m.SecurityRequirement,
    schemes=st.dictionaries(
        ids,
        model(m.StringList, values=st.lists(ids, min_size=1, max_size=2)),
        min_size=1,
        max_size=2,
    ),
)

skills = model(
    m.AgentSkill,
    id=ids,
    name=ids,
    description=text,
    tags=st.lists(ids, min_size=1, max_size=3),
    examples=some(text),
    input_modes=some(st.sampled_from(["text/plain", "application/json"])),
    output_modes=some(st.sampled_from(["text/plain", "application/json"])),
    security_requirements=some(security_requirements, 2),
)

extensions = model(
    m.AgentExtension,
    uri=urls,
    description=optional(text),
    required=optional(st.booleans()),
    params=optional(json_objects),
)

capabilities = model(
    m.AgentCapabilities,
    streaming=optional(st.booleans()),
    push_notifications=optional(st.booleans()),
    extensions=some(extensions, 2),
    extended_agent_card=optional(st.booleans()),
)


@st.composite
def interfaces(draw: st.DrawFn, *, with_legacy: bool) -> list[m.AgentInterface]:
    """Interfaces of a card; with ``with_legacy`` at least one speaks 0.3."""
    make = model(
        m.AgentInterface,
        url=urls,
        protocol_binding=st.sampled_from(["JSONRPC", "HTTP+JSON", "GRPC"]),
        tenant=optional(ids),
        protocol_version=st.sampled_from(["1.0", "0.3", "0.3.0"]),
    )
    found = draw(st.lists(make, min_size=1, max_size=3))
    if with_legacy and not any(i.protocol_version.startswith("0.") for i in found):
        found.append(draw(make.map(lambda i: i.model_copy(update={"protocol_version": "0.3"}))))
    return found


@st.composite
def agent_cards(draw: st.DrawFn, *, with_legacy: bool = False) -> m.AgentCard:
    return m.AgentCard(
        name=draw(ids),
        description=draw(text),
        supported_interfaces=draw(interfaces(with_legacy=with_legacy)),
        provider=draw(optional(model(m.AgentProvider, url=urls, organization=ids))),
        version=draw(ids),
        documentation_url=draw(optional(urls)),
        capabilities=draw(capabilities),
        security_schemes=draw(
            optional(st.dictionaries(ids, security_schemes, min_size=1, max_size=2))
        ),
        security_requirements=draw(some(security_requirements, 2)),
        default_input_modes=draw(
            st.lists(st.sampled_from(["text/plain", "application/json"]), min_size=1, max_size=2)
        ),
        default_output_modes=draw(
            st.lists(st.sampled_from(["text/plain", "application/json"]), min_size=1, max_size=2)
        ),
        skills=draw(st.lists(skills, min_size=1, max_size=2)),
        signatures=draw(
            some(
                model(
                    m.AgentCardSignature,
                    protected=ids,
                    signature=ids,
                    header=optional(json_objects),
                ),
                2,
            )
        ),
        icon_url=draw(optional(urls)),
    )
