"""Root URLconf. The builder is included by dotted path: keeperstate never imports builder. The
demo's feed and alert sink are mounted only where the demo app is installed."""

from django.apps import apps
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from keeperstate.api.webhooks import WebhookView
from keeperstate.mcp.http import McpView
from keeperstate.ops.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(url="/builder/", permanent=False)),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("keeperstate.api.urls")),
    path("hooks/<str:workflow_id>/", WebhookView.as_view(), name="webhook"),
    path("builder/", include("builder.urls")),
    path("healthz", healthz, name="healthz"),
    path("mcp/", McpView.as_view(), name="mcp"),  # MCP for agents (DESIGN.md §16)
]
if apps.is_installed("keeperstate.demo"):
    urlpatterns.append(path("demo/", include("keeperstate.demo.urls")))

# Plain pages without internals; a database outage answers 503 (keeperstate/web/error_pages.py).
handler400 = "keeperstate.web.error_pages.bad_request"
handler403 = "keeperstate.web.error_pages.permission_denied"
handler404 = "keeperstate.web.error_pages.page_not_found"
handler500 = "keeperstate.web.error_pages.server_error"
