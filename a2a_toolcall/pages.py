"""The live timeline page: a browser client of this app's own A2A endpoint.

The page is a template plus plain ES modules (``static/a2a_toolcall/``); everything it shows
comes from the JSON-RPC endpoint, so any process serving the app serves the page too. See
docs/browser.md.
"""

from __future__ import annotations

from typing import Any

from django.views.generic import TemplateView

__all__ = ["LiveView", "live"]

TASK_ID_MAX_LENGTH = 200
"""A longer ``?task=`` is no task id of ours; it is dropped rather than sent to the endpoint."""


class LiveView(TemplateView):
    """The live timeline; ``?task=<taskId>`` follows an existing task.

    Extend ``a2a_toolcall/live.html`` (blocks ``title``, ``heading``, ``intro``, ``widget``,
    ``footer``, ``extrahead``...) and serve it with ``LiveView.as_view(template_name=...)``.
    """

    template_name = "a2a_toolcall/live.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Add ``a2a_task_id``: the task to follow, or ""."""
        context = super().get_context_data(**kwargs)
        task_id = self.request.GET.get("task", "").strip()
        context["a2a_task_id"] = task_id if len(task_id) <= TASK_ID_MAX_LENGTH else ""
        return context


live = LiveView.as_view()
"""The page as a view function, at ``a2a_toolcall:live``."""
