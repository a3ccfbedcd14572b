"""Task rows created together go in together (``store.GroupCommit``), on SQLite and
PostgreSQL: every caller returns once its own row is committed, and a row that cannot be
stored fails only its own caller."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import IntegrityError, connections
from django.test.utils import CaptureQueriesContext

from a2a_toolcall import models as orm
from a2a_toolcall import store
from a2a_toolcall.bus import Bus
from a2a_toolcall.layers import InMemoryChannelLayer
from a2a_toolcall.protocol.models import (
    Message,
    Part,
    Role,
    TaskState,
    TaskStatus,
    format_timestamp,
)
from a2a_toolcall.runtime import AgentInput, Event, Reply
from a2a_toolcall.runtime.runner import Runtime
from tests.conftest import BOTH_DATABASES


async def create(task_id: str) -> orm.Task:
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text="hi")])
    return await store.create_task(
        task_id=task_id,
        context_id="ctx",
        agent="echo",
        message=message,
        metadata={},
        status=TaskStatus(state=TaskState.SUBMITTED),
    )


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_tasks_created_at_once_are_all_stored(database: str) -> None:
    ids = [str(uuid.uuid4()) for _ in range(120)]
    rows = await asyncio.gather(*(create(task_id) for task_id in ids))
    assert [row.id for row in rows] == ids
    stored = {pk async for pk in orm.Task.objects.using(database).values_list("pk", flat=True)}
    assert stored == set(ids)


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_a_row_that_cannot_be_stored_fails_only_its_own_caller(database: str) -> None:
    taken = str(uuid.uuid4())
    await create(taken)
    ids = [str(uuid.uuid4()) for _ in range(20)]
    # The same id again, in the middle of a group: the group's transaction fails, and the
    # rows are tried one by one.
    results = await asyncio.gather(
        *(create(task_id) for task_id in [*ids[:10], taken, *ids[10:]]), return_exceptions=True
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    assert len(failed) == 1 and isinstance(failed[0], IntegrityError)
    assert isinstance(results[10], IntegrityError)
    stored = {pk async for pk in orm.Task.objects.using(database).values_list("pk", flat=True)}
    assert stored == {taken, *ids}


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
def test_a_group_is_stored_exactly_as_bulk_create_stores_it(database: str) -> None:
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.db_manager(database).create(username=f"u-{uuid.uuid4()}")
    when = datetime(2026, 12, 7, 2, 30, 1, 123456, tzinfo=UTC)

    def rows(prefix: str) -> list[orm.Task]:
        return [
            orm.Task(
                id=f"{prefix}-{i}",
                context_id="ctx é",
                agent="echo",
                state=TaskState.SUBMITTED.value,
                status={"state": "TASK_STATE_SUBMITTED", "n": [1, 2.5, None, "✓"]},
                history=[{"messageId": "m", "parts": [{"text": "hi"}]}],
                metadata={} if i else {"k": {"nested": True}},
                owner=owner if i % 2 else None,
                request_text="",
                last_seq=i,
                created_at=when,
                updated_at=when + timedelta(seconds=i),
            )
            for i in range(3)
        ]

    fast, slow = rows("fast"), rows("slow")
    with CaptureQueriesContext(connections[database]) as queries:
        assert store._insert_rows_sync(fast) == [None, None, None]
    # One executemany for the group (the debug cursor logs it as "3 times: INSERT ...").
    inserts = [q["sql"] for q in queries if "INSERT INTO" in q["sql"].upper()]
    assert len(inserts) == 1 and inserts[0].startswith("3 times"), inserts
    orm.Task.objects.using(database).bulk_create(slow)
    assert all(not row._state.adding and row._state.db == database for row in fast)
    table = orm.Task.objects.using(database)
    columns = [f.attname for f in orm.Task._meta.concrete_fields if f.attname != "id"]
    stored_fast = list(table.filter(id__startswith="fast-").order_by("id").values_list(*columns))
    stored_slow = list(table.filter(id__startswith="slow-").order_by("id").values_list(*columns))
    assert len(stored_fast) == 3 and stored_fast == stored_slow


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_a_caller_that_goes_away_does_not_stop_the_others(database: str) -> None:
    ids = [str(uuid.uuid4()) for _ in range(30)]
    tasks = [asyncio.ensure_future(create(task_id)) for task_id in ids]
    await asyncio.sleep(0)
    tasks[0].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(not isinstance(r, BaseException) for r in results[1:])
    stored = {pk async for pk in orm.Task.objects.using(database).values_list("pk", flat=True)}
    assert set(ids[1:]) <= stored  # the first may or may not have gone in with its group


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_claims_made_at_once_each_win_once(database: str) -> None:
    ids = [str(uuid.uuid4()) for _ in range(40)]
    await asyncio.gather(*(create(task_id) for task_id in ids))
    # Two runtimes claim every task at the same moment: each task goes to exactly one.
    claims = [store.claim_task(task_id, runtime) for task_id in ids for runtime in ("a", "b")]
    won = await asyncio.gather(*claims)
    assert [won[2 * i] + won[2 * i + 1] for i in range(len(ids))] == [1] * len(ids)
    holders = {
        pk: runtime
        async for pk, runtime in orm.Task.objects.using(database).values_list("pk", "runtime_id")
    }
    assert {holders[task_id] for task_id in ids} <= {"a", "b"}
    for i, task_id in enumerate(ids):
        assert holders[task_id] == ("a" if won[2 * i] else "b")


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
def test_a_batch_of_claims_is_a_few_statements_and_wins_what_one_at_a_time_would(
    database: str,
) -> None:
    ids = [str(uuid.uuid4()) for _ in range(12)]
    for task_id in ids:
        async_to_sync(create)(task_id)
    canceled, retried, held = ids[0], ids[1], ids[2]
    orm.Task.objects.using(database).filter(pk=canceled).update(state=TaskState.CANCELED.value)
    between = {"state": TaskState.WORKING.value, "timestamp": "2026-01-01T00:00:00Z"}
    orm.Task.objects.using(database).filter(pk=retried).update(
        state=TaskState.WORKING.value, attempt=2, status=between
    )
    orm.Task.objects.using(database).filter(pk=held).update(runtime_id="elsewhere")
    claims = [
        *((task_id, "a", 1) for task_id in ids[3:]),
        (canceled, "a", 1),  # ended before any runtime took it
        (retried, "a", 1),  # an older attempt than the row's
        (retried, "b", 2),  # the row's attempt
        (held, "a", 1),  # another runtime holds it
        (ids[3], "b", 1),  # claimed earlier in the same batch
        (ids[4], "a", 1),  # the same runtime twice: one claim wins
    ]
    with CaptureQueriesContext(connections[database]) as queries:
        won = store._claim_batch_sync(claims)
    assert won == [True] * 9 + [False, False, True, False, False, False]
    statements = [
        q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("SELECT", "UPDATE"))
    ]
    # One read of the claimable rows per attempt; per runtime, the claim's write and the mark
    # of the submitted tasks among them as working.
    assert len(statements) == 6, statements
    if database == "postgres":
        # Locked in key order, with the lock an UPDATE takes (event inserts are not blocked).
        reads = [sql for sql in statements if sql.startswith("SELECT")]
        assert len(reads) == 2
        assert all("ORDER BY" in sql and sql.endswith("FOR NO KEY UPDATE") for sql in reads)
    rows = dict(orm.Task.objects.using(database).values_list("pk", "runtime_id"))
    assert [rows[task_id] for task_id in ids[3:]] == ["a"] * 9
    assert (rows[canceled], rows[retried], rows[held]) == ("", "b", "elsewhere")
    leases = orm.Task.objects.using(database).filter(pk__in=ids[3:], lease_expires_at__isnull=False)
    assert leases.count() == 9
    # A submitted task is working from its claim on, since it was claimed; a later attempt's
    # task keeps its status; those not won are as they were.
    for row in orm.Task.objects.using(database).filter(pk__in=ids[3:]):
        assert row.state == TaskState.WORKING.value
        assert row.status == {
            "state": TaskState.WORKING.value,
            "timestamp": format_timestamp(row.claimed_at),
        }
        assert row.updated_at == row.claimed_at
    states = dict(orm.Task.objects.using(database).values_list("pk", "state"))
    assert (states[canceled], states[held]) == (
        TaskState.CANCELED.value,
        TaskState.SUBMITTED.value,
    )
    assert orm.Task.objects.using(database).get(pk=retried).status == between


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
def test_a_batch_that_cannot_be_written_together_is_claimed_one_by_one(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [str(uuid.uuid4()) for _ in range(5)]
    for task_id in ids:
        async_to_sync(create)(task_id)

    def broken(claims: Any, using: str) -> list[bool]:
        raise IntegrityError("the batch failed")

    monkeypatch.setattr(store, "_claim_rows_sync", broken)
    claims = [(task_id, "a", 1) for task_id in ids] + [(ids[0], "b", 1), ("no-such-task", "a", 1)]
    assert store._claim_batch_sync(claims) == [True] * 5 + [False, False]
    rows = dict(orm.Task.objects.using(database).filter(pk__in=ids).values_list("pk", "runtime_id"))
    assert set(rows.values()) == {"a"}
    states = orm.Task.objects.using(database).filter(pk__in=ids).values_list("state", flat=True)
    assert set(states) == {TaskState.WORKING.value}


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_a_runtime_starting_with_tasks_waiting_claims_them_together(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A burst of tasks created before the runtime serves (the first requests of a fresh
    # process start it): the runtime picks them all up from the store, in one claim
    # transaction rather than a commit each.
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text="hi")])
    ids = [str(uuid.uuid4()) for _ in range(25)]
    await asyncio.gather(
        *(
            store.create_task(
                task_id=task_id,
                context_id="ctx",
                agent="hold",
                message=message,
                metadata={},
                status=TaskStatus(state=TaskState.SUBMITTED),
                recorder_id="this-process",
            )
            for task_id in ids
        )
    )
    batches: list[int] = []
    claim_batch = store._claim_batch_sync

    def counted(claims: list[Any]) -> list[Any]:
        batches.append(len(claims))
        return claim_batch(claims)

    monkeypatch.setattr(store, "_claim_batch_sync", counted)
    release, all_started = asyncio.Event(), asyncio.Event()
    started: list[str] = []

    async def hold(task: AgentInput) -> AsyncIterator[Event]:
        started.append(task.task_id)
        if len(started) == len(ids):
            all_started.set()
        await release.wait()
        yield Reply(text="done")

    runtime = Runtime(
        bus=Bus(InMemoryChannelLayer()),
        agents={"hold": hold},
        default_agent="hold",
        concurrency=50,
        retain=0,
        claims=store.StoreClaims(),
    )
    runtime.start()
    try:
        async with asyncio.timeout(20):
            await all_started.wait()
        assert sorted(started) == sorted(ids)
        assert batches == [len(ids)]
        rows = {
            pk: holder
            async for pk, holder in orm.Task.objects.using(database).values_list("pk", "runtime_id")
        }
        assert {rows[task_id] for task_id in ids} == {runtime.runtime_id}
    finally:
        release.set()
        await runtime.shutdown()


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
def test_a_write_updates_the_task_rows_a_run_of_the_same_columns_at_a_time(database: str) -> None:
    ids = sorted(str(uuid.uuid4()) for _ in range(5))
    for task_id in ids:
        async_to_sync(create)(task_id)
    working = TaskState.WORKING.value
    writes = [
        store.TaskWrite(ids[4], fields={"last_seq": 9, "tool_call_count": 4}),
        store.TaskWrite(ids[0], fields={"last_seq": 5, "tool_call_count": 2}),
        store.TaskWrite(ids[1], fields={"last_seq": 6, "tool_call_count": 3}),
        store.TaskWrite(ids[2], fields={"state": working}),
        store.TaskWrite(ids[3]),  # nothing of its row changes
    ]
    with CaptureQueriesContext(connections[database]) as queries:
        store.write_batch_sync(writes)
    updates = [q["sql"] for q in queries if "UPDATE" in q["sql"].upper()]
    # In key order: ids[0] and ids[1] together, ids[2], then ids[4] (ids[3] has nothing).
    assert [sql.split(":")[0] for sql in updates] == ["2 times", "1 times", "1 times"], updates
    rows = {
        pk: (seq, calls, state)
        for pk, seq, calls, state in orm.Task.objects.using(database).values_list(
            "pk", "last_seq", "tool_call_count", "state"
        )
    }
    submitted = TaskState.SUBMITTED.value
    assert [rows[task_id] for task_id in ids] == [
        (5, 2, submitted),
        (6, 3, submitted),
        (0, 0, working),
        (0, 0, submitted),
        (9, 4, submitted),
    ]
