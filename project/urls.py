"""URLs of the demo site: the live timeline page as the home page, the A2A app, the admin."""

from django.contrib import admin
from django.urls import include, path

from a2a_toolcall.pages import LiveView
from project.push_receiver import push_receiver

urlpatterns = [
    path("", LiveView.as_view(template_name="home.html"), name="home"),
    path("", include("a2a_toolcall.urls")),
    path("admin/", admin.site.urls),
    # A push-notification webhook (docs/push.md): a receiver as a site would write one.
    path("demo/push-receiver/", push_receiver, name="push-receiver"),
]
