"""ASGI applications for checks a2a_toolcall.W014, W015 and W017's tests: Django alone, with
FlowControl only, with both middlewares (``wrap``), directly and under channels'
ProtocolTypeRouter, with Django's handler or a2a_toolcall's."""

from __future__ import annotations

from channels.routing import ProtocolTypeRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from a2a_toolcall import asgi
from a2a_toolcall.asgi import FlowControl, wrap

plain = ASGIStaticFilesHandler(get_asgi_application())
routed_plain = ProtocolTypeRouter({"http": get_asgi_application()})
flow_only = FlowControl(get_asgi_application())
wrapped = wrap(get_asgi_application())
routed_wrapped = ProtocolTypeRouter({"http": wrapped})
ours = asgi.get_asgi_application()
routed_ours = ProtocolTypeRouter({"http": wrap(ASGIStaticFilesHandler(asgi.django_handler()))})
