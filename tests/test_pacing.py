"""Pacing: on the in-memory layer an agent runs only a few envelopes ahead of what its streams
have taken while their clients read (docs/server.md, "Pacing"); a client that stops reading no
longer holds it back.

The bus's part (a publisher's window, a paced consumer's acknowledgements, the stall check) is
tested on the layer itself; the whole path against real servers (daphne and uvicorn, the
demo's in-memory configuration), with the benchmark's agent and client: many fast agents on
one core, their streams read as fast as the client can.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_toolcall.bus import (
    PACE_WINDOW,
    PUBLISH_WINDOW,
    TOPIC_CANCEL,
    TOPIC_TOOLFRAME,
    YIELD_EVERY,
    Bus,
    Envelope,
    TaskStream,
)
from a2a_toolcall.layers import InMemoryChannelLayer
from a2a_toolcall.recorder import PACE_MAX
from bench.load import percentile, run_load
from tests.live import LiveServer, live_server


def frame(i: int) -> dict[str, object]:
    return {"frame": {"toolCallId": f"c{i}", "name": "t", "phase": "started", "args": {}}}


async def pending_after_a_while(task: asyncio.Task[object]) -> bool:
    done, _ = await asyncio.wait({task}, timeout=0.2)
    return not done


async def test_a_publisher_on_an_in_memory_layer_waits_for_its_window() -> None:
    bus = Bus(InMemoryChannelLayer())
    cid = uuid.uuid4().hex
    async with TaskStream(bus, cid, paced=True) as stream:
        publisher = bus.publisher(cid)
        assert publisher.window == PUBLISH_WINDOW
        stream.set_window(PACE_WINDOW)  # the recorder does, while a stream paces the agent
        assert publisher.window == PACE_WINDOW
        for i in range(1, PACE_WINDOW):
            await publisher.publish(TOPIC_TOOLFRAME, frame(i))
        # The window's last envelope goes out, and publish() returns only once some of them
        # are acknowledged: the agent makes nothing more meanwhile.
        last = asyncio.ensure_future(publisher.publish(TOPIC_TOOLFRAME, frame(PACE_WINDOW)))
        assert await pending_after_a_while(last)
        for _ in range(PACE_WINDOW):
            assert (await stream.get(timeout=1)) is not None  # delivered, not acknowledged
        assert await pending_after_a_while(last)
        stream.acknowledge(2)
        envelope = await asyncio.wait_for(last, 5)
        assert envelope.seq == PACE_WINDOW
        assert publisher.kept == PACE_WINDOW - 2


async def test_an_unpaced_consumer_acknowledges_what_it_is_given() -> None:
    bus = Bus(InMemoryChannelLayer())
    cid = uuid.uuid4().hex
    async with TaskStream(bus, cid) as stream:
        publisher = bus.publisher(cid)

        async def agent() -> None:
            for i in range(1, 101):
                await publisher.publish(TOPIC_TOOLFRAME, frame(i))

        running = asyncio.ensure_future(agent())
        seqs = [(await stream.get(timeout=5)).seq for _ in range(100)]  # type: ignore[union-attr]
        await asyncio.wait_for(running, 5)
    assert seqs == list(range(1, 101))


async def test_a_publisher_kept_waiting_asks_its_consumer_to_look_again() -> None:
    bus = Bus(InMemoryChannelLayer())
    cid = uuid.uuid4().hex
    async with TaskStream(bus, cid, paced=True) as stream:
        publisher = bus.publisher(cid)
        asked = asyncio.Event()

        def look_again() -> None:
            # What the recorder does when its stream's client stopped reading: it no longer
            # waits for that stream.
            asked.set()
            stream.acknowledge(publisher.last_seq)

        stream.on_stall = look_again
        stream.set_window(PACE_WINDOW)
        published = [await publisher.publish(TOPIC_TOOLFRAME, frame(i)) for i in range(1, 9)]
        assert asked.is_set()
        assert [e.seq for e in published] == list(range(1, 9))


async def test_a_consumer_takes_the_next_envelope_in_the_publisher_s_turn() -> None:
    # take_now: while the consumer waits in get(), the next envelope of the runtime's is
    # handed to it inside the publisher's send; an envelope out of order, one of the extra
    # topics and one it declines come from get(), in seq order, as without it.
    bus = Bus(InMemoryChannelLayer())
    cid = uuid.uuid4().hex
    async with TaskStream(bus, cid, also=(TOPIC_CANCEL,)) as stream:
        taken: list[int] = []

        def take_now(envelope: Envelope) -> bool:
            if envelope.payload.get("decline"):
                return False
            taken.append(envelope.seq)
            return True

        stream.take_now = take_now
        publisher = bus.publisher(cid)
        got: list[int] = []

        async def consume() -> None:
            while True:
                envelope = await stream.get(timeout=5)
                assert envelope is not None
                got.append(envelope.seq)
                if envelope.topic == TOPIC_CANCEL:
                    return

        consumer = asyncio.ensure_future(consume())
        await asyncio.sleep(0.01)
        for i in (1, 2):
            await publisher.publish(TOPIC_TOOLFRAME, frame(i))
        assert taken == [1, 2] and stream.expected == 3
        assert publisher.kept == 0  # unpaced: acknowledged as taken
        await publisher.publish(TOPIC_TOOLFRAME, {**frame(3), "decline": True})
        await publisher.publish(TOPIC_TOOLFRAME, frame(4))  # behind 3: from get()
        await asyncio.sleep(0.01)
        assert taken == [1, 2] and got == [3, 4]
        # An envelope ahead of one still missing waits for it (a resend) as ever.
        early = Envelope(TOPIC_TOOLFRAME, cid, 6, 0.0, frame(6))
        await bus.send_envelopes([early])
        await asyncio.sleep(0.01)
        assert taken == [1, 2] and got == [3, 4]
        await bus.send_envelopes([Envelope(TOPIC_TOOLFRAME, cid, 5, 0.0, frame(5))])
        await asyncio.sleep(0.01)
        assert got == [3, 4, 5, 6]
        await bus.publish(TOPIC_CANCEL, cid, {"reason": "stop"}, seq=0)  # not the runtime's
        await asyncio.wait_for(consumer, 5)
        assert taken == [1, 2] and got == [3, 4, 5, 6, 0]


@pytest.fixture(scope="module", params=["daphne", "uvicorn"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    with live_server(
        "memory",
        tmp_path_factory.mktemp("pacing"),
        http=request.param,
        A2A_TEST_AGENT="bench",
        A2A_TEST_WORKER_CONCURRENCY="256",
    ) as running:
        # A first few tasks: what a fresh process does once (imports, connections, the
        # runtime's start) is not measured as agents running ahead.
        asyncio.run(run_load(running.endpoint, concurrency=4, tasks=4, k=10, pad=10))
        yield running


async def leads(server: LiveServer) -> list[float]:
    """How far each agent ran ahead of its client, per frame (bench.load's StreamStats.leads):
    24 agents that never wait, on one server process, each of whose 200 frames could be made
    long before its stream, which shares the process with the others, carries it."""
    result = await run_load(server.endpoint, concurrency=24, tasks=24, k=100, pad=10)
    found = [float(lead) for stream in result.streams for lead in stream.leads()]
    assert len(found) == 24 * 200
    return found


async def test_fast_agents_stay_a_window_ahead_of_their_readers(server: LiveServer) -> None:
    # At most the widest window not yet taken by the stream, and what it took on its way to
    # the client (written, still in the server's transport or the socket: under daphne up to
    # about a window's worth more was seen).
    assert percentile(await leads(server), 99) <= 2 * PACE_MAX


async def test_without_pacing_fast_agents_run_further_ahead(tmp_path: Path) -> None:
    # The control: the same load on a server without pacing. Its agents are held back only by
    # the turns they give the event loop (YIELD_EVERY envelopes each: the recorder takes
    # their frames in their own turns, so their streams have them at once), and run several
    # frames further ahead of their clients than paced ones do.
    found = {}
    for pacing in ("off", "on"):
        (tmp_path / pacing).mkdir()
        with live_server(
            "memory",
            tmp_path / pacing,
            http="uvicorn",
            A2A_TEST_AGENT="bench",
            A2A_TEST_WORKER_CONCURRENCY="256",
            **({"A2A_TEST_STREAM_PACING": "off"} if pacing == "off" else {}),
        ) as running:
            await run_load(running.endpoint, concurrency=4, tasks=4, k=10, pad=10)
            found[pacing] = await leads(running)
    for share in (50, 90):
        unpaced, paced = percentile(found["off"], share), percentile(found["on"], share)
        assert unpaced >= YIELD_EVERY / 2 and unpaced >= 2 * paced, (share, unpaced, paced)


# A stream whose client stops reading no longer paces its agent: tests/test_slow_readers.py
# has clients that stop reading 12 MB streams while their tasks run to the end (held back,
# each would take minutes).
