"""Django application configuration for a2a_toolcall."""

from django.apps import AppConfig


class A2AToolcallConfig(AppConfig):
    """Registers the app; nothing is read from settings at import time."""

    name = "a2a_toolcall"
    verbose_name = "A2A tool calls"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks and the settings-cache reset on setting_changed.
        from a2a_toolcall import checks, conf  # noqa: F401
