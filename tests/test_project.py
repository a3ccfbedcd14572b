"""The demo project and the app's Django wiring."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client


@pytest.mark.django_db
def test_system_checks_pass() -> None:
    call_command("check", fail_level="WARNING")


@pytest.mark.django_db
def test_demo_home_page_renders(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert "a2a-toolcall demo site" in response.content.decode()


def test_app_is_registered() -> None:
    from django.apps import apps

    config = apps.get_app_config("a2a_toolcall")
    assert config.verbose_name == "A2A tool calls"
