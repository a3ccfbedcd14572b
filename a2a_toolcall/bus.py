"""The bus between the agent runtime and the A2A server: Channels layer groups.

Topics (``cid`` is the A2A task id):

==============================  ==================  =============================================
topic                           direction           payload
==============================  ==================  =============================================
``agent.skill.request``         server -> runtime   the work; a point-to-point *channel*, so
                                                    several workers share it and each request
                                                    runs once
``agent.skill.progress.{cid}``  runtime -> server   ``{text, step?, percent?, meta?}``
``agent.skill.toolframe.{cid}`` runtime -> server   ``{frame}`` (a tool-call-v1 frame)
``agent.skill.artifact.{cid}``  runtime -> server   ``{artifact, append, lastChunk}`` (1.0 JSON)
``agent.input.request.{cid}``   runtime -> server   ``{requestId, question, meta?}``
``agent.skill.response.{cid}``  runtime -> server   ``{status, text?, parts?, error?, reason?}``
``agent.skill.sync.{cid}``      runtime -> server   ``{lastSeq}``: how far it has published (seq 0)
``agent.skill.cancel.{cid}``    server -> runtime   ``{reason?}``
``agent.input.response.{cid}``  server -> runtime   ``{requestId, text, parts?}``
``agent.skill.resend.{cid}``    server -> runtime   ``{from}`` ``{probe}`` ``{ack}`` ``{done}``
``agent.task.events.{cid}``     server -> server    ``{lastSeq, state}``: new events are stored
==============================  ==================  =============================================

Channel layers lose messages (over capacity, nobody listening, a PubSub hiccup), so delivery
from the runtime is made reliable on top: the runtime keeps every envelope of a task until the
consumer acknowledges it, a consumer (:class:`TaskStream`) asks for what a ``seq`` gap shows
missing and probes when the runtime goes quiet; the runtime answers a probe with a ``sync``
envelope (how far it has published), and the consumer asks again for what that shows lost.

Every message is an :class:`Envelope` (type, topic, cid, timestamp, per-task ``seq``, payload).
Channel layers are lossy and at-most-once, and Redis carries messages as msgpack, so envelopes
are checked to be msgpack-safe when published, on every layer, and consumers treat ``seq`` as
the order of record (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import itertools
import logging
import re
import sys
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer

from a2a_toolcall.aio import Alarm, Flag

if TYPE_CHECKING:
    from channels_redis.core import RedisChannelLayer

__all__ = [
    "CONTROL_TOPICS",
    "ENVELOPE_TYPE",
    "REQUEST_CHANNEL",
    "STREAM_TOPICS",
    "TASK_TOPICS",
    "TOPIC_ARTIFACT",
    "TOPIC_CANCEL",
    "TOPIC_EVENTS",
    "TOPIC_INPUT_REQUEST",
    "TOPIC_INPUT_RESPONSE",
    "TOPIC_PROGRESS",
    "TOPIC_REQUEST",
    "TOPIC_RESEND",
    "TOPIC_RESPONSE",
    "TOPIC_SYNC",
    "TOPIC_TOOLFRAME",
    "Bus",
    "BusPayloadError",
    "Envelope",
    "RuntimeLost",
    "Subscription",
    "TaskPublisher",
    "TaskStream",
    "check_msgpack_safe",
    "first_seq",
    "group_name",
]

logger = logging.getLogger(__name__)

TOPIC_REQUEST: Final = "agent.skill.request"
TOPIC_PROGRESS: Final = "agent.skill.progress"
TOPIC_TOOLFRAME: Final = "agent.skill.toolframe"
TOPIC_ARTIFACT: Final = "agent.skill.artifact"
TOPIC_INPUT_REQUEST: Final = "agent.input.request"
TOPIC_RESPONSE: Final = "agent.skill.response"
TOPIC_SYNC: Final = "agent.skill.sync"
TOPIC_CANCEL: Final = "agent.skill.cancel"
TOPIC_INPUT_RESPONSE: Final = "agent.input.response"
TOPIC_RESEND: Final = "agent.skill.resend"
TOPIC_EVENTS: Final = "agent.task.events"

REQUEST_CHANNEL: Final = TOPIC_REQUEST
"""The layer channel work requests travel on (a channel, not a group: point-to-point)."""

TASK_TOPICS: Final = (
    TOPIC_PROGRESS,
    TOPIC_TOOLFRAME,
    TOPIC_ARTIFACT,
    TOPIC_INPUT_REQUEST,
    TOPIC_RESPONSE,
)
"""What the runtime publishes for a task, in the order a stream consumer subscribes to them."""

STREAM_TOPICS: Final = (*TASK_TOPICS, TOPIC_SYNC)
"""What a reliable consumer of a task (:class:`TaskStream`) subscribes to."""

CONTROL_TOPICS: Final = (TOPIC_CANCEL, TOPIC_INPUT_RESPONSE, TOPIC_RESEND)
"""What the server publishes to the runtime about a running task."""

_GROUP_TOPICS: Final = frozenset((*STREAM_TOPICS, *CONTROL_TOPICS, TOPIC_EVENTS))
ENVELOPE_TYPE: Final = "a2a.envelope"
BATCH_TYPE: Final = "a2a.envelopes"
"""Several envelopes of one topic and task in one layer message: ``items`` of [seq, ts, payload]."""
_WAKEUP_TYPE: Final = "a2a.wakeup"
_REQUEST_QUEUE_WAIT: Final = 30.0
_CLAIM_SECONDS: Final = 7 * 24 * 3600
_LOCAL_CLAIMS_KEPT: Final = 100_000
_local_claims: weakref.WeakKeyDictionary[Any, collections.OrderedDict[str, None]] = (
    weakref.WeakKeyDictionary()
)
_DRAIN_SECONDS: Final = 5.0

# Channels' own rule for group names: ASCII letters, digits, '-', '_', '.', under 100 chars.
_GROUP_NAME = re.compile(r"^[A-Za-z0-9\-_.]+$")
_MAX_GROUP_NAME: Final = 99
_INT_MIN: Final = -(2**63)
_UINT_MAX: Final = 2**64 - 1


def group_name(topic: str, cid: str) -> str:
    """The layer group of ``topic`` for task ``cid``, e.g. ``agent.skill.toolframe.<cid>``.

    Raises ValueError for an unknown topic or a cid that cannot be part of a group name.
    """
    if topic not in _GROUP_TOPICS:
        raise ValueError(f"unknown bus topic {topic!r}; expected one of {sorted(_GROUP_TOPICS)}")
    name = f"{topic}.{cid}"
    if not isinstance(cid, str) or not cid or not _GROUP_NAME.match(cid):
        raise ValueError(
            f"task id {cid!r} cannot be used in a channel group name: use ASCII letters, "
            "digits, '-', '_' and '.' only (a UUID works)"
        )
    if len(name) > _MAX_GROUP_NAME:
        raise ValueError(
            f"group name {name!r} is {len(name)} characters; channel layers allow at most "
            f"{_MAX_GROUP_NAME}, so task ids must be at most {_MAX_GROUP_NAME - len(topic) - 1}"
        )
    return name


class BusPayloadError(TypeError):
    """A payload that a Redis channel layer could not carry (msgpack) or would alter."""


def check_msgpack_safe(value: Any, path: str = "payload") -> None:
    """Raise :class:`BusPayloadError` naming the first value msgpack would reject or change.

    Allowed: str, int (64-bit), float, bool, None, bytes, list, dict with str keys. Tuples are
    refused because they come back as lists; datetimes, UUIDs, Decimals and sets because
    the Redis layers cannot pack them. The in-memory layer accepts anything, so this check
    runs on every layer: a test on the in-memory layer fails where Redis would.
    """
    if _msgpack_safe(value):
        return  # the common case, without building a path for every value
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        kind = type(item)
        if kind is str or kind is float or kind is bool or item is None or kind is bytes:
            continue
        if kind is int:
            if not _INT_MIN <= item <= _UINT_MAX:
                raise BusPayloadError(f"{where}: integer {item} does not fit in 64 bits")
            continue
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    raise BusPayloadError(
                        f"{where}: dict key {key!r} is a {type(key).__name__}; msgpack "
                        "payloads need str keys"
                    )
                stack.append((child, f"{where}.{key}"))
            continue
        if kind is list:
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
            continue
        hint = (
            " (tuples come back as lists: send a list)"
            if kind is tuple
            else ("; convert it to a str, int or float first")
        )
        raise BusPayloadError(f"{where}: {kind.__name__} is not msgpack-safe{hint}")


_MSGPACK_SCALARS: Final = frozenset({str, float, bool, bytes, type(None)})


def _msgpack_safe(value: Any) -> bool:
    """Whether :func:`check_msgpack_safe` passes ``value``: a walk with a stack of its own (no
    recursion, whatever the depth), one type lookup per value (every envelope's payload)."""
    stack = [value]
    pop = stack.pop
    extend = stack.extend
    scalars = _MSGPACK_SCALARS
    while stack:
        item = pop()
        kind = type(item)
        if kind in scalars:
            continue
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            extend(item.values())
        elif kind is list:
            extend(item)
        elif kind is int:
            if not _INT_MIN <= item <= _UINT_MAX:
                return False
        else:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Envelope:
    """One bus message: what, for which task, when (Unix seconds), in which order, and data."""

    topic: str
    cid: str
    seq: int
    ts: float
    payload: dict[str, Any]

    def to_message(self) -> dict[str, Any]:
        """The layer message (msgpack-safe dict) for this envelope."""
        return {
            "type": ENVELOPE_TYPE,
            "topic": self.topic,
            "cid": self.cid,
            "seq": self.seq,
            "ts": self.ts,
            "payload": self.payload,
        }

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> Envelope:
        """Read a layer message; raises ValueError if it is not an envelope."""
        if message.get("type") != ENVELOPE_TYPE:
            raise ValueError(f"not a bus envelope: type={message.get('type')!r}")
        try:
            envelope = cls(
                topic=message["topic"],
                cid=message["cid"],
                seq=message["seq"],
                ts=message["ts"],
                payload=message["payload"],
            )
        except KeyError as exc:
            raise ValueError(f"bus envelope without {exc.args[0]!r}") from None
        if not (
            isinstance(envelope.topic, str)
            and isinstance(envelope.cid, str)
            and isinstance(envelope.seq, int)
            and isinstance(envelope.ts, int | float)
            and isinstance(envelope.payload, dict)
        ):
            raise ValueError("bus envelope with members of the wrong type")
        return envelope


def envelopes_from_batch(message: Mapping[str, Any]) -> list[Envelope]:
    """Read a batch message (:data:`BATCH_TYPE`); raises ValueError if it is not one."""
    topic, cid, items = message.get("topic"), message.get("cid"), message.get("items")
    if not (isinstance(topic, str) and isinstance(cid, str) and isinstance(items, list)):
        raise ValueError("envelope batch without a topic, a cid or items")
    envelopes = []
    for item in items:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], int)
            and isinstance(item[1], int | float)
            and isinstance(item[2], dict)
        ):
            raise ValueError("envelope batch with a malformed item")
        envelopes.append(Envelope(topic, cid, item[0], item[1], item[2]))
    return envelopes


