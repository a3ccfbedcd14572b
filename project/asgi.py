"""ASGI entry point of the demo site (daphne, uvicorn or any ASGI server).

For the demo and the tests, static files (the live page's scripts and styles) are served by
this application too when ``DEBUG`` is on or the environment sets ``A2A_SERVE_STATIC=1``: a
plain ``python -m daphne project.asgi:application`` serves no static files otherwise. In
production run ``collectstatic`` and serve ``STATIC_ROOT`` from a proper static server (or
WhiteNoise) instead.
"""

import os

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

application = get_asgi_application()

if settings.DEBUG or os.environ.get("A2A_SERVE_STATIC") == "1":
    application = ASGIStaticFilesHandler(application)
