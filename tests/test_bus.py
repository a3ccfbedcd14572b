"""The bus on the three channel layers: in-memory, Redis (core) and Redis PubSub, for real."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from decimal import Decimal
from typing import Any

import pytest
import redis.asyncio as aioredis
from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer, InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings

from a2a_toolcall import bus as b
from a2a_toolcall.bus import (
    REQUEST_CHANNEL,
    TASK_TOPICS,
    TOPIC_PROGRESS,
    TOPIC_RESPONSE,
    TOPIC_TOOLFRAME,
    Bus,
    BusPayloadError,
    Envelope,
    check_msgpack_safe,
    group_name,
)
from a2a_toolcall.layers import InMemoryChannelLayer as FastInMemoryChannelLayer


async def memberships(layer: BaseChannelLayer, group: str) -> set[str]:
    """The channels the layer itself holds as members of ``group``."""
    if isinstance(layer, InMemoryChannelLayer):
        return set(layer.groups.get(group, {}))
    if isinstance(layer, RedisChannelLayer):
        client = aioredis.from_url(settings.REDIS_URL)
        try:
            members = await client.zrange(layer._group_key(group), 0, -1)
        finally:
            await client.aclose()
        return {m.decode() for m in members}
    assert isinstance(layer, RedisPubSubChannelLayer)
    loop_layer = layer._get_layer()
    return set(loop_layer.groups.get(loop_layer._get_group_channel_name(group), set()))


async def pubsub_subscriptions(layer: BaseChannelLayer) -> set[str]:
    """What the PubSub layer is still subscribed to in Redis (empty for the other layers)."""
    if not isinstance(layer, RedisPubSubChannelLayer):
        return set()
    subscribed: set[str] = set()
    for shard in layer._get_layer()._shards:
        subscribed |= {s.decode() if isinstance(s, bytes) else s for s in shard._subscribed_to}
    return subscribed


def test_group_names() -> None:
    assert group_name(TOPIC_TOOLFRAME, "3f2a-9c") == "agent.skill.toolframe.3f2a-9c"
    with pytest.raises(ValueError, match="unknown bus topic"):
        group_name("agent.skill.bogus", "x")
    with pytest.raises(ValueError, match="cannot be used in a channel group name"):
        group_name(TOPIC_PROGRESS, "tâche")
    with pytest.raises(ValueError, match="cannot be used in a channel group name"):
        group_name(TOPIC_PROGRESS, "")
    with pytest.raises(ValueError, match="at most 78"):
        group_name(TOPIC_PROGRESS, "x" * 80)
    longest = max(TASK_TOPICS + b.CONTROL_TOPICS, key=len)
    assert len(group_name(longest, str(uuid.uuid4()))) < 100


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"at": datetime.datetime(2026, 1, 1)}, "payload.at: datetime is not msgpack-safe"),
        ({"id": uuid.uuid4()}, "payload.id: UUID is not msgpack-safe"),
        ({"n": Decimal("1.5")}, "payload.n: Decimal"),
        ({"s": {1, 2}}, "payload.s: set"),
        ({"t": (1, 2)}, "tuples come back as lists"),
        ({"deep": [{"x": [1, object()]}]}, r"payload.deep\[0\].x\[1\]: object"),
        ({1: "int key"}, "dict key 1 is a int"),
        ({"big": 2**64}, "does not fit in 64 bits"),
    ],
)
def test_unsafe_payloads_are_named(payload: Any, problem: str) -> None:
    with pytest.raises(BusPayloadError, match=problem):
        check_msgpack_safe(payload)


def test_safe_payloads_pass() -> None:
    check_msgpack_safe(
        {
            "s": "x",
            "i": -(2**63),
            "u": 2**64 - 1,
            "f": 1.5,
            "b": True,
            "n": None,
            "raw": b"\x00",
            "l": [1, {"k": [None]}],
        }
    )


def test_the_check_walks_any_depth_without_recursion() -> None:
    deep: Any = [None]
    for _ in range(100_000):
        deep = {"x": [deep]}
    check_msgpack_safe(deep)  # no RecursionError
    bad: Any = object()
    for _ in range(2_000):
        bad = [bad]
    with pytest.raises(BusPayloadError, match=r"payload(\[0\]){2000}: object"):
        check_msgpack_safe(bad)


async def test_publishing_an_unsafe_payload_fails_on_every_layer(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    async with bus.subscribe(cid, TASK_TOPICS) as sub:
        with pytest.raises(BusPayloadError, match="payload.frame.args.when: datetime"):
            await bus.publish(
                TOPIC_TOOLFRAME,
                cid,
                {"frame": {"args": {"when": datetime.datetime.now(datetime.UTC)}}},
                seq=1,
            )
        with pytest.raises(BusPayloadError, match="request.metadata.ids"):
            await bus.send_request({"cid": cid, "metadata": {"ids": ("a", "b")}})
        assert await sub.get(timeout=0.2) is None  # nothing half-sent


async def test_events_of_one_task_arrive_in_order_with_consecutive_seq(
    layer: BaseChannelLayer,
) -> None:
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    publisher = bus.publisher(cid)
    async with bus.subscribe(cid, TASK_TOPICS) as sub:
        topics = [TOPIC_PROGRESS, TOPIC_TOOLFRAME, TOPIC_TOOLFRAME, TOPIC_PROGRESS] * 10
        sent = [await publisher.publish(t, {"n": i}) for i, t in enumerate(topics)]
        sent.append(await publisher.publish(TOPIC_RESPONSE, {"status": "completed"}))
        received = [await asyncio.wait_for(anext(aiter(sub)), 5) for _ in sent]
    assert received == sent
    assert [e.seq for e in received] == list(range(1, len(sent) + 1))
    assert publisher.last_seq == len(sent)
    assert all(isinstance(e.ts, float) for e in received)


async def test_subscription_leaves_every_group_on_exit(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    groups = [group_name(t, cid) for t in TASK_TOPICS]
    async with bus.subscribe(cid, TASK_TOPICS) as sub:
        for group in groups:
            assert await memberships(layer, group) == {sub.channel}
        assert await sub.get(timeout=0.05) is None  # a keepalive tick; receive stays pending
    for group in groups:
        assert await memberships(layer, group) == set()
    assert not any(cid in s for s in await pubsub_subscriptions(layer))


async def test_subscription_leaves_on_cancellation_and_error(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    entered = asyncio.Event()

    async def consumer() -> None:
        async with bus.subscribe(cid, TASK_TOPICS) as sub:
            entered.set()
            async for _ in sub:
                pass

    task = asyncio.ensure_future(consumer())
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()  # a client disconnect reaches a streaming view as a cancellation
    with pytest.raises(asyncio.CancelledError):
        await task
    for topic in TASK_TOPICS:
        assert await memberships(layer, group_name(topic, cid)) == set()

    with pytest.raises(RuntimeError, match="boom"):
        async with bus.subscribe(cid, [TOPIC_RESPONSE]):
            raise RuntimeError("boom")
    assert await memberships(layer, group_name(TOPIC_RESPONSE, cid)) == set()


async def test_no_message_is_lost_across_keepalive_ticks(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    publisher = bus.publisher(cid)
    received: list[Envelope] = []
    ticks = 0
    async with bus.subscribe(cid, TASK_TOPICS) as sub:

        async def produce() -> None:
            for i in range(60):
                await publisher.publish(TOPIC_PROGRESS, {"n": i})
                await asyncio.sleep(0.004)

        producing = asyncio.ensure_future(produce())
        while len(received) < 60:
            envelope = await sub.get(timeout=0.003)  # ticks in between the messages
            if envelope is None:
                ticks += 1
            else:
                received.append(envelope)
        await producing
    assert ticks > 0
    assert [e.payload["n"] for e in received] == list(range(60))


async def test_overlapping_tasks_never_see_each_other(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    count, per_task = 200, 6
    cids = [uuid.uuid4().hex for _ in range(count)]
    subscribed = asyncio.Barrier(count + 1)

    async def consume(cid: str) -> list[Envelope]:
        async with bus.subscribe(cid, TASK_TOPICS) as sub:
            await subscribed.wait()
            got = [await asyncio.wait_for(sub.get(), 20) for _ in range(per_task)]
            assert await sub.get(timeout=0.2) is None  # and nothing else arrives
            return [e for e in got if e is not None]

    async def produce(cid: str) -> None:
        publisher = bus.publisher(cid)
        for i in range(per_task - 1):
            await publisher.publish(TOPIC_TOOLFRAME if i % 2 else TOPIC_PROGRESS, {"i": i})
        await publisher.publish(TOPIC_RESPONSE, {"status": "completed"})

    async with asyncio.timeout(60):
        consumers = [asyncio.ensure_future(consume(cid)) for cid in cids]
        await subscribed.wait()
        await asyncio.gather(*(produce(cid) for cid in cids))
        results = await asyncio.gather(*consumers)
    for cid, got in zip(cids, results, strict=True):
        assert {e.cid for e in got} == {cid}
        assert [e.seq for e in got] == list(range(1, per_task + 1))


async def test_requests_are_point_to_point() -> None:
    # On the in-memory and Redis core layers, one request reaches one receiver.
    for made in (
        InMemoryChannelLayer(),
        FastInMemoryChannelLayer(),
        RedisChannelLayer(hosts=[settings.REDIS_HOST], prefix=f"p2p-{uuid.uuid4().hex}"),
    ):
        bus = Bus(made, request_layer=made)
        for i in range(5):
            await bus.send_request({"cid": f"t{i}"})
        receivers = [asyncio.ensure_future(bus.receive_request()) for _ in range(5)]
        got = await asyncio.wait_for(asyncio.gather(*receivers), 10)
        assert sorted(r["cid"] for r in got) == [f"t{i}" for i in range(5)]
        await made.flush()
        if isinstance(made, RedisChannelLayer):
            await made.close_pools()


async def test_malformed_messages_are_dropped(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    async with bus.subscribe(cid, [TOPIC_PROGRESS]) as sub:
        group = group_name(TOPIC_PROGRESS, cid)
        await layer.group_send(group, {"type": "something.else"})
        await layer.group_send(group, {"type": b.ENVELOPE_TYPE, "topic": TOPIC_PROGRESS})
        await layer.group_send(
            group, Envelope(TOPIC_PROGRESS, "other-task", 1, 0.0, {}).to_message()
        )
        await layer.group_send(group, {"type": b.BATCH_TYPE, "topic": TOPIC_PROGRESS})
        await layer.group_send(
            group,
            {"type": b.BATCH_TYPE, "topic": TOPIC_PROGRESS, "cid": cid, "items": [[1, 0.0]]},
        )
        other = [Envelope(TOPIC_PROGRESS, "other-task", i, 0.0, {}) for i in (1, 2)]
        await Bus(layer).send_envelopes(other)
        good = await bus.publish(TOPIC_PROGRESS, cid, {"text": "ok"}, seq=1)
        assert await asyncio.wait_for(sub.get(), 5) == good
        assert await sub.get(timeout=0.2) is None  # nothing of the other task came through


class CountingLayer:
    """A layer that counts the messages sent to groups."""

    def __init__(self, inner: BaseChannelLayer) -> None:
        self.inner = inner
        self.messages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.messages += 1
        await self.inner.group_send(group, message)


async def test_envelopes_that_queue_up_go_out_together_in_order(layer: BaseChannelLayer) -> None:
    counting = CountingLayer(layer)
    bus = Bus(counting)  # type: ignore[arg-type]
    cid = uuid.uuid4().hex
    publisher = bus.publisher(cid)
    async with bus.subscribe(cid, TASK_TOPICS) as sub:
        # A fast agent: while one send is on its way, the next frames queue up behind it.
        topics = [TOPIC_PROGRESS] + [TOPIC_TOOLFRAME] * 150 + [TOPIC_RESPONSE]
        sent = [await publisher.publish(t, {"n": i}) for i, t in enumerate(topics)]
        await publisher.flush()
        received = [await asyncio.wait_for(sub.get(), 5) for _ in sent]
        assert await sub.get(timeout=0.2) is None
    assert received == sent  # every envelope once, in order, as published
    assert counting.messages < len(sent) / 2  # in far fewer layer messages


def test_bus_needs_a_configured_layer() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="CHANNEL_LAYERS has no layer 'nope'"):
        Bus("nope")


def test_envelope_validation() -> None:
    with pytest.raises(ValueError, match="without 'seq'"):
        Envelope.from_message(
            {"type": b.ENVELOPE_TYPE, "topic": "t", "cid": "c", "ts": 1.0, "payload": {}}
        )
    with pytest.raises(ValueError, match="wrong type"):
        Envelope.from_message(
            {
                "type": b.ENVELOPE_TYPE,
                "topic": "t",
                "cid": "c",
                "ts": 1.0,
                "seq": "1",
                "payload": {},
            }
        )


async def test_a_publisher_waits_for_acknowledgements_past_its_window(
    layer: BaseChannelLayer,
) -> None:
    from a2a_toolcall.bus import TaskPublisher

    bus = Bus(layer)
    cid = f"window-{uuid.uuid4().hex[:8]}"
    publisher = TaskPublisher(bus, cid, window=4, window_wait=30)
    async with bus.subscribe(cid, [TOPIC_PROGRESS]) as subscription:
        for i in range(3):
            await publisher.publish(TOPIC_PROGRESS, {"i": i})
        # The window's last envelope goes out, and publish() returns once some are
        # acknowledged: a slow consumer holds the agent back before it makes the next one.
        fourth = asyncio.ensure_future(publisher.publish(TOPIC_PROGRESS, {"i": 3}))
        await asyncio.sleep(0.2)
        assert not fourth.done() and publisher.kept == 4
        publisher.acknowledge(2)
        envelope = await asyncio.wait_for(fourth, 5)
        assert envelope.seq == 4 and publisher.kept == 2
        fifth = await asyncio.wait_for(publisher.publish(TOPIC_PROGRESS, {"i": 4}), 5)
        assert fifth.seq == 5 and publisher.kept == 3
        got = [await subscription.get(timeout=5) for _ in range(5)]
        assert [e.payload["i"] for e in got if e is not None] == [0, 1, 2, 3, 4]
    # A consumer that never acknowledges only slows the publisher down, never stops it.
    patient = TaskPublisher(bus, cid + "-x", window=1, window_wait=0.05)
    for i in range(3):
        await patient.publish(TOPIC_PROGRESS, {"i": i})
    assert patient.kept == 3


@pytest.mark.parametrize(
    "make",
    [
        lambda: InMemoryChannelLayer(),  # channels' own: capacity 100
        lambda: InMemoryChannelLayer(capacity=300),
        lambda: FastInMemoryChannelLayer(),
        lambda: FastInMemoryChannelLayer(capacity=120),
    ],
)
async def test_a_full_window_fits_an_in_memory_consumer_s_channel(make: Any) -> None:
    # An agent publishing a whole window before its stream reads anything: every envelope must
    # still be there (an in-memory channel drops what arrives once full, and the stream would
    # wait seconds for its probe to have them sent again).
    layer = make()
    bus = Bus(layer)
    cid = f"fit-{uuid.uuid4().hex[:8]}"
    publisher = bus.publisher(cid)
    assert publisher.window is not None and b.ACK_EVERY < publisher.window <= layer.capacity
    async with bus.subscribe(cid, TASK_TOPICS) as subscription:
        for i in range(publisher.window):
            await publisher.publish(TOPIC_TOOLFRAME, {"i": i})
        await publisher.flush()
        got = [await subscription.get(timeout=5) for _ in range(publisher.window)]
    assert [e.payload["i"] for e in got if e is not None] == list(range(publisher.window))


# --- work requests on the Redis core layer: one round trip each ------------------------------


def core_layer(**options: Any) -> RedisChannelLayer:
    return RedisChannelLayer(
        hosts=[settings.REDIS_HOST], prefix=f"a2a-test-{uuid.uuid4().hex[:8]}", **options
    )


def record_core_commands(layer: RedisChannelLayer) -> list[str]:
    """The names of the commands the layer's connections send from now on (still sent)."""
    seen: list[str] = []
    client = layer.connection(0)
    send = client.execute_command

    async def recording(*args: Any, **options: Any) -> Any:
        seen.append(str(args[0]))
        return await send(*args, **options)

    client.execute_command = recording  # type: ignore[method-assign]
    return seen


