"""API keys: minting (only the digest kept), ``manage.py a2a_apikey create|list|revoke``, checks."""

from __future__ import annotations

import hashlib
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from a2a_toolcall.apikeys import KEY_PREFIX, mint_api_key, split_key, verify_api_key
from a2a_toolcall.auth import AuthenticationFailed
from a2a_toolcall.models import ApiKey

pytestmark = pytest.mark.django_db

KEY = re.compile(r"^a2a_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$")


def manage(*args: str) -> str:
    out = io.StringIO()
    call_command("a2a_apikey", *args, stdout=out)
    return out.getvalue()


def test_a_minted_key_is_kept_as_its_digest_only() -> None:
    user = get_user_model().objects.create(username="alice")
    row, key = mint_api_key(user, "laptop")
    assert KEY.match(key)
    assert split_key(key) == (row.prefix, key.split("_", 2)[2])
    stored = ApiKey.objects.get(pk=row.pk)
    assert stored.digest == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {stored.digest, stored.prefix, stored.name, str(stored)}
    assert str(stored) == f"laptop (a2a_{row.prefix}_…)"
    assert verify_api_key(key).pk == row.pk
    assert ApiKey.objects.get(pk=row.pk).last_used_at is not None


@pytest.mark.parametrize(
    "key", ["", "a2a_", "a2a_1234567_x", "a2a_12345678", "a2a_12345678_", "sk_12345678_x"]
)
def test_strings_that_are_not_keys_are_told_apart(key: str) -> None:
    assert split_key(key) is None


def test_create_prints_the_key_once_and_it_works() -> None:
    get_user_model().objects.create(username="alice")
    out = manage("create", "alice", "ci runner", "--expires-in", "30")
    (key,) = [line for line in out.splitlines() if line.startswith(KEY_PREFIX)]
    assert "not shown again" in out and "Expires" in out
    row = verify_api_key(key)
    assert row.name == "ci runner" and row.user.get_username() == "alice"
    assert row.expires_at is not None
    assert timedelta(days=29) < row.expires_at - timezone.now() <= timedelta(days=30)
    quiet = manage("create", "alice", "script", "--quiet").strip()
    assert KEY.match(quiet)


def test_create_for_a_missing_user() -> None:
    with pytest.raises(CommandError, match="No user 'bob'"):
        manage("create", "bob", "x")
    key = manage("create", "bob", "x", "--create-user", "--quiet").strip()
    bob = verify_api_key(key).user
    assert bob.get_username() == "bob" and not bob.has_usable_password()
    with pytest.raises(CommandError, match="positive"):
        manage("create", "bob", "x", "--expires-in", "0")


def test_list_shows_keys_by_prefix_never_the_key() -> None:
    alice = get_user_model().objects.create(username="alice")
    bob = get_user_model().objects.create(username="bob")
    active, key = mint_api_key(alice, "laptop")
    revoked, revoked_key = mint_api_key(bob, "old")
    ApiKey.objects.filter(pk=revoked.pk).update(revoked=True)
    expired, _ = mint_api_key(bob, "temp", expires_at=timezone.now() - timedelta(days=1))
    listing = manage("list")
    assert key not in listing and revoked_key not in listing
    lines = listing.splitlines()
    assert len(lines) == 3
    assert any(f"a2a_{active.prefix}_…" in line and "active" in line for line in lines)
    assert any(f"a2a_{revoked.prefix}_…" in line and "revoked" in line for line in lines)
    assert any(f"a2a_{expired.prefix}_…" in line and "expired" in line for line in lines)
    only_alice = manage("list", "--user", "alice").splitlines()
    assert len(only_alice) == 1 and "laptop" in only_alice[0]
    assert manage("list", "--user", "nobody").strip() == "No API keys."


@pytest.mark.parametrize("by", ["prefix", "shown prefix", "key"])
def test_revoke_by_prefix_or_key(by: str) -> None:
    alice = get_user_model().objects.create(username="alice")
    row, key = mint_api_key(alice, "laptop")
    given = {"prefix": row.prefix, "shown prefix": f"a2a_{row.prefix}_…", "key": key}[by]
    assert "Revoked" in manage("revoke", given)
    stored = ApiKey.objects.get(pk=row.pk)
    assert stored.revoked and stored.revoked_at is not None
    with pytest.raises(AuthenticationFailed, match="revoked"):
        verify_api_key(key)
    assert "already revoked" in manage("revoke", row.prefix)
    with pytest.raises(CommandError, match="No API key"):
        manage("revoke", "ffffffff")
