"""URLs: ``path("", include("a2a_toolcall.urls"))`` serves the card, the endpoint and the page."""

from django.urls import path

from a2a_toolcall import pages, views

app_name = "a2a_toolcall"

urlpatterns = [
    path(".well-known/agent-card.json", views.agent_card, name="agent_card"),
    # Clients append a slash to the interface URL; both spellings answer, without a redirect.
    path("a2a/", views.jsonrpc_endpoint, name="jsonrpc"),
    path("a2a", views.jsonrpc_endpoint, name="jsonrpc_no_slash"),
    path("live/", pages.live, name="live"),
]