async def test_a_work_request_on_the_redis_core_layer_is_one_command() -> None:
    layer = core_layer()
    try:
        seen = record_core_commands(layer)
        bus = Bus(layer, request_layer=layer)
        await bus.send_request({"cid": "t1", "metadata": {"n": 1}})
        assert seen == ["EVAL"]
        # Read by the layer's own receive, as if the layer had sent it.
        assert await asyncio.wait_for(bus.receive_request(), 5) == {
            "cid": "t1",
            "metadata": {"n": 1},
        }
        # The key expires as the layer's own send makes it.
        key = layer.prefix + REQUEST_CHANNEL
        await bus.send_request({"cid": "t2"})
        ttl = await layer.connection(0).ttl(key)
        assert 0 < ttl <= layer.expiry
    finally:
        await layer.flush()
        await layer.close_pools()


async def test_a_full_work_queue_on_the_redis_core_layer_is_channel_full() -> None:
    layer = core_layer(capacity=3)
    try:
        bus = Bus(layer, request_layer=layer)
        for i in range(3):
            await bus.send_request({"cid": f"t{i}"})
        assert b._one_trip_sendable(layer)
        message = {"type": "a2a.request", "request": {"cid": "t3"}}
        with pytest.raises(ChannelFull):
            await b._send_in_one_trip(layer, REQUEST_CHANNEL, message)
        # Exactly at capacity: the count and the add are one step.
        assert await layer.connection(0).zcard(layer.prefix + REQUEST_CHANNEL) == 3
        got = [await asyncio.wait_for(bus.receive_request(), 5) for _ in range(3)]
        assert sorted(r["cid"] for r in got) == ["t0", "t1", "t2"]
        await bus.send_request({"cid": "t4"})  # room again
        assert (await asyncio.wait_for(bus.receive_request(), 5))["cid"] == "t4"
    finally:
        await layer.flush()
        await layer.close_pools()


