"""Django application configuration for a2a_toolcall."""

from django.apps import AppConfig


class A2AToolcallConfig(AppConfig):
    """Registers the app; nothing is read from settings at import time."""

    name = "a2a_toolcall"
    verbose_name = "A2A tool calls"
    default_auto_field = "django.db.models.BigAutoField"
