"""Views for tests/test_handler.py: each makes Django's own middleware do one thing (save a
session, add or read messages, check or issue a CSRF token, redirect a path without its slash),
sync and async alike."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth import alogin, get_user_model
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.middleware.csrf import get_token
from django.urls import path
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie


async def plain(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"{request.method} ok")


def plain_sync(request: HttpRequest) -> HttpResponse:
    return HttpResponse("sync ok")


async def session_write(request: HttpRequest) -> HttpResponse:
    await request.session.aset("value", request.GET.get("v", "1"))
    return HttpResponse("written")


async def session_read(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"value={await request.session.aget('value')}")


async def session_flush(request: HttpRequest) -> HttpResponse:
    await request.session.aflush()
    return HttpResponse("flushed")


def message_add(request: HttpRequest) -> HttpResponse:
    messages.info(request, "hello there")
    return HttpResponse("added")


def message_read(request: HttpRequest) -> HttpResponse:
    return HttpResponse("|".join(str(m) for m in messages.get_messages(request)))


@ensure_csrf_cookie
async def token(request: HttpRequest) -> HttpResponse:
    return HttpResponse("token")


async def token_read(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"token length {len(get_token(request))}")


async def form(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"form {request.method} {sorted(request.POST)}")


@csrf_exempt
async def exempt(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"exempt {request.method}")


@xframe_options_exempt
async def framable(request: HttpRequest) -> HttpResponse:
    return HttpResponse("framable")


async def streamed(request: HttpRequest) -> StreamingHttpResponse:
    async def parts():  # type: ignore[no-untyped-def]
        yield b"one "
        yield b"two"

    return StreamingHttpResponse(parts(), content_type="text/plain")


async def whoami(request: HttpRequest) -> HttpResponse:
    user = await request.auser()
    return HttpResponse(f"user={user.get_username() or '-'}")


async def log_in(request: HttpRequest) -> HttpResponse:
    user = await get_user_model().objects.aget(username="handler-user")
    await alogin(request, user)
    return HttpResponse("logged in")


async def fails(request: HttpRequest) -> HttpResponse:
    raise ValueError("the view failed")


TRACE: list[str] = []
"""What ran, in order: the view below and tests/test_handler.py's request_started receiver."""


async def connection(request: HttpRequest) -> HttpResponse:
    """Whether the request's thread has its default database connection open, as the
    request's first sync call finds it."""
    from django.db import connections

    def state() -> str:
        TRACE.append("view")
        return "closed" if connections["default"].connection is None else "open"

    return HttpResponse(await sync_to_async(state)())


urlpatterns = [
    path("connection/", connection),
    path("plain/", plain),
    path("sync/", plain_sync),
    path("session/write/", session_write),
    path("session/read/", session_read),
    path("session/flush/", session_flush),
    path("messages/add/", message_add),
    path("messages/read/", message_read),
    path("token/", token),
    path("token/read/", token_read),
    path("form/", form),
    path("exempt/", exempt),
    path("framable/", framable),
    path("streamed/", streamed),
    path("whoami/", whoami),
    path("login/", log_in),
    path("fails/", fails),
]
