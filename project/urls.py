"""URLs of the demo site: the live timeline page as the home page, the A2A app, the admin."""

from django.contrib import admin
from django.urls import include, path

from a2a_toolcall.pages import LiveView

urlpatterns = [
    path("", LiveView.as_view(template_name="home.html"), name="home"),
    path("", include("a2a_toolcall.urls")),
    path("admin/", admin.site.urls),
]
