"""The journal's cadence: between two writes it rests as long as the last write took (at most
its interval), so that on a busy process the writes take turns with the event loop, each with
what gathered meanwhile; a lone commit is written at once.

The journal's own scheduling runs as it is; its write is one that takes as long as the test
says (the store's write is tested in test_row_writes.py and test_group_insert.py). Only lower
bounds of time are asserted, and upper bounds far above them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from a2a_toolcall.journal import Journal, JournalSource
from a2a_toolcall.store import TaskWrite

SLACK = 0.005
"""How early asyncio may run a timer (its clock's resolution and rounding)."""


@dataclass
class Source:
    task_id: str

    def take_write(self) -> TaskWrite:
        return TaskWrite(self.task_id, (), {})

    async def written(self, write: TaskWrite) -> None:
        return None


@dataclass
class TimedJournal(Journal):
    """A journal whose every write takes ``takes`` seconds and is noted: (start, end, tasks)."""

    takes: float = 0.0
    interval_: float = 0.05
    writes: list[tuple[float, float, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.interval_)

    async def _write(
        self, sources: list[JournalSource], waiters: list[asyncio.Future[None]]
    ) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(self.takes)
        self.writes.append((start, loop.time(), sorted(s.task_id for s in sources)))
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


async def test_a_lone_commit_is_written_at_once() -> None:
    journal = TimedJournal(takes=0.03)
    loop = asyncio.get_running_loop()
    asked = loop.time()
    await asyncio.wait_for(journal.commit(Source("a")), 5)
    (start, _, tasks), *_ = journal.writes
    assert tasks == ["a"]
    assert start - asked < 0.5  # no rest: nothing was written before


async def test_commits_during_a_write_wait_as_long_as_it_took_then_go_together() -> None:
    journal = TimedJournal(takes=0.03)
    first = asyncio.ensure_future(journal.commit(Source("a")))
    await asyncio.sleep(0.01)  # the first write is in flight
    others = [asyncio.ensure_future(journal.commit(Source(t))) for t in ("b", "c")]
    await asyncio.wait_for(asyncio.gather(first, *others), 5)
    (start_1, end_1, tasks_1), (start_2, _, tasks_2) = journal.writes
    assert tasks_1 == ["a"] and tasks_2 == ["b", "c"]
    took = end_1 - start_1
    assert start_2 - end_1 >= took - SLACK


async def test_the_rest_is_never_longer_than_the_interval() -> None:
    journal = TimedJournal(takes=0.2, interval_=0.05)
    first = asyncio.ensure_future(journal.commit(Source("a")))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(journal.commit(Source("b")))
    await asyncio.wait_for(asyncio.gather(first, second), 5)
    (_, end_1, _), (start_2, _, tasks_2) = journal.writes
    assert tasks_2 == ["b"]
    assert 0.05 - SLACK <= start_2 - end_1 < 0.19  # the interval, not the write's 0.2 s


async def test_after_a_quiet_spell_a_commit_does_not_rest() -> None:
    journal = TimedJournal(takes=0.2, interval_=0.5)
    await asyncio.wait_for(journal.commit(Source("a")), 5)
    await asyncio.sleep(0.3)  # longer than the last write took: its rest is over
    loop = asyncio.get_running_loop()
    asked = loop.time()
    await asyncio.wait_for(journal.commit(Source("b")), 5)
    (_, end_1, _), (start_2, _, _) = journal.writes
    assert start_2 - end_1 >= 0.3 - SLACK
    assert start_2 - asked < 0.15  # not the rest of 0.2 s over again


async def test_events_without_a_commit_still_wait_the_interval() -> None:
    journal = TimedJournal(takes=0.0, interval_=0.05)
    loop = asyncio.get_running_loop()
    added = loop.time()
    journal.add(Source("a"))
    for _ in range(200):
        if journal.writes:
            break
        await asyncio.sleep(0.01)
    (start, _, tasks), *_ = journal.writes
    assert tasks == ["a"]
    assert start - added >= 0.05 - SLACK
