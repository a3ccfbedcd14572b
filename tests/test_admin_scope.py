"""Who sees what in the admin: tasks and tool calls scoped to their owner, and the API keys.

Staff see the tasks they own unless they are superusers or hold ``view_all_tasks``; someone
else's task is answered as a missing one. API keys are minted in the admin and shown once;
the key shown is the one that works at the endpoint, until it is revoked.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from a2a_toolcall.apikeys import mint_api_key
from a2a_toolcall.models import ApiKey, Task, ToolCall
from tests.test_admin import list_cells

pytestmark = pytest.mark.django_db

TASKS = "/admin/a2a_toolcall/task/"
CALLS = "/admin/a2a_toolcall/toolcall/"
KEYS = "/admin/a2a_toolcall/apikey/"
AUDIT = ["view_task", "view_toolcall"]
KEY_ADMIN = ["add_apikey", "change_apikey", "view_apikey"]


def staff(name: str, *codenames: str) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def task(task_id: str, owner: User | None = None, **fields: Any) -> Task:
    kind = "user" if owner is not None else "anonymous"
    row = Task.objects.create(
        id=task_id,
        context_id=f"ctx-{task_id}",
        agent="demo",
        state="TASK_STATE_COMPLETED",
        status={"state": "TASK_STATE_COMPLETED"},
        owner=owner,
        owner_kind=fields.pop("owner_kind", kind),
        **fields,
    )
    ToolCall.objects.create(
        task=row, tool_call_id=f"call-{task_id}", name=f"tool_{task_id}", order=0
    )
    return row


@pytest.fixture
def alice() -> User:
    return staff("alice", *AUDIT)


@pytest.fixture
def bob() -> User:
    return staff("bob", *AUDIT)


@pytest.fixture
def tasks(alice: User, bob: User) -> dict[str, Task]:
    gone = User.objects.create_user("gone")
    rows = {
        "alice": task(
            "t-alice", alice, auth_scheme="apiKey", credential="API key a2a_1234abcd_… (ci)"
        ),
        "bob": task("t-bob", bob, auth_scheme="session", credential="session", tenant="acme"),
        "anonymous": task("t-anon"),
        "session": task("t-session", owner_session="d" * 64),
        "deleted": task("t-deleted", gone),
    }
    gone.delete()  # SET_NULL: a user's task with no user
    rows["deleted"].refresh_from_db()
    assert rows["deleted"].owner_kind == "user" and rows["deleted"].owner is None
    return rows


def answered_as_missing(client: Client, url: str) -> bool:
    """True when ``url`` is answered exactly as a page of an object that does not exist
    (Django's admin sends the user to the index with a warning)."""
    missing = re.sub(r"/t-[\w-]+/|/\d+/", "/no-such-object/", url)
    got, expected = client.get(url), client.get(missing)
    assert expected.status_code == 302, "the comparison URL must name no object"
    return bool(got.status_code == 302 and got["Location"] == expected["Location"])


# --- tasks and tool calls --------------------------------------------------------------------


def test_staff_see_only_their_own_tasks(alice: User, bob: User, tasks: dict[str, Task]) -> None:
    client = logged_in(alice)
    assert set(list_cells(client)) == {"t-alice"}
    assert client.get(f"{TASKS}t-alice/change/").status_code == 200
    for other in ("t-bob", "t-anon", "t-session", "t-deleted"):
        assert answered_as_missing(client, f"{TASKS}{other}/change/"), other
    # Searching, filtering and the date drill-down start from the same rows.
    assert set(list_cells(client, "?q=ctx-t-bob")) == set()
    assert set(list_cells(client, "?state=TASK_STATE_COMPLETED")) == {"t-alice"}
    # The owner filter names every user with a task: not for those who see their own only.
    assert "?owner=" not in client.get(TASKS).content.decode()
    assert set(list_cells(logged_in(bob))) == {"t-bob"}


def test_view_all_tasks_and_superusers_see_every_owner(tasks: dict[str, Task]) -> None:
    auditor = logged_in(staff("auditor", *AUDIT, "view_all_tasks"))
    root = logged_in(User.objects.create_superuser("root", password="pw"))
    for client in (auditor, root):
        rows = list_cells(client)
        assert {task_id: row["owner_column"] for task_id, row in rows.items()} == {
            "t-alice": "alice",
            "t-bob": "bob",
            "t-anon": "anonymous",
            "t-session": "anonymous (session)",
            "t-deleted": "deleted user",
        }
        for row in tasks.values():
            assert client.get(f"{TASKS}{row.id}/change/").status_code == 200


def test_the_owner_filter(alice: User, tasks: dict[str, Task]) -> None:
    auditor = logged_in(staff("auditor", *AUDIT, "view_all_tasks"))
    page = auditor.get(TASKS).content.decode()
    choices = re.findall(r'<a href="\?owner=([^"]+)"[^>]*>([^<]+)</a>', page)
    assert [label for _, label in choices] == ["alice", "bob", "anonymous", "deleted user"]
    assert set(list_cells(auditor, f"?owner={alice.pk}")) == {"t-alice"}
    assert set(list_cells(auditor, "?owner=anonymous")) == {"t-anon", "t-session"}
    assert set(list_cells(auditor, "?owner=deleted")) == {"t-deleted"}
    broken = auditor.get(f"{TASKS}?owner=not-a-pk")
    assert broken.status_code == 302 and broken["Location"].endswith("?e=1")


def test_the_task_page_shows_how_its_creator_authenticated(
    bob: User, tasks: dict[str, Task]
) -> None:
    page = logged_in(bob).get(f"{TASKS}t-bob/change/").content.decode()

    def field(name: str) -> str:
        match = re.search(
            rf'class="form-row[^"]*field-{name}.*?<div class="readonly">(.*?)</div>', page, re.S
        )
        assert match is not None, name
        return match.group(1).strip()

    assert field("owner_display") == "bob"
    assert field("auth_scheme") == "session"
    assert field("credential") == "session"
    assert field("tenant") == "acme"


def test_tool_calls_are_scoped_through_their_task(
    alice: User, bob: User, tasks: dict[str, Task]
) -> None:
    client = logged_in(alice)
    page = client.get(CALLS).content.decode()
    assert "tool_t-alice" in page and "tool_t-bob" not in page
    mine = ToolCall.objects.get(task=tasks["alice"])
    theirs = ToolCall.objects.get(task=tasks["bob"])
    assert client.get(f"{CALLS}{mine.pk}/change/").status_code == 200
    assert answered_as_missing(client, f"{CALLS}{theirs.pk}/change/")
    auditor = logged_in(staff("auditor", *AUDIT, "view_all_tasks"))
    every = auditor.get(CALLS).content.decode()
    assert all(f"tool_{row.id}" in every for row in tasks.values())


def test_the_task_list_query_count_does_not_grow_with_the_owners() -> None:
    auditor = logged_in(staff("auditor", *AUDIT, "view_all_tasks"))
    counts = {}
    made = 0
    for owners in (2, 30):
        while made < owners:
            task(f"many-{made}", User.objects.create_user(f"owner-{made}"))
            made += 1
        with CaptureQueriesContext(connection) as queries:
            response = auditor.get(TASKS)
        counts[owners] = len(queries)  # now: the next request empties the log
        assert response.status_code == 200 and len(list_cells(auditor)) == owners
    assert counts[30] == counts[2], counts


# --- API keys --------------------------------------------------------------------------------


@pytest.fixture
def locked() -> Iterator[None]:
    """No anonymous callers: a 200 from the endpoint means the key was accepted."""
    with override_settings(A2A_TOOLCALL={**settings.A2A_TOOLCALL, "ALLOW_ANONYMOUS": False}):
        yield


def get_task_with(key: str) -> Any:
    """GetTask of a task that does not exist, with ``key``, from a client with no session."""
    return Client().post(
        "/a2a/",
        data=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "no-such-task"}}
        ),
        content_type="application/json",
        headers={"A2A-Version": "1.0", "X-API-Key": key},
    )


