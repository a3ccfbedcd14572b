"""The live timeline page: a browser client of this app's own A2A endpoint.

The page is a template plus plain ES modules (``static/a2a_toolcall/``); everything it shows
comes from the JSON-RPC endpoint, so any process serving the app serves the page too. It
answers under a Content-Security-Policy (:data:`a2a_toolcall.csp.PAGE_POLICY`). See
docs/browser.md.
"""

from __future__ import annotations

from typing import Any, Final

from django.contrib.auth.mixins import AccessMixin
from django.http import HttpRequest, HttpResponseBase
from django.views.generic import TemplateView

from a2a_toolcall.conf import get_setting
from a2a_toolcall.csp import PAGE_POLICY, Policy, apply_policy

__all__ = ["SESSION_MARKER", "LiveView", "live"]

TASK_ID_MAX_LENGTH = 200
"""A longer ``?task=`` is no task id of ours; it is dropped rather than sent to the endpoint."""

SESSION_MARKER: Final = "a2a_toolcall"
"""The session entry the page writes for an anonymous visitor, so the visitor has a session."""


class LiveView(AccessMixin, TemplateView):
    """The live timeline; ``?task=<taskId>`` follows an existing task.

    Visitors must log in (they are sent to ``LOGIN_URL``) unless ``ALLOW_ANONYMOUS`` is on;
    an anonymous visitor is then given a session, the one the endpoint ties its tasks to. The
    page carries the CSRF token the endpoint asks of session callers (``data-csrf-token``).

    Extend ``a2a_toolcall/live.html`` (blocks ``title``, ``heading``, ``intro``, ``widget``,
    ``footer``, ``extrahead``...) and serve it with ``LiveView.as_view(template_name=...)``.

    The page answers under ``content_security_policy`` (no inline script or style), unless the
    site sets a policy of its own; a template adding inline code gives
    ``as_view(content_security_policy=...)`` a policy allowing it, or None.
    """

    template_name = "a2a_toolcall/live.html"
    content_security_policy: Policy | None = PAGE_POLICY

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        user = getattr(request, "user", None)
        if not getattr(user, "is_authenticated", False):
            if not get_setting("ALLOW_ANONYMOUS"):
                return self.handle_no_permission()
            session = getattr(request, "session", None)
            if session is not None:
                # An empty session is never saved: without an entry the visitor would have no
                # session key, and its tasks would belong to whoever holds their ids.
                session.setdefault(SESSION_MARKER, 1)
        response = super().dispatch(request, *args, **kwargs)
        return apply_policy(response, self.content_security_policy)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Add ``a2a_task_id``: the task to follow, or ""."""
        context = super().get_context_data(**kwargs)
        task_id = self.request.GET.get("task", "").strip()
        context["a2a_task_id"] = task_id if len(task_id) <= TASK_ID_MAX_LENGTH else ""
        return context


live = LiveView.as_view()
"""The page as a view function, at ``a2a_toolcall:live``."""
