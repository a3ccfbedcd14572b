"""Task rows created together go in together (``store.GroupCommit``), on SQLite and
PostgreSQL: every caller returns once its own row is committed, and a row that cannot be
stored fails only its own caller."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from django.db import IntegrityError

from a2a_toolcall import models as orm
from a2a_toolcall import store
from a2a_toolcall.protocol.models import Message, Part, Role, TaskState, TaskStatus
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
def test_a_batch_of_claims_takes_its_rows_in_key_order(database: str) -> None:
    # Each claim's UPDATE holds its row's lock until the batch commits; in arrival order a
    # batch could hold one row another process (locking in key order) waits for while it
    # waits for one that process holds. The batch runs its jobs in key order instead.
    ran: list[str] = []
    keys = [str(uuid.uuid4()) for _ in range(20)]

    def job(key: str) -> Any:
        def run() -> str:
            ran.append(key)
            return key.upper()

        return run

    results = store._run_jobs_sync([(key, job(key)) for key in keys])
    assert ran == sorted(keys)
    assert results == [key.upper() for key in keys]  # each caller still gets its own result