def add_key(client: Client, user: User, name: str = "ci") -> Any:
    return client.post(
        f"{KEYS}add/",
        {"user": user.pk, "name": name, "expires_at_0": "", "expires_at_1": ""},
    )


@pytest.mark.usefixtures("locked")
def test_a_key_added_in_the_admin_is_shown_once_and_works_until_revoked(alice: User) -> None:
    user = staff("keeper", *KEY_ADMIN)
    client = logged_in(user)
    form = client.get(f"{KEYS}add/").content.decode()
    fields = re.findall(r'<(?:input|select|textarea)[^>]* name="(\w+)"', form)
    assert [name for name in fields if name != "csrfmiddlewaretoken"] == [
        "user",
        "name",
        "expires_at_0",
        "expires_at_1",
        "_save",  # no "save and continue" or "save and add another"
    ]
    response = add_key(client, user)
    assert response.status_code == 200
    assert response.templates[0].name == "admin/a2a_toolcall/apikey/minted.html"
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    assert "Copy it now: it is not shown again" in page
    (key,) = set(re.findall(r"a2a_[0-9a-f]{8}_[\w-]{20,}", page))
    row = ApiKey.objects.get()
    assert (row.user, row.name) == (user, "ci")
    assert row.digest == hashlib.sha256(key.encode()).hexdigest()
    assert row.digest not in page
    # Never again: not in the list, nor on the key's page; the prefix tells it apart.
    for url in (KEYS, f"{KEYS}{row.pk}/change/", f"{KEYS}?q=a2a_{row.prefix}_…"):
        again = client.get(url).content.decode()
        assert key not in again and row.digest not in again
        assert f"a2a_{row.prefix}_…" in again, url
    # The key shown is the key that works.
    assert get_task_with("a2a_00000000_not-a-key").status_code == 401
    found = get_task_with(key)
    assert found.status_code == 200
    assert found.json()["error"]["code"] == -32001
    # Revoked with the action: refused from then on.
    revoked = client.post(KEYS, {"action": "revoke", "_selected_action": [row.pk]})
    assert revoked.status_code == 302
    row.refresh_from_db()
    assert row.revoked and row.revoked_at is not None
    assert "Revoked 1 API key." in client.get(KEYS).content.decode()
    refused = get_task_with(key)
    assert refused.status_code == 401
    assert "revoked" in refused.json()["error"]["message"]


