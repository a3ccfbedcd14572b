"""The Content-Security-Policy of the app's pages: the live page and its admin views.

What those pages show comes from agents, which is hostile input (docs/security.md). The pages
already show it as text only; the policy is the second line: no inline script, no plugins, no
``<base>`` of another site, no framing by another site. It is set by the views themselves, no
middleware, and never over a policy the site sets itself (see :func:`apply_policy`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, ParamSpec, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponseBase

__all__ = [
    "ADMIN_POLICY",
    "HEADER",
    "PAGE_POLICY",
    "Policy",
    "apply_policy",
    "content_security_policy",
    "policy_header",
]

HEADER: Final = "Content-Security-Policy"

Policy = Mapping[str, tuple[str, ...]]
"""Directive name -> its sources, e.g. ``{"script-src": ("'self'",)}``."""

PAGE_POLICY: Final[Policy] = MappingProxyType(
    {
        "script-src": ("'self'",),
        # The live page has no inline style, no style attribute (tests/test_pages.py checks).
        "style-src": ("'self'",),
        "object-src": ("'none'",),
        "base-uri": ("'self'",),
        "frame-ancestors": ("'self'",),
    }
)
"""The live page's (``LiveView``): scripts and styles from this site only."""

ADMIN_POLICY: Final[Policy] = MappingProxyType(
    {
        **PAGE_POLICY,
        # Inline styles only: the task page's <style> block and its bars' positions (a style
        # attribute per row), Django's own change list (a <style> block without actions).
        "style-src": ("'self'", "'unsafe-inline'"),
    }
)
"""The app's admin views: as :data:`PAGE_POLICY`, with inline styles allowed."""

# The directives that load static files: they also name STATIC_URL's origin when it has one.
_STATIC_DIRECTIVES: Final = ("script-src", "style-src")

# A site-wide policy in the settings, which its middleware adds to every response after the
# view: Django's own (6.0+, SECURE_CSP) and django-csp's (4.0+, CONTENT_SECURITY_POLICY).
_SITE_POLICY_SETTINGS: Final = ("SECURE_CSP", "CONTENT_SECURITY_POLICY")

P = ParamSpec("P")
R = TypeVar("R", bound=HttpResponseBase)


def _static_origin() -> str | None:
    """STATIC_URL's origin when the static files come from another host (a CDN), else None."""
    parts = urlsplit(str(getattr(settings, "STATIC_URL", None) or ""))
    if not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme else parts.netloc


def policy_header(policy: Policy) -> str:
    """The header's value for ``policy``, STATIC_URL's origin added where static files load."""
    origin = _static_origin()
    directives = []
    for name, sources in policy.items():
        if origin and name in _STATIC_DIRECTIVES and origin not in sources:
            sources = (*sources, origin)
        directives.append(" ".join((name, *sources)))
    return "; ".join(directives)


def _site_sets_policy() -> bool:
    return any(getattr(settings, name, None) for name in _SITE_POLICY_SETTINGS)


def apply_policy(response: R, policy: Policy | None) -> R:
    """Give ``response`` the ``policy`` unless it has one already, or the site sets its own.

    The site's own policy wins: a ``Content-Security-Policy`` header already on the response
    (set by the view, a decorator), or a site-wide policy in the settings (Django's
    ``SECURE_CSP``, django-csp's ``CONTENT_SECURITY_POLICY``), which their middleware adds after
    the view has answered. ``policy=None`` sets nothing.
    """
    if policy is not None and HEADER not in response and not _site_sets_policy():
        response[HEADER] = policy_header(policy)
    return response


def content_security_policy(
    policy: Policy | None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a view to answer under ``policy`` (see :func:`apply_policy`): a page of your own
    that includes the live widget, say, with :data:`PAGE_POLICY`."""

    def decorate(view: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(view)
        def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
            return apply_policy(view(*args, **kwargs), policy)

        return wrapped

    return decorate