async def test_expired_work_requests_are_dropped_before_the_count() -> None:
    layer = core_layer(capacity=2, expiry=60)
    try:
        key = layer.prefix + REQUEST_CHANNEL
        # Two requests older than the expiry fill the queue ...
        stale = {"type": "a2a.request", "request": {"cid": "old"}}
        client = layer.connection(0)
        await client.zadd(key, {layer.serialize(stale): 1.0, layer.serialize(stale) + b" ": 2.0})
        # ... and are dropped when the next one is sent, as the layer's own send does.
        bus = Bus(layer, request_layer=layer)
        await bus.send_request({"cid": "new"})
        assert await client.zcard(key) == 1
        assert (await asyncio.wait_for(bus.receive_request(), 5))["cid"] == "new"
    finally:
        await layer.flush()
        await layer.close_pools()


async def test_a_core_layer_subclass_sends_work_its_own_way() -> None:
    sent: list[str] = []

    class Sending(RedisChannelLayer):
        async def send(self, channel: str, message: dict[str, Any]) -> None:
            sent.append(channel)
            await super().send(channel, message)

    layer = Sending(hosts=[settings.REDIS_HOST], prefix=f"a2a-test-{uuid.uuid4().hex[:8]}")
    try:
        assert not b._one_trip_sendable(layer)
        bus = Bus(layer, request_layer=layer)
        await bus.send_request({"cid": "t1"})
        assert sent == [REQUEST_CHANNEL]
        assert (await asyncio.wait_for(bus.receive_request(), 5))["cid"] == "t1"
    finally:
        await layer.flush()
        await layer.close_pools()


