"""System checks: every id, with the settings that trigger it."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.checks import run_checks
from django.test import override_settings

# Model checks (JSONField support) open a database connection on Django 6.
pytestmark = pytest.mark.django_db

REDIS = {"address": "redis://127.0.0.1:6379/0", "socket_timeout": 30}
MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
AGENTS = {"echo": "tests.agents.echo"}


def ids(**settings: Any) -> list[str]:
    with override_settings(**settings):
        return sorted(
            m.id
            for m in run_checks()
            if m.id and m.id.startswith("a2a_toolcall.") and not m.is_silenced()
        )


def test_the_test_settings_are_clean() -> None:
    assert ids() == []


@pytest.mark.parametrize(
    ("config", "layers", "expected"),
    [
        ({}, MEMORY, ["a2a_toolcall.E001"]),
        ({"AGENTS": {"x": "tests.agents.nope"}}, MEMORY, ["a2a_toolcall.E002"]),
        ({"AGENTS": {"x": "tests.agents.WOKE_UP"}}, MEMORY, ["a2a_toolcall.E002"]),
        ({"AGENTS": AGENTS, "DEFAULT_AGENT": "other"}, MEMORY, ["a2a_toolcall.E003"]),
        ({"AGENTS": AGENTS, "CHANNEL_LAYER": "missing"}, MEMORY, ["a2a_toolcall.E004"]),
        ({"AGENTS": AGENTS, "REQUEST_CHANNEL_LAYER": "gone"}, MEMORY, ["a2a_toolcall.E004"]),
        ({"AGENTS": AGENTS, "TASK_TIME_LIMIT": 0}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "WORKER_CONCURRENCY": "8"}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "GC_GEN0_THRESHOLD": 0}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "GC_GEN0_THRESHOLD": "10000"}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "GC_GEN0_THRESHOLD": None}, MEMORY, []),
        ({"AGENTS": AGENTS, "DB_THREAD_NICE": 0}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "DB_THREAD_NICE": -5}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "DB_THREAD_NICE": "10"}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "DB_THREAD_NICE": True}, MEMORY, ["a2a_toolcall.E005"]),
        ({"AGENTS": AGENTS, "DB_THREAD_NICE": 10}, MEMORY, []),
        ({"AGENTS": AGENTS, "DB_THREAD_NICE": None}, MEMORY, []),
        ({"AGENTS": AGENTS, "NARRATION_RULES": [("(", "x")]}, MEMORY, ["a2a_toolcall.E006"]),
        ({"AGENTS": AGENTS, "NARRATION_RULES": ["x"]}, MEMORY, ["a2a_toolcall.E006"]),
        ({"AGENTS": AGENTS, "HUMANIZER": "tests.nowhere.f"}, MEMORY, ["a2a_toolcall.E007"]),
        (
            {"AGENTS": AGENTS},
            {
                "default": {
                    "BACKEND": "channels_redis.core.RedisChannelLayer",
                    "CONFIG": {"hosts": ["redis://127.0.0.1:6379"], "capacity": 10000},
                }
            },
            ["a2a_toolcall.E008"],
        ),
        (
            {"AGENTS": AGENTS},
            {
                "default": {
                    "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                    "CONFIG": {"hosts": [REDIS]},
                }
            },
            ["a2a_toolcall.W001"],
        ),
        ({"AGENTS": AGENTS, "RUN_IN_PROCESS": False}, MEMORY, ["a2a_toolcall.W002"]),
        (
            {"AGENTS": AGENTS},
            {
                "default": {
                    "BACKEND": "channels_redis.core.RedisChannelLayer",
                    "CONFIG": {"hosts": [REDIS]},
                }
            },
            ["a2a_toolcall.W003"],
        ),
        ({"AGENTS": AGENTS, "TYPO": 1}, MEMORY, ["a2a_toolcall.W004"]),
        ({"AGENTS": AGENTS, "REDACT_HOOK": "tests.nowhere.f"}, MEMORY, ["a2a_toolcall.E009"]),
        ({"AGENTS": AGENTS, "REDACT_KEYS": "password"}, MEMORY, ["a2a_toolcall.E010"]),
        ({"AGENTS": AGENTS, "RECORD_EVENTS": "no"}, MEMORY, ["a2a_toolcall.E011"]),
        (
            {"AGENTS": AGENTS, "REQUEST_CHANNEL_LAYER": "work"},
            {
                "default": {
                    "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                    "CONFIG": {"hosts": [REDIS]},
                },
                "work": {
                    "BACKEND": "channels_redis.core.RedisChannelLayer",
                    "CONFIG": {"hosts": [REDIS], "capacity": 10000},
                },
            },
            [],
        ),
    ],
)
def test_each_check(config: dict[str, Any], layers: dict[str, Any], expected: list[str]) -> None:
    assert ids(A2A_TOOLCALL=config, CHANNEL_LAYERS=layers) == expected


BEARER = "a2a_toolcall.bearer.BearerAuthenticator"
LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
SHARED = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "t"}}


@pytest.mark.parametrize(
    ("config", "extra", "expected"),
    [
        ({"AUTHENTICATORS": ["tests.nowhere.Auth"]}, {}, ["a2a_toolcall.E013"]),
        ({"AUTHENTICATORS": ["tests.agents.echo"]}, {}, ["a2a_toolcall.E013"]),
        ({"AUTHENTICATORS": []}, {}, ["a2a_toolcall.E013"]),
        ({"AUTHENTICATORS": [], "ALLOW_ANONYMOUS": True}, {"DEBUG": True}, []),
        ({"PERMISSION": "tests.nowhere.allowed"}, {}, ["a2a_toolcall.E014"]),
        ({"PERMISSION": "tests.agents.WOKE_UP"}, {}, ["a2a_toolcall.E014"]),
        ({"PERMISSION": "tests.test_access.needs_perm"}, {}, []),
        ({"AUTHENTICATORS": [BEARER]}, {}, ["a2a_toolcall.E015"]),
        (
            {"AUTHENTICATORS": [BEARER], "BEARER_VERIFIER": "a2a_toolcall.bearer.jwt_verifier"},
            {},
            ["a2a_toolcall.E015"],
        ),
        (
            {
                "AUTHENTICATORS": [BEARER],
                "BEARER_VERIFIER": "a2a_toolcall.bearer.jwt_verifier",
                "JWT": {"JWKS_URL": "https://idp.example/jwks.json"},
            },
            {},
            ["a2a_toolcall.W013"],
        ),
        (
            {
                "AUTHENTICATORS": [BEARER],
                "BEARER_VERIFIER": "a2a_toolcall.bearer.jwt_verifier",
                "JWT": {
                    "JWKS_URL": "https://idp.example/jwks.json",
                    "ISSUER": "https://idp.example/",
                    "AUDIENCE": "agent",
                },
            },
            {},
            [],
        ),
        ({"RATE_LIMIT": "lots"}, {"CACHES": SHARED}, ["a2a_toolcall.E016"]),
        ({"MAX_RUNNING_TASKS_PER_OWNER": 0}, {}, ["a2a_toolcall.E016"]),
        ({"TRUSTED_PROXY_COUNT": -1}, {}, ["a2a_toolcall.E016"]),
        ({"RATE_LIMIT": "10/s", "THROTTLE_CACHE": "nope"}, {}, ["a2a_toolcall.E017"]),
        ({"RATE_LIMIT": "10/s"}, {"CACHES": LOCMEM}, ["a2a_toolcall.W012"]),
        ({"RATE_LIMIT": "10/s"}, {"CACHES": SHARED}, []),
        ({"RATE_LIMIT": "10/s"}, {"CACHES": LOCMEM, "DEBUG": True}, []),
        (
            {},
            {
                "MIDDLEWARE": [
                    m for m in django_settings.MIDDLEWARE if "session" not in m and "auth" not in m
                ]
            },
            ["a2a_toolcall.W011"],
        ),
        (
            {"ALLOW_ANONYMOUS": True},
            {"SILENCED_SYSTEM_CHECKS": ["a2a_toolcall.W005"]},
            ["a2a_toolcall.W010"],
        ),
        (
            {"ALLOW_ANONYMOUS": True},
            {"DEBUG": True, "SILENCED_SYSTEM_CHECKS": ["a2a_toolcall.W007"]},
            [],
        ),
    ],
)
def test_access_checks(config: dict[str, Any], extra: dict[str, Any], expected: list[str]) -> None:
    found = ids(
        A2A_TOOLCALL={"AGENTS": AGENTS, **config},
        CHANNEL_LAYERS={"default": {"BACKEND": "a2a_toolcall.layers.InMemoryChannelLayer"}},
        **{"SILENCED_SYSTEM_CHECKS": ["a2a_toolcall.W005", "a2a_toolcall.W007"], **extra},
    )
    assert found == expected


def test_messages_carry_hints() -> None:
    with override_settings(A2A_TOOLCALL={}, CHANNEL_LAYERS=MEMORY):
        (message,) = [m for m in run_checks() if m.id == "a2a_toolcall.E001"]
    assert "A2A_TOOLCALL" in (message.hint or "")


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"SILENCED_SYSTEM_CHECKS": []}, ["a2a_toolcall.W005"]),  # DEBUG False, in-memory
        ({"ASGI_APPLICATION": None}, ["a2a_toolcall.W006"]),
        (
            {
                "DEBUG": True,
                "INSTALLED_APPS": [a for a in django_settings.INSTALLED_APPS if a != "daphne"],
            },
            ["a2a_toolcall.W007"],
        ),
        (
            {
                "INSTALLED_APPS": [
                    a for a in django_settings.INSTALLED_APPS if a != "django.contrib.staticfiles"
                ],
            },
            ["a2a_toolcall.W008"],
        ),
    ],
)
def test_deployment_checks(settings: dict[str, Any], expected: list[str]) -> None:
    assert ids(A2A_TOOLCALL={"AGENTS": AGENTS}, **settings) == expected
