"""The A2A client over HTTP: JSON-RPC calls and SSE streams, 1.0 or 0.3, with resume.

``A2AClient(url)`` reads the agent card at ``url`` (a base URL or the card's own URL), picks
the JSON-RPC interface (1.0 when offered, else 0.3) and speaks that dialect; every result is
turned into the 1.0 models of :mod:`a2a_toolcall.protocol`, so callers see one shape.

Streams are :class:`TaskRun` objects: async iterators of typed events
(:mod:`a2a_toolcall.client.events`) that keep a :class:`RunState` (tool timeline, narration,
answer) up to date and resubscribe on their own, with the SSE ``Last-Event-ID``, when a
connection drops before the task stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urljoin

import httpx
from pydantic import ValidationError

from a2a_toolcall.client.errors import (
    A2AConnectionError,
    A2AHTTPError,
    ClientError,
    NotAnA2AServerError,
    ProtocolViolationError,
)
from a2a_toolcall.client.events import (
    ClientEvent,
    Finished,
    Reconnecting,
    RunState,
    TaskSnapshot,
)
from a2a_toolcall.contract import TOOL_CALL_V1_URI
from a2a_toolcall.protocol import jsonrpc, v03
from a2a_toolcall.protocol.models import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    WireModel,
)
from a2a_toolcall.protocol.sse import SSEDecoder

__all__ = ["CARD_PATH", "A2AClient", "Protocol", "TaskRun", "user_message"]

CARD_PATH = "/.well-known/agent-card.json"
Protocol = Literal["1.0", "0.3"]
MessageInput = str | Message | Sequence[Part | Mapping[str, Any]]

_JSON = "application/json"
_SSE = "text/event-stream"


def user_message(
    content: MessageInput,
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Message:
    """A user message from text, parts (models or wire dicts) or a ready :class:`Message`.

    A given :class:`Message` keeps its own ids unless ``task_id``/``context_id`` are passed.
    """
    if isinstance(content, Message):
        update: dict[str, Any] = {}
        if task_id is not None:
            update["task_id"] = task_id
        if context_id is not None:
            update["context_id"] = context_id
        if metadata is not None:
            update["metadata"] = dict(metadata)
        return content.model_copy(update=update) if update else content
    if isinstance(content, str):
        parts = [Part(text=content)]
    else:
        parts = [p if isinstance(p, Part) else Part.model_validate(p) for p in content]
    return Message(
        message_id=uuid.uuid4().hex,
        role=Role.USER,
        parts=parts,
        task_id=task_id,
        context_id=context_id,
        metadata=dict(metadata) if metadata is not None else None,
    )


def _version_key(version: str) -> tuple[int, ...]:
    numbers = []
    for piece in version.split("."):
        digits = "".join(c for c in piece if c.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers)


def _dialect_of(version: str) -> Protocol:
    return "0.3" if v03.is_legacy_version(version) else "1.0"


class A2AClient:
    """An A2A agent reached over JSON-RPC: ``async with A2AClient(url) as client: ...``.

    ``protocol`` forces a dialect ("1.0" or "0.3"); by default the newest JSON-RPC interface
    the card offers is used. ``extensions`` are activated on every request (tool-call-v1 by
    default). ``headers`` go on every request. ``api_key`` is sent as the card's ``apiKey``
    scheme says (its header; ``X-API-Key`` when the card names none), ``token`` as
    ``Authorization: Bearer``. ``timeout`` bounds each
    call; a stream may stay silent for ``stream_timeout`` seconds before it counts as dropped
    (servers send keepalives well within that). A dropped stream is resumed up to
    ``max_reconnects`` times, waiting ``reconnect_delay`` seconds, doubled on each attempt.
    Pass ``http`` to reuse an ``httpx.AsyncClient`` (it is then not closed by this client).
    """

    def __init__(
        self,
        url: str,
        *,
        protocol: Protocol | None = None,
        extensions: Sequence[str] = (TOOL_CALL_V1_URI,),
        headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        stream_timeout: float = 60.0,
        max_reconnects: int = 5,
        reconnect_delay: float = 0.25,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if protocol not in (None, "1.0", "0.3"):
            raise ValueError(f"protocol must be '1.0', '0.3' or None, not {protocol!r}")
        self.url = url
        self.card_url = url if url.rstrip("/").endswith(".json") else url.rstrip("/") + CARD_PATH
        self.protocol = protocol
        self.extensions = list(extensions)
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self.max_reconnects = max_reconnects
        self.reconnect_delay = reconnect_delay
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout, follow_redirects=True)
        self._headers = dict(headers or {})
        self._api_key = api_key
        if token:
            self._headers.setdefault("Authorization", f"Bearer {token}")
        self._ids = itertools.count(1)
        self._card: AgentCard | None = None
        self._interface: AgentInterface | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections (unless the ``httpx`` client was passed in)."""
        if self._own_http:
            await self._http.aclose()

    # --- the card --------------------------------------------------------------------------

    async def card(self, *, refresh: bool = False) -> AgentCard:
        """The agent card (1.0 model; a 0.3 card is translated), fetched once and cached."""
        async with self._lock:
            if self._card is None or refresh:
                self._card = await self._fetch_card()
                self._interface = self._pick_interface(self._card)
                if self._api_key:
                    self._headers.setdefault(_api_key_header(self._card), self._api_key)
            return self._card

    @property
    def endpoint(self) -> str | None:
        """The JSON-RPC URL in use (None until the card was read)."""
        return self._interface.url if self._interface else None

    @property
    def dialect(self) -> Protocol | None:
        """The dialect in use, "1.0" or "0.3" (None until the card was read)."""
        return _dialect_of(self._interface.protocol_version) if self._interface else None

    async def _fetch_card(self) -> AgentCard:
        try:
            response = await self._http.get(
                self.card_url, headers={**self._headers, "Accept": _JSON}
            )
        except httpx.TransportError as exc:
            raise A2AConnectionError(f"cannot reach {self.card_url}: {_describe(exc)}") from exc
        if response.status_code != 200:
            raise NotAnA2AServerError(
                f"no A2A agent card at {self.card_url} (HTTP {response.status_code})"
            )
        try:
            data = response.json()
        except ValueError:
            raise NotAnA2AServerError(
                f"{self.card_url} is not an A2A agent card: the response is not JSON"
            ) from None
        if not isinstance(data, dict):
            raise NotAnA2AServerError(f"{self.card_url} is not an A2A agent card (not an object)")
        try:
            if data.get("supportedInterfaces"):
                return AgentCard.model_validate(data)
            if data.get("url"):
                return v03.card_from_v03(data)
        except (ValidationError, ValueError) as exc:
            raise NotAnA2AServerError(
                f"{self.card_url} holds an invalid agent card: {exc}"
            ) from exc
        raise NotAnA2AServerError(
            f"{self.card_url} is not an A2A agent card: it names no interface "
            "(neither supportedInterfaces nor url)"
        )

    def _pick_interface(self, card: AgentCard) -> AgentInterface:
        jsonrpc_ones = [
            i for i in card.supported_interfaces if i.protocol_binding.upper() == "JSONRPC"
        ]
        if not jsonrpc_ones:
            offered = ", ".join(sorted({i.protocol_binding for i in card.supported_interfaces}))
            raise NotAnA2AServerError(
                f"the agent at {self.card_url} offers no JSON-RPC interface (it offers: {offered})"
            )
        if self.protocol is not None:
            matching = [i for i in jsonrpc_ones if _dialect_of(i.protocol_version) == self.protocol]
            if not matching:
                versions = ", ".join(i.protocol_version for i in jsonrpc_ones)
                raise NotAnA2AServerError(
                    f"the agent at {self.card_url} offers no JSON-RPC {self.protocol} interface "
                    f"(it offers: {versions})"
                )
            jsonrpc_ones = matching
        chosen = max(jsonrpc_ones, key=lambda i: _version_key(i.protocol_version))
        return chosen.model_copy(update={"url": urljoin(self.card_url, chosen.url)})

    # --- calls -----------------------------------------------------------------------------

    async def send(
        self,
        message: MessageInput,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        return_immediately: bool = False,
        history_length: int | None = None,
    ) -> Task | Message:
        """``SendMessage``: the task once it stops (or at once), or the agent's direct reply."""
        config = None
        if return_immediately or history_length is not None:
            config = SendMessageConfiguration(
                return_immediately=return_immediately or None, history_length=history_length
            )
        params = SendMessageRequest(
            message=user_message(message, task_id=task_id, context_id=context_id),
            configuration=config,
            metadata=dict(metadata) if metadata is not None else None,
        )
        raw = await self._call("SendMessage", params)
        try:
            if self.dialect == "0.3":
                result = v03.result_from_v03(raw)
                answer = result.task or result.message
            else:
                parsed = SendMessageResponse.model_validate(raw)
                answer = parsed.task or parsed.message
        except (ValidationError, ValueError) as exc:
            raise ProtocolViolationError(f"invalid SendMessage result: {exc}") from exc
        if answer is None:
            raise ProtocolViolationError("SendMessage answered neither a task nor a message")
        return answer

    async def get(self, task_id: str, *, history_length: int | None = None) -> Task:
        """``GetTask``."""
        raw = await self._call("GetTask", GetTaskRequest(id=task_id, history_length=history_length))
        return self._task(raw, "GetTask")

    async def cancel(self, task_id: str) -> Task:
        """``CancelTask``: the task as the server reports it after the cancel."""
        raw = await self._call("CancelTask", CancelTaskRequest(id=task_id))
        return self._task(raw, "CancelTask")

    async def list_tasks(
        self,
        *,
        context_id: str | None = None,
        status: TaskState | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
    ) -> ListTasksResponse:
        """``ListTasks`` (A2A 1.0 only: 0.3 has no such method)."""
        await self.card()
        if self.dialect == "0.3":
            raise ClientError("ListTasks does not exist in A2A 0.3")
        params = ListTasksRequest(
            context_id=context_id, status=status, page_size=page_size, page_token=page_token
        )
        raw = await self._call("ListTasks", params)
        try:
            return ListTasksResponse.model_validate(raw)
        except ValidationError as exc:
            raise ProtocolViolationError(f"invalid ListTasks result: {exc}") from exc

    def stream(
        self,
        message: MessageInput,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        state: RunState | None = None,
    ) -> TaskRun:
        """``SendStreamingMessage``: iterate the returned :class:`TaskRun` for its events.

        ``task_id`` answers a task waiting for input (see :meth:`TaskRun.respond`);
        ``context_id`` continues a conversation. ``state`` carries an earlier run's state on
        (its timeline keeps growing).
        """
        outgoing = user_message(message, task_id=task_id, context_id=context_id)
        params = SendMessageRequest(
            message=outgoing, metadata=dict(metadata) if metadata is not None else None
        )
        run_state = state or RunState()
        kind: Literal["new", "answer"] = "answer" if outgoing.task_id else "new"
        return TaskRun(
            self,
            run_state,
            lambda: self._stream_call("SendStreamingMessage", params),
            kind=kind,
        )

    def resubscribe(
        self,
        task_id: str,
        *,
        last_event_id: str | None = None,
        state: RunState | None = None,
    ) -> TaskRun:
        """``SubscribeToTask``: follow a running task; resume after ``last_event_id`` if given."""
        run_state = state or RunState()
        if run_state.task_id not in (None, task_id):
            raise ValueError(f"state belongs to task {run_state.task_id}, not {task_id}")
        run_state.task_id = task_id
        if last_event_id:
            run_state.last_event_id = last_event_id
        return TaskRun(self, run_state, None, kind="resubscribe")

    # --- plumbing --------------------------------------------------------------------------

    def _task(self, raw: Any, method: str) -> Task:
        try:
            return v03.task_from_v03(raw) if self.dialect == "0.3" else Task.model_validate(raw)
        except (ValidationError, ValueError) as exc:
            raise ProtocolViolationError(f"invalid {method} result: {exc}") from exc

    async def _request(self, method: str, params: WireModel) -> tuple[str, bytes, dict[str, str]]:
        await self.card()
        assert self._interface is not None
        headers = {**self._headers, "Content-Type": _JSON}
        if self.dialect == "0.3":
            name = v03.METHODS_TO_V03.get(method)
            if name is None:
                raise ClientError(f"{method} does not exist in A2A 0.3")
            body: Any = v03.params_to_v03(method, params)
            if self.extensions:
                headers["X-A2A-Extensions"] = ", ".join(self.extensions)
        else:
            name = method
            body = params.to_wire()
            headers["A2A-Version"] = "1.0"
            if self.extensions:
                headers["A2A-Extensions"] = ", ".join(self.extensions)
        payload = {"jsonrpc": "2.0", "id": next(self._ids), "method": name, "params": body}
        return self._interface.url, json.dumps(payload).encode(), headers

    async def _call(self, method: str, params: WireModel) -> Any:
        url, body, headers = await self._request(method, params)
        try:
            response = await self._http.post(
                url, content=body, headers={**headers, "Accept": _JSON}
            )
        except httpx.TransportError as exc:
            raise A2AConnectionError(f"{method} to {url} failed: {_describe(exc)}") from exc
        return _result_of(response.status_code, response.content, url)

    async def _stream_call(
        self, method: str, params: WireModel, extra: Mapping[str, str] | None = None
    ) -> AsyncGenerator[tuple[str | None, Any]]:
        """POST and yield ``(event id, raw result)`` per SSE event; raise on JSON-RPC errors."""
        url, body, headers = await self._request(method, params)
        timeout = httpx.Timeout(self.timeout, read=self.stream_timeout)
        request = self._http.build_request(
            "POST",
            url,
            content=body,
            headers={**headers, **(extra or {}), "Accept": _SSE},
            timeout=timeout,
        )
        response = await self._http.send(request, stream=True)
        try:
            content_type = response.headers.get("content-type", "")
            if not content_type.startswith(_SSE):
                content = await response.aread()
                _result_of(response.status_code, content, url)  # raises a JSON-RPC error if any
                raise ProtocolViolationError(
                    f"{method} to {url} answered {content_type or 'no content type'}, "
                    "not an event stream"
                )
            decoder = SSEDecoder()
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    try:
                        envelope = event.json()
                    except ValueError:
                        raise ProtocolViolationError(
                            f"{method}: an event is not JSON: {event.data[:200]!r}"
                        ) from None
                    yield event.id, _result_of_envelope(envelope, url)
        finally:
            await response.aclose()


