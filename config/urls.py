from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memory.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(url="/ui/", permanent=False)),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("ui/", include("memory.web.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("commitments.urls")),
    path("", include("metrics.urls")),
    path("", include("maintenance.urls")),
    path("", include("memory.api.urls")),
]

handler404 = "memory.api.errors.json_not_found"
handler500 = "memory.api.errors.json_server_error"
