"""a2a_toolcall.aio: Flag (an event with one future while anyone waits) and Alarm (one timer
for a series of waits)."""

from __future__ import annotations

import asyncio

import pytest

from a2a_toolcall.aio import Alarm, Flag


async def test_a_flag_wakes_its_waiters() -> None:
    flag = Flag()
    assert not flag.is_set()
    waiters = [asyncio.ensure_future(flag.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    flag.set()
    await asyncio.wait_for(asyncio.gather(*waiters), 1)
    assert flag.is_set()
    await asyncio.wait_for(flag.wait(), 1)  # set: returns at once
    flag.clear()
    assert not flag.is_set()


async def test_a_cancelled_waiter_leaves_the_others_waiting() -> None:
    flag = Flag()
    cancelled = asyncio.ensure_future(flag.wait())
    other = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    assert cancelled.cancelled()
    assert not other.done()
    flag.set()
    await asyncio.wait_for(other, 1)


async def test_a_flag_wait_can_be_cancelled_and_waited_again() -> None:
    flag = Flag()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(flag.wait(), 0.01)
    again = asyncio.ensure_future(flag.wait())
    await asyncio.sleep(0)
    flag.set()
    await asyncio.wait_for(again, 1)


async def test_an_alarm_rings_at_the_latest_deadline_only() -> None:
    loop = asyncio.get_running_loop()
    alarm = Alarm()
    rang: list[float] = []
    start = loop.time()
    alarm.set(loop, start + 0.05, lambda: rang.append(loop.time()))
    await asyncio.sleep(0.02)
    # A new wait before the first deadline: its later deadline is the one that counts.
    alarm.set(loop, start + 0.15, lambda: rang.append(loop.time()))
    await asyncio.sleep(0.08)
    assert rang == []  # the timer fired at the first deadline and moved itself
    await asyncio.sleep(0.15)
    assert len(rang) == 1
    assert rang[0] >= start + 0.15


async def test_a_cleared_alarm_does_not_ring() -> None:
    loop = asyncio.get_running_loop()
    alarm = Alarm()
    rang: list[bool] = []
    alarm.set(loop, loop.time() + 0.02, lambda: rang.append(True))
    alarm.clear()
    await asyncio.sleep(0.05)
    assert rang == []
    # Set again with an earlier deadline than a pending timer: it rings on time.
    alarm.set(loop, loop.time() + 10, lambda: rang.append(True))
    alarm.set(loop, loop.time() + 0.02, lambda: rang.append(True))
    await asyncio.sleep(0.1)
    assert rang == [True]
    alarm.cancel()