def _api_key_header(card: AgentCard) -> str:
    """The header an API key goes in: the card's first ``apiKey`` scheme located in a header,
    else ``X-API-Key``."""
    for scheme in (card.security_schemes or {}).values():
        key = scheme.api_key_security_scheme
        if key is not None and key.location.lower() == "header" and key.name:
            return key.name
    return "X-API-Key"


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _result_of(status: int, content: bytes, url: str) -> Any:
    try:
        envelope = json.loads(content)
    except ValueError:
        if status >= 400:
            raise A2AHTTPError(
                f"{url} answered HTTP {status}: {content[:200]!r}", status_code=status
            ) from None
        raise ProtocolViolationError(f"{url} did not answer JSON: {content[:200]!r}") from None
    if status >= 400 and not (isinstance(envelope, dict) and "jsonrpc" in envelope):
        raise A2AHTTPError(f"{url} answered HTTP {status}: {envelope!r:.200}", status_code=status)
    return _result_of_envelope(envelope, url)


def _result_of_envelope(envelope: Any, url: str) -> Any:
    if not isinstance(envelope, dict) or envelope.get("jsonrpc") != "2.0":
        raise ProtocolViolationError(f"{url} answered something that is not JSON-RPC 2.0")
    if "error" in envelope:
        raise jsonrpc.error_from_wire(envelope["error"])
    if "result" not in envelope:
        raise ProtocolViolationError(f"{url} answered a JSON-RPC response with no result")
    return envelope["result"]


