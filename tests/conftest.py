"""Shared test configuration and fixtures."""

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from asgiref.sync import sync_to_async
from channels.layers import BaseChannelLayer, InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings as django_settings
from django.db import connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from a2a_toolcall import push
from a2a_toolcall.layers import InMemoryChannelLayer as FastInMemoryChannelLayer
from a2a_toolcall.leases import keeper_for_loop
from a2a_toolcall.runtime import runner
from tests import routers
from tests.browser import ChromiumMissing, ensure_chromium

# "default": the CI run. "thorough": `HYPOTHESIS_PROFILE=thorough pytest` for a deeper search.
hypothesis_settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives a real Chromium (found or installed by tests/browser.py)"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the test run's SQLite database with its WAL files, which Django leaves (the
    pool's threads still hold connections to it when Django deletes the database file)."""
    name = django_settings.DATABASES["default"].get("TEST", {}).get("NAME")
    if name and django_settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        for path in (name, f"{name}-wal", f"{name}-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before any test runs: find Chromium (or install it) if a browser test was selected."""
    if any(item.get_closest_marker("browser") for item in items):
        try:
            ensure_chromium()
        except ChromiumMissing as missing:
            pytest.exit(str(missing), returncode=pytest.ExitCode.USAGE_ERROR)


BOTH_DATABASES = ["default", "postgres"]
"""SQLite and PostgreSQL: ``django_db(databases=BOTH_DATABASES)`` with the ``database`` fixture."""


@pytest.fixture(params=BOTH_DATABASES)
def database(request: pytest.FixtureRequest) -> Iterator[str]:
    """Route the app's queries to SQLite, then to PostgreSQL (tests.routers)."""
    routers.ALIAS = request.param
    yield request.param
    routers.ALIAS = "default"
    # The store writes from asgiref's shared thread (store.in_shared_thread), whose
    # connections live on: close them, or the test database cannot be dropped at the end.
    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()


@pytest.fixture
async def stop_in_process_runtime() -> AsyncIterator[None]:
    """After the test: shut the loop's in-process runtime down and close its connections."""
    yield
    runtime = runner._IN_PROCESS.get(asyncio.get_running_loop())
    if runtime is not None:
        await runtime.shutdown()
    keeper = keeper_for_loop()
    if keeper is not None:
        await keeper.stop()
    sender = push._SENDERS.get(asyncio.get_running_loop())
    if sender is not None:
        await sender.stop()
    # The recorder wrote from asgiref's shared thread: close its connections there, or the
    # test databases cannot be dropped at the end of the session.
    await sync_to_async(connections.close_all)()


LAYERS = ["memory", "a2a-memory", "redis", "pubsub"]


@pytest.fixture(params=LAYERS)
async def layer(request: pytest.FixtureRequest) -> AsyncIterator[BaseChannelLayer]:
    """A fresh layer of each kind; Redis ones on the real server, under a unique prefix."""
    prefix = f"a2a-test-{uuid.uuid4().hex[:8]}"
    made: BaseChannelLayer
    if request.param == "memory":
        made = InMemoryChannelLayer()
    elif request.param == "a2a-memory":
        made = FastInMemoryChannelLayer()
    elif request.param == "redis":
        # capacity: every stream of a process shares one Redis list (see a2a_toolcall.W003)
        made = RedisChannelLayer(hosts=[django_settings.REDIS_HOST], prefix=prefix, capacity=10_000)
    else:
        made = RedisPubSubChannelLayer(hosts=[django_settings.REDIS_HOST], prefix=prefix)
    yield made
    await made.flush()
    if request.param == "redis":
        await made.close_pools()
