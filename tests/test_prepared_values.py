"""The journal's value preparation (``store._prepared``) gives the database exactly what the
models' fields would (``field.get_db_prep_save``), on SQLite and PostgreSQL, for every field the
journal writes and for values of every kind: the common ones it takes a short way for and the
rest, which go through the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from django.db import connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_toolcall import models as orm
from a2a_toolcall import store
from tests.conftest import BOTH_DATABASES
from tests.strategies import json_values

MODELS = (orm.TaskEvent, orm.ToolCall, orm.Task, orm.PushDelivery)

zones = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
)
aware = st.builds(
    lambda moment, zone: moment.replace(tzinfo=UTC).astimezone(zone),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)),
    zones,
)
values = (
    st.none()
    | st.text(max_size=20)
    | st.just("")
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | aware
    | st.builds(orm.RawJSON, st.sampled_from(['{"a": 1}', "[]", "null", '"x"']))
    | st.dictionaries(st.text(max_size=5), json_values, max_size=3)
    | st.lists(json_values, max_size=3)
)
fields = st.sampled_from(
    [
        (model, field.name)
        for model in MODELS
        for field in model._meta.concrete_fields
        if not field.primary_key or model is orm.Task
    ]
)


def comparable(value: Any) -> Any:
    """psycopg's ``Jsonb`` wrapper (PostgreSQL's JSON values) has no equality: its object."""
    if type(value).__name__ == "Jsonb":
        return ("Jsonb", type(value.obj), repr(value.obj))
    return (type(value), value)


def field_way(field: Any, value: Any, connection: Any) -> tuple[str, Any]:
    try:
        return "value", comparable(field.get_db_prep_save(value, connection))
    except Exception as exc:
        return "raises", type(exc)


def journal_way(model: Any, name: str, value: Any, connection: Any) -> tuple[str, Any]:
    try:
        (prepared,) = store._prepared(model, (name,), {name: value}, connection)
    except Exception as exc:
        return "raises", type(exc)
    return "value", comparable(prepared)


@pytest.mark.django_db(databases=BOTH_DATABASES)
@pytest.mark.parametrize("alias", BOTH_DATABASES)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=fields, value=values)
def test_prepared_values_are_what_the_fields_give(
    alias: str, where: tuple[Any, str], value: Any
) -> None:
    model, name = where
    connection = connections[alias]
    field = model._meta.get_field(name)
    assert journal_way(model, name, value, connection) == field_way(field, value, connection)


@pytest.mark.django_db(databases=BOTH_DATABASES)
@pytest.mark.parametrize("alias", BOTH_DATABASES)
def test_the_journal_takes_the_short_way_for_its_common_values(alias: str) -> None:
    # The converters made for the journal's hot statements are the short ones (not the
    # field's own way, which they fall back to when their check against the field fails).
    connection = connections[alias]
    names = ("task", "seq", "kind", "state", "emitted_at", "data")
    converters = store._converters(orm.TaskEvent, names, connection)
    kinds = [getattr(convert, "__name__", "") for convert in converters]
    if connection.vendor == "sqlite":
        assert kinds == ["text", "integer", "text", "text", "moment", "wire_json"]
    else:
        # psycopg takes ints wrapped by size (Int4...) and JSON as Jsonb: the field's way.
        assert kinds == ["text", "get_db_prep_save", "text", "text", "moment", "get_db_prep_save"]
