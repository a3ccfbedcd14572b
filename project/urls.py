"""URLs of the demo site."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView

urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("", include("a2a_toolcall.urls")),
    path("admin/", admin.site.urls),
]