async def test_a_callback_subscription_hands_envelopes_over_without_a_reader(
    layer: BaseChannelLayer,
) -> None:
    # With on_envelope, the app's in-memory layer calls back with each envelope (no task waits
    # on a queue); every other layer is read as before, on_envelope or not.
    bus = Bus(layer)
    cid, other = uuid.uuid4().hex, uuid.uuid4().hex
    got: list[Envelope] = []
    calls_back = isinstance(layer, FastInMemoryChannelLayer)
    async with bus.subscribe(cid, [TOPIC_PROGRESS, TOPIC_RESPONSE], on_envelope=got.append) as sub:
        assert sub.calls_back is calls_back
        assert await memberships(layer, group_name(TOPIC_PROGRESS, cid)) == {sub.channel}
        await bus.publish(TOPIC_PROGRESS, cid, {"text": "a"}, seq=1)
        await bus.publish(TOPIC_RESPONSE, cid, {"text": "b"}, seq=2)
        await bus.send_envelopes(
            [Envelope(TOPIC_PROGRESS, cid, seq, 0.0, {"n": seq}) for seq in (3, 4, 5)]
        )
        if calls_back:
            assert got == []  # handed over in later loop turns, never inside the send
            for _ in range(100):
                if len(got) == 5:
                    break
                await asyncio.sleep(0.01)
            with pytest.raises(RuntimeError, match="on_envelope"):
                await sub.get(timeout=0)
            # A message of another task or a malformed one on the channel is dropped, logged.
            await layer.send(sub.channel, Envelope(TOPIC_PROGRESS, other, 9, 0.0, {}).to_message())
            await layer.send(sub.channel, {"type": b.ENVELOPE_TYPE, "topic": 1})
            await asyncio.sleep(0.01)
        else:
            while len(got) < 5:
                envelope = await sub.get(timeout=5)
                assert envelope is not None
                got.append(envelope)
        assert [e.seq for e in got] == [1, 2, 3, 4, 5]
        assert [e.topic for e in got] == [TOPIC_PROGRESS, TOPIC_RESPONSE, *[TOPIC_PROGRESS] * 3]
    # Left: no membership, and nothing is handed over any more.
    assert await memberships(layer, group_name(TOPIC_PROGRESS, cid)) == set()
    await bus.publish(TOPIC_PROGRESS, cid, {"text": "late"}, seq=6)
    await asyncio.sleep(0.02)
    assert len(got) == 5