def test_an_existing_key_edits_its_name_and_expiry_only(alice: User) -> None:
    alice.user_permissions.add(*Permission.objects.filter(codename__in=KEY_ADMIN))
    row, _ = mint_api_key(alice, "old")
    client = logged_in(alice)
    form = client.get(f"{KEYS}{row.pk}/change/").content.decode()
    editable = set(re.findall(r'<(?:input|select|textarea)[^>]* name="(\w+)"', form))
    assert editable - {"csrfmiddlewaretoken", "_save", "_continue", "_addanother"} == {
        "name",
        "expires_at_0",
        "expires_at_1",
    }
    saved = client.post(
        f"{KEYS}{row.pk}/change/",
        {"name": "new", "expires_at_0": "2099-01-01", "expires_at_1": "00:00:00", "_save": "1"},
    )
    assert saved.status_code == 302
    row.refresh_from_db()
    assert row.name == "new" and row.expires_at is not None and row.expires_at.year == 2099


def test_staff_see_and_manage_only_their_own_keys(alice: User, bob: User) -> None:
    for user in (alice, bob):
        user.user_permissions.add(*Permission.objects.filter(codename__in=KEY_ADMIN))
    mine, _ = mint_api_key(alice, "alice's key")
    theirs, _ = mint_api_key(bob, "bob's key")
    client = logged_in(alice)
    listing = client.get(KEYS).content.decode()
    assert "alice&#x27;s key" in listing and "bob&#x27;s key" not in listing
    assert "?user__id__exact=" not in listing  # no filter naming every user
    assert answered_as_missing(client, f"{KEYS}{theirs.pk}/change/")
    # Revoking someone else's key by its id does nothing.
    client.post(KEYS, {"action": "revoke", "_selected_action": [theirs.pk, mine.pk]})
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert not theirs.revoked and mine.revoked
    # A key for someone else cannot be minted: the only choice is oneself.
    form = client.get(f"{KEYS}add/").content.decode()
    choices = re.findall(r'<option value="(\d+)"( selected)?>', form)
    assert choices == [(str(alice.pk), " selected")]
    refused = add_key(client, bob)
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert ApiKey.objects.filter(user=bob).count() == 1
    # Those who see every owner's tasks see every key; a superuser mints for anyone.
    root = logged_in(User.objects.create_superuser("root", password="pw"))
    every = root.get(KEYS).content.decode()
    assert "alice&#x27;s key" in every and "bob&#x27;s key" in every
    assert add_key(root, bob, "for bob").status_code == 200
    assert ApiKey.objects.filter(user=bob, name="for bob").exists()


def test_keys_need_the_key_permissions(alice: User) -> None:
    client = logged_in(alice)  # the audit permissions only
    assert client.get(KEYS).status_code == 403
    assert client.get(f"{KEYS}add/").status_code == 403
