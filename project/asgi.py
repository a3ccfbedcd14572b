"""ASGI entry point of the demo site (daphne, uvicorn or any ASGI server)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

application = get_asgi_application()