async def test_a_callback_that_raises_is_logged_and_the_next_envelope_still_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    layer = FastInMemoryChannelLayer()
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    got: list[int] = []

    def handle(envelope: Envelope) -> None:
        if envelope.seq == 1:
            raise ValueError("a bad control message")
        got.append(envelope.seq)

    async with bus.subscribe(cid, [TOPIC_PROGRESS], on_envelope=handle) as sub:
        assert sub.calls_back
        await bus.publish(TOPIC_PROGRESS, cid, {}, seq=1)  # the sender is not disturbed
        await bus.publish(TOPIC_PROGRESS, cid, {}, seq=2)
        await asyncio.sleep(0.01)
    assert got == [2]
    assert "could not handle" in caplog.text and "a bad control message" in caplog.text


async def test_callback_channels_of_the_in_memory_layer() -> None:
    layer = FastInMemoryChannelLayer(capacity=2)
    got: list[dict[str, Any]] = []
    channel = layer.new_callback_channel(got.append)
    assert channel != layer.new_callback_channel(got.append)
    await layer.group_add("g", channel)
    for n in range(5):  # no queue, so no capacity: nothing is dropped
        await layer.group_send("g", {"type": "t", "n": n})
    layer.group_send_nowait("g", {"type": "t", "n": 5})
    await layer.send(channel, {"type": "t", "n": 6})
    assert got == [] and channel not in layer.channels
    await asyncio.sleep(0)
    assert [m["n"] for m in got] == [0, 1, 2, 3, 4, 5, 6]  # in the order sent
    await layer.group_send("g", {"type": "t", "n": 7})
    layer.discard_callback(channel)  # a message on its way when it ends is dropped
    await layer.send(channel, {"type": "t", "n": 8})
    await asyncio.sleep(0)
    assert [m["n"] for m in got] == [0, 1, 2, 3, 4, 5, 6]
    fresh = layer.new_callback_channel(got.append)
    await layer.flush()
    await layer.send(fresh, {"type": "t", "n": 9})  # after a flush it is an ordinary channel
    await asyncio.sleep(0)
    assert len(got) == 7 and layer.receive_nowait(fresh) == {"type": "t", "n": 9}


