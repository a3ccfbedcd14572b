"""ASGI entry point of the demo site (daphne, uvicorn or any ASGI server).

The demo serves its own static files (the live page's scripts and styles) under any server and
with ``DEBUG`` off too, through Django's ``ASGIStaticFilesHandler``: a plain
``daphne project.asgi:application`` or ``uvicorn project.asgi:application`` shows the page with
no collectstatic and no extra dependency. That handler reads the files through the finders on
every request, which is fine for a demo and not for production: a production site runs
``collectstatic`` and serves ``STATIC_ROOT`` with WhiteNoise or the web server in front
(docs/deployment.md). ``A2A_SERVE_STATIC=0`` leaves static files out, as such a site would.
"""

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.handlers.asgi import ASGIHandler

from a2a_toolcall.asgi import django_handler, wrap
from a2a_toolcall.runtime.registry import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

# Django's handler, its own middleware's hooks run without a thread hop when they do no I/O
# (a2a_toolcall.handler).
django_application: ASGIHandler = django_handler()
# Import the agents now (the LangGraph demo builds its graph: 0.7 s), not on the first request.
warm_up()

if os.environ.get("A2A_SERVE_STATIC", "1") != "0":
    django_application = ASGIStaticFilesHandler(django_application)

# Flow control on streamed responses: a client that reads slowly is waited for, under daphne
# as under uvicorn, and its stream closes past STREAM_BUFFER_LIMIT (docs/server.md, "Slow
# readers"); and the sync code of all requests runs in SYNC_THREADS shared threads, not a
# thread per request (docs/deployment.md, "Bursts"). A site with nothing to add uses
# a2a_toolcall.asgi.get_asgi_application().
application = wrap(django_application)