def _layer_for(alias_or_layer: str | BaseChannelLayer | None) -> BaseChannelLayer:
    if alias_or_layer is None:
        from a2a_toolcall.conf import get_setting

        alias_or_layer = get_setting("CHANNEL_LAYER")
    if isinstance(alias_or_layer, str):
        layer = get_channel_layer(alias_or_layer)
        if layer is None:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(
                f"CHANNEL_LAYERS has no layer {alias_or_layer!r}; the a2a_toolcall bus needs one "
                "(InMemoryChannelLayer for one process, channels_redis for several)"
            )
        return layer
    return alias_or_layer


# channels_redis talks to Redis through a redis-py pool that *raises* "Too many connections"
# past its size (100 by default) instead of waiting: 200 streams subscribing at once crash.
# The bus therefore caps its own concurrent layer operations (receives excluded: a pending
# receive holds no connection of its own) per layer and event loop, and waits for a slot.
_MAX_CONCURRENT_OPERATIONS: Final = 48
_limits: weakref.WeakKeyDictionary[Any, dict[asyncio.AbstractEventLoop, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _is_redis_core(layer: BaseChannelLayer) -> TypeGuard[RedisChannelLayer]:
    """Whether ``layer`` is a channels_redis core layer, without importing channels_redis.

    channels_redis is an extra (``a2a-toolcall[redis]``): a layer can only be one of its
    classes once channels_redis has been imported, by the layer itself.
    """
    module = sys.modules.get("channels_redis.core")
    return module is not None and isinstance(layer, module.RedisChannelLayer)


# channels_redis's core ``send`` is four commands, four round trips (drop expired messages,
# count, add, set the expiry); this is the same four in one script, so one round trip. The
# count and the add are atomic here (channels_redis lets a queue go a little over capacity).
_CORE_SEND_SCRIPT: Final = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[1])
if redis.call('ZCOUNT', KEYS[1], '-inf', '+inf') >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


def _one_trip_sendable(layer: BaseChannelLayer) -> TypeGuard[RedisChannelLayer]:
    """Whether work requests on ``layer`` go by :func:`_send_in_one_trip`: a channels_redis
    core layer of the class itself (a subclass may send differently), with the insides that
    function uses (another version may not have them)."""
    return (
        _is_redis_core(layer)
        and type(layer) is sys.modules["channels_redis.core"].RedisChannelLayer
        and all(
            hasattr(layer, name)
            for name in ("prefix", "expiry", "get_capacity", "serialize", "_send_index_generator")
        )
    )


async def _send_in_one_trip(
    layer: RedisChannelLayer, channel: str, message: dict[str, Any]
) -> None:
    """The layer's ``send`` to a general channel (no ``!``) in one round trip
    (:data:`_CORE_SEND_SCRIPT`): its key, serialisation, expiry and capacity, so the layer's
    ``receive`` reads it as its own."""
    assert "!" not in channel, "a process's own channel goes by the layer's send"
    layer.require_valid_channel_name(channel)  # raises TypeError, as the layer's send
    core: Any = layer
    connection = core.connection(next(core._send_index_generator))
    now = time.time()
    added = await connection.eval(
        _CORE_SEND_SCRIPT,
        1,
        core.prefix + channel,
        int(now) - int(core.expiry),
        core.get_capacity(channel),
        now,
        core.serialize(message),
        int(core.expiry),
    )
    if not added:
        raise ChannelFull()


def _operation_slot(layer: BaseChannelLayer) -> contextlib.AbstractAsyncContextManager[Any]:
    if isinstance(layer, InMemoryChannelLayer):
        return contextlib.nullcontext()
    per_loop = _limits.setdefault(layer, {})
    loop = asyncio.get_running_loop()
    slot = per_loop.get(loop)
    if slot is None:
        for stale in [lp for lp in per_loop if lp.is_closed()]:
            del per_loop[stale]
        slot = per_loop[loop] = asyncio.Semaphore(_MAX_CONCURRENT_OPERATIONS)
    return slot


class Bus:
    """Publishing and subscribing on one channel layer (by alias, or the layer itself)."""

    def __init__(
        self,
        layer: str | BaseChannelLayer | None = None,
        *,
        request_layer: str | BaseChannelLayer | None = None,
    ) -> None:
        self.layer = _layer_for(layer)
        if request_layer is None and layer is None:
            from a2a_toolcall.conf import get_setting

            request_layer = get_setting("REQUEST_CHANNEL_LAYER")
        self.request_layer = self.layer if request_layer is None else _layer_for(request_layer)

    async def publish(self, topic: str, cid: str, payload: dict[str, Any], *, seq: int) -> Envelope:
        """Send one envelope to the group of ``topic`` for task ``cid``."""
        envelope = Envelope(topic=topic, cid=cid, seq=seq, ts=time.time(), payload=payload)
        check_msgpack_safe(payload)
        await self.send_envelope(envelope)
        return envelope

    async def send_envelope(self, envelope: Envelope) -> None:
        """Send (or send again) an envelope as it is, to its topic's group."""
        group = group_name(envelope.topic, envelope.cid)
        async with _operation_slot(self.layer):
            await self.layer.group_send(group, envelope.to_message())

    async def send_envelopes(self, envelopes: list[Envelope]) -> None:
        """Send envelopes of one topic and task, in order, as one layer message."""
        if len(envelopes) == 1:
            await self.send_envelope(envelopes[0])
            return
        first = envelopes[0]
        message = {
            "type": BATCH_TYPE,
            "topic": first.topic,
            "cid": first.cid,
            "items": [[e.seq, e.ts, e.payload] for e in envelopes],
        }
        async with _operation_slot(self.layer):
            await self.layer.group_send(group_name(first.topic, first.cid), message)

    async def send_request(self, request: dict[str, Any]) -> None:
        """Queue work for the runtime (one worker takes it)."""
        check_msgpack_safe(request, "request")
        message = {"type": "a2a.request", "request": request}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _REQUEST_QUEUE_WAIT
        delay = 0.005
        layer = self.request_layer
        one_trip = _one_trip_sendable(layer)
        while True:
            try:
                async with _operation_slot(layer):
                    if one_trip:
                        await _send_in_one_trip(layer, REQUEST_CHANNEL, message)
                    else:
                        await layer.send(REQUEST_CHANNEL, message)
                return
            except ChannelFull:
                # The runtime takes work as fast as it can; a full queue is a burst. Wait for
                # room rather than drop the request, up to a limit.
                if loop.time() + delay > deadline:
                    raise ChannelFull(
                        f"the work queue {REQUEST_CHANNEL!r} stayed full for "
                        f"{_REQUEST_QUEUE_WAIT:g} s: the agent runtime is not keeping up. Start "
                        "more workers, or raise the channel layer's capacity."
                    ) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def claim(self, cid: str) -> bool:
        """Claim task ``cid`` for this runtime; False if another delivery already claimed it.

        A Redis channel layer can deliver one message to two readers of a shared channel (its
        crash-recovery "backup" queue is put back by whichever reader polls next:
        django/channels_redis#163), so runtimes claim each task with ``SET NX`` before running
        it. Other layers cannot reach another process; there a claim is remembered in-process.
        """
        layer = self.request_layer
        if not _is_redis_core(layer):
            claimed = _local_claims.setdefault(layer, collections.OrderedDict())
            if cid in claimed:
                return False
            claimed[cid] = None
            if len(claimed) > _LOCAL_CLAIMS_KEPT:
                claimed.popitem(last=False)
            return True
        key = f"{layer.prefix}:a2a-claim:{cid}"
        connection = layer.connection(layer.consistent_hash(key))
        async with _operation_slot(layer):
            return bool(await connection.set(key, b"1", nx=True, ex=_CLAIM_SECONDS))

    async def receive_request(self) -> dict[str, Any]:
        """Wait for the next work request (competing with other runtimes on the same layer)."""
        while True:
            message = await self.request_layer.receive(REQUEST_CHANNEL)
            request = message.get("request")
            if message.get("type") == "a2a.request" and isinstance(request, dict):
                return request
            logger.warning("dropping a malformed work request: %.200r", message)

    def subscribe(
        self,
        cid: str,
        topics: Iterable[str],
        *,
        on_envelope: Callable[[Envelope], None] | None = None,
        offer: Callable[[Envelope], bool] | None = None,
    ) -> Subscription:
        """Subscribe to ``topics`` of task ``cid``: ``async with bus.subscribe(...) as sub``.

        ``on_envelope``: where the layer can call back (the app's in-memory layer), each
        envelope is passed to it as it arrives and none is to be read with ``get``
        (:attr:`Subscription.calls_back`); elsewhere it is ignored, and the subscriber reads.
        ``offer``: on such a layer, an envelope arriving while ``get`` waits is offered to it
        first, in the sender's call (:attr:`Subscription.offers`); elsewhere it is ignored."""
        return Subscription(self.layer, cid, tuple(topics), on_envelope, offer)

    def publisher(self, cid: str, *, first_seq: int = 1) -> TaskPublisher:
        """A publisher for task ``cid`` that numbers its envelopes from ``first_seq``."""
        return TaskPublisher(self, cid, first_seq=first_seq)


PUBLISH_WINDOW: Final = 256
"""Unacknowledged envelopes a task's publisher sends before it waits (consumers ack every 64),
across processes."""
PACE_WINDOW: Final = 2
"""Unacknowledged envelopes a task's publisher on an in-memory layer has while the task's
consumer paces it (:meth:`TaskStream.set_window`).

The consumer is in the same process and acknowledges by a call, not a message
(:meth:`TaskStream.acknowledge`); the recorder acknowledges what the task's streams have
taken. The agent is so held a couple of envelopes ahead of its streams: under load it slows to
what they carry rather than queueing frames behind them, and a frame's time from the agent to
the client stays a couple of frames' worth (docs/benchmarks.md)."""
ACK_EVERY: Final = 64
"""Envelopes a stream's consumer takes between two acknowledgements."""
YIELD_EVERY: Final = 8
"""Envelopes a publisher sends between two turns it gives the event loop (``pause``)."""
BATCH: Final = 64
"""Most envelopes a publisher sends in one layer message."""
PUBLISH_WINDOW_WAIT: Final = 5.0
"""Seconds a publisher waits for an acknowledgement before it sends anyway."""


def _group_send_nowait(layer: BaseChannelLayer) -> Any:
    """The layer's ``group_send_nowait`` if it is the app's in-memory layer's own, else None.

    Only then is it the same as ``group_send``: a subclass or a wrapper that changes
    ``group_send`` (tests drop messages that way) must be published to through it.
    """
    from a2a_toolcall.layers import InMemoryChannelLayer as Fast

    if isinstance(layer, Fast) and type(layer).group_send is Fast.group_send:
        return layer.group_send_nowait
    return None


_local_publishers: weakref.WeakValueDictionary[str, TaskPublisher] = weakref.WeakValueDictionary()
"""The publishers on in-memory layers, by task: their consumers acknowledge by a call."""
_local_consumers: weakref.WeakValueDictionary[str, TaskStream] = weakref.WeakValueDictionary()
"""The consumers on in-memory layers, by task: a publisher kept waiting asks them again."""

PACE_CHECK: Final = 0.05
"""Seconds a publisher on an in-memory layer waits for an acknowledgement before it asks its
consumer to look again (:meth:`TaskStream.stalled`): a stream whose client stopped reading no
longer holds the agent back, and nothing else would say so."""


class _RoomWaits:
    """The publishers of one event loop waiting for room in their window, looked at every
    :data:`PACE_CHECK` by one timer (rather than a timer per wait): a consumer is asked to
    look again, a wait past its ``window_wait`` is given up."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[TaskPublisher, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, publisher: TaskPublisher) -> None:
        self.waiting[publisher] = self.loop.time()
        if self._timer is None:
            self._timer = self.loop.call_later(PACE_CHECK, self._sweep)

    def discard(self, publisher: TaskPublisher) -> None:
        self.waiting.pop(publisher, None)

    def _sweep(self) -> None:
        self._timer = None
        now = self.loop.time()
        for publisher, since in list(self.waiting.items()):
            if now - since >= publisher.window_wait:
                # No acknowledgement in time (a consumer that is gone, or that never acks):
                # go on; the consumer's side detects what is missing.
                publisher._room.set()
            elif now - since >= PACE_CHECK and (consumer := _local_consumers.get(publisher.cid)):
                consumer.stalled()
        if self.waiting:
            self._timer = self.loop.call_later(PACE_CHECK, self._sweep)


_room_waits_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _RoomWaits] = (
    weakref.WeakKeyDictionary()
)


def _room_waits() -> _RoomWaits:
    loop = asyncio.get_running_loop()
    waits = _room_waits_by_loop.get(loop)
    if waits is None:
        waits = _room_waits_by_loop[loop] = _RoomWaits(loop)
    return waits


def _is_local(layer: BaseChannelLayer) -> bool:
    """True for a layer whose every member is in this process (an in-memory one)."""
    return isinstance(layer, InMemoryChannelLayer)


def _fitting_window(window: int | None, layer: BaseChannelLayer) -> int | None:
    """``window``, made to fit an in-memory layer's channels: each consumer is a channel of
    its own there, which drops what arrives once it holds ``capacity`` messages, and frames
    dropped that way wait for the consumer's probe (seconds) to be sent again. Above an
    acknowledgement's worth, so the window always opens again."""
    capacity = getattr(layer, "capacity", None)
    if (
        window is None
        or not isinstance(layer, InMemoryChannelLayer)
        or not isinstance(capacity, int)
    ):
        return window
    return min(window, max(ACK_EVERY + 1, capacity - 8))


def _take_run(queue: list[Envelope]) -> list[Envelope]:
    """Take the envelopes of one topic from the front of ``queue`` (at most ``BATCH``)."""
    topic = queue[0].topic
    end = 1
    while end < len(queue) and end < BATCH and queue[end].topic == topic:
        end += 1
    run = queue[:end]
    del queue[:end]
    return run


class TaskPublisher:
    """Publishes the envelopes of one task with consecutive ``seq`` numbers, and can resend them.

    :meth:`publish` numbers an envelope, keeps it and queues it; a sender task of the publisher
    sends what is queued in ``seq`` order, several envelopes of one topic in a single layer
    message when they queued up while a send was on its way (a Redis round trip). Publishing
    thus never waits for the layer: a cancelled agent cannot cut a send in half, and an agent
    that publishes fast costs one layer message per batch rather than per envelope. On the
    app's in-memory layer an envelope is put on its consumers' queues at once instead
    (:meth:`publish_nowait`).

    Every envelope is kept until a consumer acknowledges it (:meth:`acknowledge`), so a gap
    can be filled (:meth:`resend`): a send that fails is logged and left to that.

    Flow control: once ``window`` envelopes are unacknowledged, :meth:`publish` waits for an
    acknowledgement (at most ``window_wait`` seconds) before it returns, so the agent's next
    event is made only once there is room for it. An agent can then never outrun its consumer
    by more than a window: on a Redis layer, a producer faster than the consuming process would
    otherwise fill the channel past its capacity, Redis would drop messages, and the resends
    would add to the flood. On an in-memory layer the consumer acknowledges by a call
    (:meth:`TaskStream.acknowledge`) and may narrow the window (:meth:`TaskStream.set_window`:
    the recorder does to :data:`PACE_WINDOW` while a stream paces the agent).
    """

    __slots__ = (
        "__weakref__",
        "_lock",
        "_outbox",
        "_queue",
        "_room",
        "_send_nowait",
        "_sender",
        "_sent_seq",
        "_seq",
        "bus",
        "cid",
        "closed",
        "last_seq",
        "window",
        "window_wait",
    )

    def __init__(
        self,
        bus: Bus,
        cid: str,
        *,
        first_seq: int = 1,
        window: int | None = PUBLISH_WINDOW,
        window_wait: float = PUBLISH_WINDOW_WAIT,
    ) -> None:
        group_name(TOPIC_RESPONSE, cid)  # validate the cid once, up front
        self.bus = bus
        self.cid = cid
        self._seq = itertools.count(first_seq)
        self._lock = asyncio.Lock()  # held while sending: batches, resends and syncs in order
        self.last_seq = first_seq - 1  # the last seq published
        self._sent_seq = first_seq - 1  # the last seq handed to the layer
        # Lists, not deques: an idle task holds two empty lists rather than two 64-slot blocks,
        # and they are short (the window) and emptied from the front by slices.
        self._outbox: list[Envelope] = []
        self._queue: list[Envelope] = []
        self._sender: asyncio.Task[None] | None = None
        self.window = _fitting_window(window, bus.layer)
        self.window_wait = window_wait
        self.closed = False
        self._room = Flag()
        self._room.set()
        self._send_nowait = _group_send_nowait(bus.layer)
        if _is_local(bus.layer):
            _local_publishers[cid] = self
            consumer = _local_consumers.get(cid)
            if consumer is not None and consumer.window is not None:
                self.window = _fitting_window(consumer.window, bus.layer)

    def _number(self, topic: str, payload: dict[str, Any]) -> Envelope:
        check_msgpack_safe(payload)
        seq = next(self._seq)
        envelope = Envelope(topic=topic, cid=self.cid, seq=seq, ts=time.time(), payload=payload)
        self.last_seq = seq
        self._outbox.append(envelope)
        return envelope

    def publish_nowait(self, topic: str, payload: dict[str, Any]) -> Envelope | None:
        """Publish the next envelope at once if that cannot suspend, else None (nothing done).

        It can on :class:`a2a_toolcall.layers.InMemoryChannelLayer`, whose ``group_send_nowait``
        puts the message on its members' queues without waiting, with nothing else being sent:
        no task or loop turn is spent on the envelope. The window is the caller's to mind.
        """
        send_nowait = self._send_nowait
        if send_nowait is None or self._queue or self._lock.locked():
            return None
        envelope = self._number(topic, payload)
        send_nowait(group_name(topic, self.cid), envelope.to_message())
        self._sent_seq = envelope.seq
        return envelope

    async def publish(self, topic: str, payload: dict[str, Any]) -> Envelope:
        """Publish the next envelope of this task (it is sent in the background, in order);
        with the window full, return once a consumer has acknowledged some."""
        envelope = self.publish_nowait(topic, payload)
        if envelope is None:
            envelope = self._number(topic, payload)
            self._queue.append(envelope)
            if self._sender is None:
                # A fresh context: the sender outlives whatever (a request) published first.
                self._sender = asyncio.get_running_loop().create_task(
                    self._send_queued(), context=contextvars.Context()
                )
        if self.window is not None and len(self._outbox) >= self.window:
            # Waited for after the envelope went, not before the next: what the agent makes
            # next is made once there is room for it.
            await self._wait_for_room()
        else:
            await self.pause()
        return envelope

    async def _wait_for_room(self) -> None:
        self._room.clear()
        if self.cid in _local_publishers:
            # Watched by the loop's sweep (no timer per wait): a consumer asked to look again
            # every PACE_CHECK, the wait given up after window_wait.
            waits = _room_waits()
            waits.add(self)
            try:
                await self._room.wait()
            finally:
                waits.discard(self)
            return
        with contextlib.suppress(TimeoutError):
            # No acknowledgement in time (a consumer that is gone, or that never acks): go
            # on; the consumer's side detects what is missing.
            async with asyncio.timeout(self.window_wait):
                await self._room.wait()

    def set_window(self, window: int) -> None:
        """Let ``window`` envelopes be unacknowledged from now on (the consumer's choice)."""
        fitting = _fitting_window(window, self.bus.layer)
        if fitting == self.window:
            return
        self.window = fitting
        if fitting is None or len(self._outbox) < fitting:
            self._room.set()

    async def _send_queued(self) -> None:
        try:
            while self._queue:
                async with self._lock:
                    batch = _take_run(self._queue)
                    try:
                        await self.bus.send_envelopes(batch)
                    except Exception:
                        # Kept in the outbox: the consumer finds the gap and asks again.
                        logger.warning(
                            "task %s: could not send envelopes %d-%d; they wait for a resend",
                            self.cid,
                            batch[0].seq,
                            batch[-1].seq,
                            exc_info=True,
                        )
                    self._sent_seq = batch[-1].seq
        finally:
            self._sender = None

    async def flush(self) -> None:
        """Wait until everything published so far has been handed to the layer."""
        while self._sender is not None:
            await asyncio.shield(self._sender)

    async def pause(self) -> None:
        """Let the consumers run: every ``YIELD_EVERY`` envelopes, a turn of the event loop.

        Publishing never waits for the layer, so without this an agent publishing in a tight
        loop would fill its consumers' queues before they ever ran; a turn per envelope, though,
        would wake every consumer for each one, when they can take several at a time.
        """
        if self.last_seq % YIELD_EVERY == 0:
            await asyncio.sleep(0)

    async def resend(self, from_seq: int) -> int:
        """Send again every kept envelope from ``from_seq`` on that was sent already; if there
        is none, a ``sync``.

        Returns how many envelopes were sent again.
        """
        async with self._lock:
            again = [e for e in self._outbox if from_seq <= e.seq <= self._sent_seq]
            left = list(again)
            while left:  # batched as they were sent: runs of one topic
                await self.bus.send_envelopes(_take_run(left))
            if not again:
                await self._send_sync()
        return len(again)

    async def sync(self) -> None:
        """Answer a probe: one ``sync`` envelope saying how far this task has been sent.

        It goes out after every envelope it counts (the lock orders it), and a layer delivers
        one sender's messages to one channel in order, so a consumer that receives it without
        some ``seq <= lastSeq`` knows that envelope was lost, not late.
        """
        async with self._lock:
            await self._send_sync()

    async def _send_sync(self) -> None:
        sync = Envelope(TOPIC_SYNC, self.cid, 0, time.time(), {"lastSeq": self._sent_seq})
        await self.bus.send_envelope(sync)

    def acknowledge(self, seq: int) -> None:
        """Forget the envelopes up to ``seq``: a consumer has them."""
        outbox = self._outbox
        if outbox and outbox[0].seq <= seq:
            # Envelopes are kept in seq order: what seq covers is a prefix.
            end = 1
            while end < len(outbox) and outbox[end].seq <= seq:
                end += 1
            del outbox[:end]
        if self.window is None or len(outbox) < self.window:
            self._room.set()

    @property
    def kept(self) -> int:
        """How many envelopes are kept for resending."""
        return len(self._outbox)

    def close(self) -> None:
        """The runtime is done with the task (it ended, or was stopped): the publisher no
        longer answers for it (:meth:`TaskStream.get` probes by message again)."""
        self.closed = True

    @property
    def sent_seq(self) -> int:
        """The last seq handed to the layer."""
        return self._sent_seq


class Subscription:
    """Membership of one fresh layer channel in the groups of some topics of one task.

    Entering joins every group; leaving (normally, by an exception, by cancellation) leaves every
    group and ends the pending receive, so no membership outlives the subscriber. One receive
    is kept pending across :meth:`get` timeouts, and it is ended by a wake-up message rather
    than cancelled: cancelling a layer ``receive()`` loses messages on the Redis layers.

    With ``on_envelope``, on a layer that can call back (``new_callback_channel``: the app's
    in-memory layer), the channel is one whose messages are handed to ``on_envelope``, an
    envelope at a time, instead of queued: nothing reads, no task waits (:attr:`calls_back`;
    :meth:`get` is then refused). What ``on_envelope`` raises is logged.

    With ``offer``, on such a layer, the subscriber reads with :meth:`get` as usual, but an
    envelope that arrives while a :meth:`get` is waiting and nothing is ahead of it is first
    offered to ``offer``, at once, inside the publisher's send: ``offer(envelope)`` returns
    True when it took the envelope (then :meth:`get` never sees it), False, having done
    nothing, when it leaves it to :meth:`get`. The subscriber so handles what it can without
    a loop turn and a wake-up of its own (:attr:`offers`). What ``offer`` raises is logged and
    raised by the next :meth:`get`.
    """

    __slots__ = (
        "_alarm",
        "_batched",
        "_closed",
        "_failure",
        "_joined",
        "_offer",
        "_on_envelope",
        "_pending",
        "_waiter",
        "_woken",
        "calls_back",
        "channel",
        "cid",
        "groups",
        "layer",
        "offers",
    )

    def __init__(
        self,
        layer: BaseChannelLayer,
        cid: str,
        topics: tuple[str, ...],
        on_envelope: Callable[[Envelope], None] | None = None,
        offer: Callable[[Envelope], bool] | None = None,
    ) -> None:
        if not topics:
            raise ValueError("subscribe to at least one topic")
        if on_envelope is not None and offer is not None:
            raise ValueError("a subscription takes on_envelope or offer, not both")
        self.layer = layer
        self.cid = cid
        self.groups = [group_name(topic, cid) for topic in topics]
        self.channel: str | None = None
        self._joined: list[str] = []
        self._pending: asyncio.Task[dict[str, Any]] | None = None
        self._batched: list[Envelope] = []  # at most a batch, emptied from the front
        self._closed = False
        self._woken = False
        self._alarm = Alarm()
        self._on_envelope = on_envelope
        self._offer = offer
        self._waiter: asyncio.Future[None] | None = None  # a get() waiting (offers)
        self._failure: BaseException | None = None  # what offer raised, for get() (offers)
        self.calls_back = False
        """Envelopes go to ``on_envelope`` as they arrive; :meth:`get` is not for this one."""
        self.offers = False
        """Envelopes arriving while :meth:`get` waits are offered to ``offer`` first."""

    async def wake(self) -> None:
        """Make a :meth:`get` that is waiting (or the next one) return None now: its caller
        has something else to look at."""
        if self._closed or self.channel is None or self.calls_back:
            return
        self._woken = True
        if self.offers:
            self._ring()
            return
        await self.layer.send(self.channel, {"type": _WAKEUP_TYPE})

    async def __aenter__(self) -> Subscription:
        calling = getattr(self.layer, "new_callback_channel", None)
        if self._on_envelope is not None and calling is not None:
            self.channel = calling(self._called_back)
            self.calls_back = True
        elif self._offer is not None and calling is not None:
            self.channel = calling(self._offered, immediate=True)
            self.offers = True
        else:
            async with _operation_slot(self.layer):
                self.channel = await self.layer.new_channel()
        try:
            for group in self.groups:
                async with _operation_slot(self.layer):
                    await self.layer.group_add(group, self.channel)
                self._joined.append(group)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Leave every group and end the pending receive. Idempotent."""
        if self._closed:
            return
        self._alarm.cancel()
        self._closed = True
        joined, self._joined = self._joined, []
        assert self.channel is not None
        for group in joined:
            try:
                async with _operation_slot(self.layer):
                    await self.layer.group_discard(group, self.channel)
            except Exception:
                logger.exception("could not leave group %s", group)
        if self.calls_back or self.offers:
            self.layer.discard_callback(self.channel)  # type: ignore[attr-defined]
            self._ring()
            return
        pending, self._pending = self._pending, None
        if pending is not None:
            await self._drain(pending)
        discard = getattr(self.layer, "discard_waiter", None)
        if discard is not None:
            discard(self.channel)

    def _called_back(self, message: dict[str, Any]) -> None:
        """A message on the callback channel: its envelopes of this task to ``on_envelope``."""
        if self._closed or message.get("type") == _WAKEUP_TYPE:
            return
        assert self._on_envelope is not None
        for envelope in self._envelopes(message):
            try:
                self._on_envelope(envelope)
            except Exception:
                logger.exception("task %s: could not handle %.200r", self.cid, envelope)

    def _offered(self, message: dict[str, Any]) -> None:
        """A message on the channel of an offering subscription (in the sender's call): each
        envelope offered while a get() waits with nothing ahead of it, else kept for get()."""
        if self._closed or message.get("type") == _WAKEUP_TYPE:
            return
        offer = self._offer
        assert offer is not None
        for envelope in self._envelopes(message):
            waiter = self._waiter
            if not self._batched and waiter is not None and not waiter.done():
                try:
                    if offer(envelope):
                        continue
                except Exception as exc:
                    logger.exception("task %s: could not take %.200r", self.cid, envelope)
                    self._failure = exc
            self._batched.append(envelope)
            self._ring()

    def _ring(self) -> None:
        """End the wait of a get() of an offering subscription (it looks again)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _get_offered(self, timeout: float | None) -> Envelope | None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self._failure is not None:
                raise self._failure
            if self._batched:
                return self._batched.pop(0)
            if self._woken:
                self._woken = False
                return None
            if self._closed or (deadline is not None and loop.time() >= deadline):
                return None
            waiter = self._waiter = loop.create_future()
            if deadline is not None:
                self._alarm.set(loop, deadline, self._ring)
            try:
                await waiter
            finally:
                self._waiter = None
                self._alarm.clear()

    async def _drain(self, pending: asyncio.Task[dict[str, Any]]) -> None:
        # End the pending receive by sending our own channel a wake-up message rather than by
        # cancelling it: a cancelled receive() loses buffered messages (PubSub, Redis core) and
        # can keep channels_redis's shared receive loop busy long after the cancel.
        assert self.channel is not None
        channel = self.channel
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _DRAIN_SECONDS
        current: asyncio.Task[dict[str, Any]] | None = pending
        try:
            async with _operation_slot(self.layer):
                await self.layer.send(channel, {"type": _WAKEUP_TYPE})
            while current is not None:
                done, _ = await asyncio.wait({current}, timeout=max(0.0, deadline - loop.time()))
                if not done:
                    break
                message = current.result()
                current = None
                if message.get("type") != _WAKEUP_TYPE:
                    current = asyncio.ensure_future(self.layer.receive(channel))
        except Exception:
            logger.exception("could not end the pending receive on %s", channel)
        finally:
            if current is not None and not current.done():
                current.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await current

    async def get(self, timeout: float | None = None) -> Envelope | None:
        """The next envelope of this task, or None if ``timeout`` seconds pass first."""
        if self._closed or self.channel is None:
            raise RuntimeError("the subscription is not open")
        if self.calls_back:
            raise RuntimeError("this subscription hands its envelopes to on_envelope")
        if self.offers:
            return await self._get_offered(timeout)
        if self._batched:
            return self._batched.pop(0)
        nowait = getattr(self.layer, "receive_nowait", None)
        waiter_for = getattr(self.layer, "message_waiter", None)
        while True:
            message = None
            if self._pending is None and nowait is not None:
                # A message already waiting is taken at once, without a receive task.
                message = nowait(self.channel)
                if message is None and waiter_for is not None:
                    # Nothing yet: wait on a future the layer completes at the next message.
                    if not await self._await_message(waiter_for(self.channel), timeout):
                        return None
                    continue
            if message is None:
                if self._pending is None:
                    self._pending = asyncio.ensure_future(self.layer.receive(self.channel))
                if not self._pending.done():
                    done, _ = await asyncio.wait({self._pending}, timeout=timeout)
                    if not done:
                        return None
                task, self._pending = self._pending, None
                message = task.result()
            kind = message.get("type")
            if kind == _WAKEUP_TYPE:
                if self._woken:
                    self._woken = False
                    return None
                continue
            envelopes = self._envelopes(message)
            if not envelopes:
                continue
            self._batched.extend(envelopes[1:])
            return envelopes[0]

    def _envelopes(self, message: Mapping[str, Any]) -> list[Envelope]:
        """The envelopes of a layer message (an envelope, or a batch of one task's), none if
        it is malformed or of another task (either is logged)."""
        try:
            if message.get("type") == BATCH_TYPE:
                envelopes = envelopes_from_batch(message)
            else:
                envelopes = [Envelope.from_message(message)]
        except ValueError as exc:
            logger.warning("dropping a malformed bus message (%s): %.200r", exc, message)
            return []
        if envelopes and envelopes[0].cid != self.cid:  # a batch is of one task
            logger.error(
                "dropping an envelope of task %s received on a subscription of task %s",
                envelopes[0].cid,
                self.cid,
            )
            return []
        return envelopes

    async def _await_message(self, waiter: asyncio.Future[None], timeout: float | None) -> bool:
        """Wait for ``waiter`` (a layer's ``message_waiter``); False when ``timeout`` passes."""
        if waiter.done():
            return True
        loop = asyncio.get_running_loop()
        timed_out = False
        if timeout is not None:

            def ring() -> None:
                nonlocal timed_out
                if not waiter.done():
                    timed_out = True
                    waiter.set_result(None)

            self._alarm.set(loop, loop.time() + timeout, ring)
        try:
            await waiter
            return not timed_out
        finally:
            self._alarm.clear()
            if waiter.cancelled() or timed_out:
                self.layer.discard_waiter(self.channel)  # type: ignore[attr-defined]

    def __aiter__(self) -> AsyncIterator[Envelope]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Envelope]:
        while True:
            envelope = await self.get()
            assert envelope is not None  # no timeout given
            yield envelope


ATTEMPT_SEQ_SPAN: Final = 1 << 32
"""Each run of a task numbers its envelopes from its own base: a retry's or a resume's never
collide with a lost run's late ones."""


def first_seq(attempt: int) -> int:
    """The first envelope ``seq`` of run ``attempt`` (1-based) of a task."""
    return (max(1, attempt) - 1) * ATTEMPT_SEQ_SPAN + 1


class RuntimeLost(Exception):
    """The runtime running a task stopped answering (or never picked the task up)."""


class TaskStream:
    """A task's envelopes from the runtime, exactly once and in ``seq`` order, over a lossy bus.

    Out-of-order envelopes wait in a buffer while the runtime is asked to resend what the gap
    shows missing; duplicates are dropped; when nothing arrives for ``probe_after`` seconds the
    runtime is probed and answers with a ``sync`` (how far it has published), which arrives
    after everything published before it: only what is then still missing is asked for again.
    A consumer that is merely behind (a busy process draining its queue) so costs the runtime
    one small message per probe, never a resend of the whole task. :meth:`get` raises
    :class:`RuntimeLost` if nothing at all is heard for ``first_wait`` seconds before the first
    envelope, or for ``lost_after`` seconds later. Open it *before* the work is requested.
    Envelopes of the ``also`` topics (e.g. the control topics, to watch what clients ask of the
    runtime) are passed through as they arrive, outside the ``seq`` order.

    Acknowledgements: across processes, a message every ``ack_every`` envelopes delivered. On
    an in-memory layer, a call on the task's publisher (:meth:`acknowledge`) for every
    envelope delivered or, when ``paced``, for what the consumer says it has passed on: the
    recorder acknowledges what the task's streams have taken, which holds the agent a
    :data:`PACE_WINDOW` ahead of them.
    """

    __slots__ = (
        "__weakref__",
        "_asked_at",
        "_control_seq",
        "_early",
        "_expired",
        "_heard_anything",
        "_heard_at",
        "_resend_asked_at",
        "_subscription",
        "ack_every",
        "also",
        "bus",
        "cid",
        "expected",
        "first_wait",
        "local",
        "lost_after",
        "on_stall",
        "paced",
        "probe_after",
        "take_now",
        "window",
    )

    def __init__(
        self,
        bus: Bus,
        cid: str,
        *,
        probe_after: float = 2.0,
        lost_after: float = 30.0,
        first_wait: float = 120.0,
        ack_every: int = ACK_EVERY,
        also: tuple[str, ...] = (),
        paced: bool = False,
    ) -> None:
        self.bus = bus
        self.cid = cid
        self.also = also
        self.local = _is_local(bus.layer)
        """Acknowledgements are calls on this process's publisher, not messages."""
        self.paced = paced
        self.on_stall: Callable[[], None] | None = None
        """Paced: called when the publisher has waited :data:`PACE_CHECK` for an
        acknowledgement (the consumer looks again at what holds it back)."""
        self.window: int | None = None
        """The window the consumer chose for the task's publisher (:meth:`set_window`)."""
        self.take_now: Callable[[Envelope], bool] | None = None
        """On the app's in-memory layer: the consumer's handler of the next envelope, called
        inside the publisher's send while the consumer waits in :meth:`get` (nothing ahead
        of the envelope, nothing missing before it): True when it handled the envelope (then
        :meth:`get` does not return it), False, having done nothing, to have it from
        :meth:`get` as usual. The consumer so handles what it can in the publisher's turn,
        with no wake-up of its own."""
        if self.local:
            _local_consumers[cid] = self
        self.expected = 1
        self.probe_after = probe_after
        self.lost_after = lost_after
        self.first_wait = first_wait
        self.ack_every = ack_every
        self._subscription = bus.subscribe(cid, (*STREAM_TOPICS, *also), offer=self._offer)
        self._early: dict[int, Envelope] = {}
        self._control_seq = itertools.count(1)
        self._heard_at = 0.0
        self._asked_at = 0.0
        self._resend_asked_at = -float("inf")
        self._heard_anything = False
        self._expired: str | None = None

    async def expire(self, reason: str) -> None:
        """The runtime is known to be gone (its lease expired): :meth:`get` raises
        :class:`RuntimeLost` with ``reason`` at once."""
        self._expired = reason
        await self._subscription.wake()

    def restart(self, first_seq: int, first_wait: float) -> None:
        """Expect a new run of the task (another runtime, numbering from ``first_seq``):
        envelopes of the old run still on the way are dropped as stale."""
        self.expected = first_seq
        self._early.clear()
        self._expired = None
        self._heard_anything = False
        self.first_wait = first_wait
        self._heard_at = self._asked_at = asyncio.get_running_loop().time()

    async def __aenter__(self) -> TaskStream:
        await self._subscription.__aenter__()
        self._heard_at = self._asked_at = asyncio.get_running_loop().time()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._subscription.aclose()

    async def _control(self, payload: dict[str, Any]) -> None:
        try:
            await self.bus.publish(TOPIC_RESEND, self.cid, payload, seq=next(self._control_seq))
        except Exception:
            logger.exception("task %s: could not reach the runtime", self.cid)

    async def get(self, timeout: float | None = None) -> Envelope | None:
        """The next envelope in ``seq`` order, or None when ``timeout`` passes first."""
        loop = asyncio.get_running_loop()
        until = None if timeout is None else loop.time() + timeout
        while True:
            ready = self._early.pop(self.expected, None)
            if ready is not None:
                return await self._deliver(ready)
            if self._expired is not None:
                reason, self._expired = self._expired, None
                raise RuntimeLost(reason)
            now = loop.time()
            patience = self.lost_after if self._heard_anything else self.first_wait
            if now - self._heard_at > patience:
                raise RuntimeLost(
                    f"no word from the agent runtime for {now - self._heard_at:.0f} s"
                    if self._heard_anything
                    else f"no agent runtime picked the task up within {patience:g} s"
                )
            if now - max(self._heard_at, self._asked_at) >= self.probe_after:
                self._asked_at = now
                publisher = self._local_publisher()
                if publisher is not None and not publisher.closed:
                    # The runtime publishes in this process: its publisher answers the probe
                    # (no message, no round trip, nothing for an idle stream to send).
                    self._heard_at = now
                    self._heard_anything = True
                    if publisher.sent_seq >= self.expected:
                        self._resend_asked_at = now
                        await self._control({"from": self.expected})
                else:
                    # "from" as well: a runtime of an earlier release, which knows no probe,
                    # answers it with a resend.
                    await self._control({"probe": True, "from": self.expected})
            wait = self.probe_after - (loop.time() - max(self._heard_at, self._asked_at))
            if until is not None:
                if loop.time() >= until:
                    return None
                wait = min(wait, until - loop.time())
            envelope = await self._subscription.get(timeout=max(0.0, wait))
            if envelope is None:
                continue
            if envelope.topic in self.also:
                return envelope  # not from the runtime: passed through as it comes
            self._heard_at = loop.time()
            self._heard_anything = True
            if envelope.topic == TOPIC_SYNC:
                last = envelope.payload.get("lastSeq")
                missing = isinstance(last, int) and last >= self.expected
                if missing and loop.time() - self._resend_asked_at > self.probe_after:
                    # Everything up to lastSeq was published before this sync: what has not
                    # arrived by now was lost on the way.
                    self._resend_asked_at = self._asked_at = loop.time()
                    await self._control({"from": self.expected})
                continue
            if envelope.seq < self.expected or envelope.seq in self._early:
                continue  # a duplicate (a resend of something we have)
            if envelope.seq > self.expected:
                self._early[envelope.seq] = envelope
                if len(self._early) == 1 or loop.time() - self._asked_at > self.probe_after:
                    self._resend_asked_at = self._asked_at = loop.time()
                    await self._control({"from": self.expected})
                continue
            return await self._deliver(envelope)

    def _offer(self, envelope: Envelope) -> bool:
        """An envelope arriving while :meth:`get` waits (the subscription's ``offer``): to
        :attr:`take_now` if it is the next one of the runtime's, else left to :meth:`get`."""
        take = self.take_now
        if (
            take is None
            or not self.local
            or envelope.seq != self.expected
            or self._early
            or self._expired is not None
            or envelope.topic in self.also
            or envelope.topic == TOPIC_SYNC
            or not take(envelope)
        ):
            return False
        self._heard_at = asyncio.get_running_loop().time()
        self._heard_anything = True
        self.expected = envelope.seq + 1
        if not self.paced:
            self.acknowledge(envelope.seq)
        return True

    async def _deliver(self, envelope: Envelope) -> Envelope:
        self.expected = envelope.seq + 1
        if self.local:
            if not self.paced:
                self.acknowledge(envelope.seq)
        elif envelope.seq % self.ack_every == 0:
            await self._control({"ack": envelope.seq})
        return envelope

    def stalled(self) -> None:
        """The publisher has waited a while for an acknowledgement."""
        if self.on_stall is not None:
            self.on_stall()

    def acknowledge(self, seq: int) -> None:
        """On an in-memory layer: the consumer has everything up to ``seq``; the publisher may
        forget it and publish on (across processes, acknowledgements are messages every
        ``ack_every`` envelopes, sent as they are delivered)."""
        publisher = self._local_publisher()
        if publisher is not None:
            publisher.acknowledge(seq)

    def set_window(self, window: int) -> None:
        """On an in-memory layer: let the publisher have ``window`` envelopes unacknowledged
        (a paced consumer's choice: :data:`PACE_WINDOW` while it paces the agent to its
        streams, more when nothing needs it to); a publisher made later starts with it."""
        self.window = window
        publisher = self._local_publisher()
        if publisher is not None:
            publisher.set_window(window)

    def _local_publisher(self) -> TaskPublisher | None:
        if not self.local:
            return None
        publisher = _local_publishers.get(self.cid)
        if publisher is not None and publisher.bus.layer is self.bus.layer:
            return publisher
        return None

    async def finish(self) -> None:
        """Tell the runtime everything arrived, so it can forget the task."""
        await self._control({"done": True, "ack": self.expected - 1})