async def test_immediate_callback_channels_are_called_inside_the_send() -> None:
    layer = FastInMemoryChannelLayer(capacity=2)
    got: list[int] = []
    channel = layer.new_callback_channel(lambda m: got.append(m["n"]), immediate=True)
    await layer.group_add("g", channel)
    for n in range(3):  # no queue, so no capacity
        await layer.group_send("g", {"type": "t", "n": n})
        assert got == list(range(n + 1))  # before the send returned
    layer.group_send_nowait("g", {"type": "t", "n": 3})
    await layer.send(channel, {"type": "t", "n": 4})
    assert got == [0, 1, 2, 3, 4] and channel not in layer.channels

    def fail(message: dict[str, Any]) -> None:
        raise ValueError("broken")

    failing = layer.new_callback_channel(fail, immediate=True)
    await layer.group_add("g", failing)
    await layer.group_send("g", {"type": "t", "n": 5})  # logged, never raised to the sender
    assert got == [0, 1, 2, 3, 4, 5]
    layer.discard_callback(channel)
    await layer.group_send("g", {"type": "t", "n": 6})
    assert got == [0, 1, 2, 3, 4, 5]
    await layer.flush()
    assert not layer._immediate


async def test_an_offering_subscription_takes_what_arrives_while_its_reader_waits(
    layer: BaseChannelLayer, caplog: pytest.LogCaptureFixture
) -> None:
    # With offer, on the app's in-memory layer an envelope arriving while get() waits with
    # nothing ahead of it is offered first, inside the send; what offer declines, and what
    # arrives while nobody waits, is read in order with get(). Other layers read as before.
    bus = Bus(layer)
    cid = uuid.uuid4().hex
    offered: list[int] = []
    taken: list[int] = []

    def offer(envelope: Envelope) -> bool:
        offered.append(envelope.seq)
        if envelope.payload.get("take"):
            taken.append(envelope.seq)
            return True
        if envelope.payload.get("raise"):
            raise ValueError("could not take it")
        return False

    offers = isinstance(layer, FastInMemoryChannelLayer)
    async with bus.subscribe(cid, [TOPIC_PROGRESS, TOPIC_TOOLFRAME], offer=offer) as sub:
        assert sub.offers is offers and not sub.calls_back
        # Nobody waits: kept for get(), not offered.
        await bus.publish(TOPIC_PROGRESS, cid, {"take": True}, seq=1)
        first = await sub.get(timeout=5)
        assert first is not None and first.seq == 1
        assert offered == []

        async def read() -> list[int]:
            seqs = []
            while len(seqs) < 3:
                envelope = await sub.get(timeout=5)
                assert envelope is not None
                seqs.append(envelope.seq)
            return seqs

        reader = asyncio.ensure_future(read())
        await asyncio.sleep(0.01)  # the reader waits
        await bus.publish(TOPIC_TOOLFRAME, cid, {"take": True}, seq=2)
        if offers:
            assert taken == [2]  # taken inside the send
        await bus.publish(TOPIC_PROGRESS, cid, {}, seq=3)  # declined: to the reader
        await bus.publish(TOPIC_TOOLFRAME, cid, {"take": True}, seq=4)  # one is ahead: kept
        await bus.publish(TOPIC_PROGRESS, cid, {}, seq=5)
        if offers:
            assert offered == [2, 3]
            assert await asyncio.wait_for(reader, 5) == [3, 4, 5]
        else:
            assert offered == []
            assert await asyncio.wait_for(reader, 5) == [2, 3, 4]
            assert (await sub.get(timeout=5)).seq == 5  # type: ignore[union-attr]
        # A waiting get() ends with None on wake() and on its timeout.
        waiting = asyncio.ensure_future(sub.get(timeout=5))
        await asyncio.sleep(0.01)
        await sub.wake()
        assert await asyncio.wait_for(waiting, 5) is None
        assert await sub.get(timeout=0.01) is None
        if offers:
            # What offer raises is logged, and raised by the get() that waited.
            waiting = asyncio.ensure_future(sub.get(timeout=5))
            await asyncio.sleep(0.01)
            await bus.publish(TOPIC_PROGRESS, cid, {"raise": True}, seq=6)
            with pytest.raises(ValueError, match="could not take it"):
                await asyncio.wait_for(waiting, 5)
            assert "could not take" in caplog.text
    assert await memberships(layer, group_name(TOPIC_PROGRESS, cid)) == set()
    count = len(offered)
    await bus.publish(TOPIC_TOOLFRAME, cid, {"take": True}, seq=7)
    assert len(offered) == count  # left: nothing is offered any more


def test_a_subscription_takes_on_envelope_or_offer_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        Bus(FastInMemoryChannelLayer()).subscribe(
            "t", [TOPIC_PROGRESS], on_envelope=lambda e: None, offer=lambda e: True
        )
