"""URLs: ``path("", include("a2a_toolcall.urls"))`` serves the card and the endpoint."""

from django.urls import path

from a2a_toolcall import views

app_name = "a2a_toolcall"

urlpatterns = [
    path(".well-known/agent-card.json", views.agent_card, name="agent_card"),
    # Clients append a slash to the interface URL; both spellings answer, without a redirect.
    path("a2a/", views.jsonrpc_endpoint, name="jsonrpc"),
    path("a2a", views.jsonrpc_endpoint, name="jsonrpc_no_slash"),
]