Opener = Callable[[], AsyncGenerator[tuple[str | None, Any]]]


class TaskRun:
    """One streamed task: ``async for event in run`` (once), then read the state.

    ``run.state`` (a :class:`RunState`) holds the tool timeline, the latest narration, the
    question of an input-required task and the answer. The iteration ends when the task
    reaches a terminal state, asks for input, or the agent answered with a direct message; a
    dropped connection is resumed with ``SubscribeToTask`` (yielding :class:`Reconnecting`).
    Use ``async with`` (or :meth:`aclose`) when leaving the loop early.
    """

    def __init__(
        self,
        client: A2AClient,
        state: RunState,
        opener: Opener | None,
        *,
        kind: Literal["new", "answer", "resubscribe"],
    ) -> None:
        self.client = client
        self.state = state
        self._opener = opener
        self._kind = kind
        self._iterator: AsyncIterator[ClientEvent] | None = None

    # Shortcuts to the state.
    @property
    def task_id(self) -> str | None:
        """The task's id (known from the first event on)."""
        return self.state.task_id

    @property
    def context_id(self) -> str | None:
        """The task's context id."""
        return self.state.context_id

    @property
    def timeline(self) -> Any:
        """The :class:`~a2a_toolcall.contract.ToolTimeline` of the task so far."""
        return self.state.timeline

    def __aiter__(self) -> AsyncIterator[ClientEvent]:
        if self._iterator is not None:
            raise RuntimeError("a TaskRun is iterated once; start another with respond()")
        self._iterator = self._events()
        return self._iterator

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the stream's connection (after leaving the ``async for`` early)."""
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()

    async def wait(self) -> RunState:
        """Consume every event and return the final state."""
        async for _ in self:
            pass
        return self.state

    async def cancel(self) -> Task:
        """``CancelTask`` for this run's task; the task it returns updates :attr:`state`."""
        if self.state.task_id is None:
            raise ClientError("the task has no id yet: nothing to cancel")
        task = await self.client.cancel(self.state.task_id)
        self.state.absorb_task(task)
        return task

    def respond(self, content: MessageInput) -> TaskRun:
        """Answer the question of an input-required task: a new run continuing this state."""
        if self.state.task_id is None:
            raise ClientError("the task has no id yet: nothing to respond to")
        return self.client.stream(
            content,
            task_id=self.state.task_id,
            context_id=self.state.context_id,
            state=self.state,
        )

    async def _events(self) -> AsyncIterator[ClientEvent]:
        state = self.state
        attempt = 0
        kind = self._kind
        opener = self._opener or self._resubscriber()
        while True:
            # A resumed stream (Last-Event-ID) of a task that ended meanwhile opens with the
            # ended task, then replays what this client missed, up to the terminal status.
            resuming = kind == "resubscribe" and bool(state.last_event_id)
            replaying = False
            try:
                async with contextlib.aclosing(opener()) as stream:
                    async for event_id, raw in stream:
                        try:
                            response = (
                                v03.result_from_v03(raw)
                                if self.client.dialect == "0.3"
                                else StreamResponse.model_validate(raw)
                            )
                        except (ValidationError, ValueError) as exc:
                            raise ProtocolViolationError(f"invalid streamed result: {exc}") from exc
                        event = state.apply(response, raw=raw, event_id=event_id)
                        if event is None:
                            continue
                        attempt = 0
                        yield event
                        if isinstance(event, TaskSnapshot):
                            if state.is_terminal and resuming:
                                replaying = True
                                continue
                            # An answer's stream opens with the task as it was (still waiting for
                            # the answer): only a terminal task, or a resubscription to a waiting
                            # one, has nothing more to stream.
                            waiting = kind == "resubscribe" and state.is_interrupted
                            if state.is_terminal or waiting:
                                ending = state.finished_from_task()
                                if ending is not None:
                                    yield ending
                                return
                            continue
                        if isinstance(event, Finished) or (state.is_over and not replaying):
                            return
                if replaying:
                    # The replay ended without its terminal status (nothing was left after the
                    # client's last event): the task's own state says how it ended.
                    ending = state.finished_from_task()
                    if ending is not None:
                        yield ending
                    return
                reason = "the server closed the stream before the task stopped"
            except httpx.TransportError as exc:
                reason = f"the connection broke: {_describe(exc)}"
            except jsonrpc.UnsupportedOperationError:
                if kind != "resubscribe" or state.task_id is None:
                    raise
                # The task stopped meanwhile (resubscribing to a terminal task is refused).
                task = await self.client.get(state.task_id)
                yield state.absorb_task(task)
                ending = state.finished_from_task()
                if ending is not None:
                    yield ending
                    return
                reason = f"SubscribeToTask was refused while the task is {task.status.state.name}"
            if state.task_id is None:
                raise A2AConnectionError(f"{reason}, before the server named the task")
            attempt += 1
            if attempt > self.client.max_reconnects:
                raise A2AConnectionError(
                    f"{reason}; gave up after {self.client.max_reconnects} reconnects"
                )
            yield Reconnecting(
                task_id=state.task_id,
                context_id=state.context_id,
                attempt=attempt,
                reason=reason,
                last_event_id=state.last_event_id,
            )
            await asyncio.sleep(min(self.client.reconnect_delay * 2 ** (attempt - 1), 5.0))
            kind = "resubscribe"
            opener = self._resubscriber()

    def _resubscriber(self) -> Opener:
        state = self.state

        def open_stream() -> AsyncGenerator[tuple[str | None, Any]]:
            assert state.task_id is not None
            extra = {"Last-Event-ID": state.last_event_id} if state.last_event_id else None
            return self.client._stream_call(
                "SubscribeToTask", SubscribeToTaskRequest(id=state.task_id), extra
            )

        return open_stream
