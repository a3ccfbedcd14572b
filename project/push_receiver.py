"""A webhook that receives A2A push notifications, as a Django site would write one.

Served by the demo site at ``/demo/push-receiver/`` (docs/push.md walks through it). The server
POSTs each event of a task as a 1.0 ``StreamResponse`` (``Content-Type: application/a2a+json``)
with the config's token in ``X-A2A-Notification-Token`` and its credentials in
``Authorization``. This receiver checks the token in constant time, answers 204 at once (a slow
answer holds the task's later events back: they go in order), and keeps the last events in
memory for ``GET`` (with the same token) to show. It may see an event twice (delivery is at
least once): ``seq`` is not sent, but a status's timestamp or an artifact's id tells repeats.
"""

from __future__ import annotations

import collections
import hmac
import json
import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

logger = logging.getLogger(__name__)

KINDS = ("task", "statusUpdate", "artifactUpdate", "message")
received: collections.deque[dict[str, Any]] = collections.deque(maxlen=100)
"""The last events received (this process's, for the demo; a site would store or act on them)."""


def _authorised(request: HttpRequest) -> bool:
    expected = str(getattr(settings, "DEMO_PUSH_TOKEN", "") or "")
    given = request.headers.get("X-A2A-Notification-Token", "")
    return bool(expected) and hmac.compare_digest(given.encode(), expected.encode())


@csrf_exempt  # a server-to-server POST, authenticated by its token, not by a cookie
def push_receiver(request: HttpRequest) -> HttpResponse:
    """POST: one event. GET: the last events received (same token)."""
    if not _authorised(request):
        return HttpResponse(status=401)
    if request.method == "GET":
        return JsonResponse({"received": list(received)})
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    try:
        event = json.loads(request.body)
    except ValueError:
        return HttpResponse(status=400)
    kind = next((k for k in KINDS if isinstance(event, dict) and k in event), None)
    if kind is None:
        return HttpResponse(status=400)
    body = event[kind]
    task_id = body.get("id") if kind == "task" else body.get("taskId")
    state = (body.get("status") or {}).get("state", "")
    logger.info("push notification: task %s, %s %s", task_id, kind, state)
    received.append(event)
    return HttpResponse(status=204)
