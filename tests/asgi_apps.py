"""ASGI applications for check a2a_toolcall.W014's tests: Django alone, and with FlowControl
around it, directly and under channels' ProtocolTypeRouter."""

from __future__ import annotations

from channels.routing import ProtocolTypeRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from a2a_toolcall.asgi import FlowControl

plain = ASGIStaticFilesHandler(get_asgi_application())
routed_plain = ProtocolTypeRouter({"http": get_asgi_application()})
wrapped = FlowControl(get_asgi_application())
routed_wrapped = ProtocolTypeRouter({"http": wrapped})
