"""Root URLconf. The builder is included by dotted path: keeperstate never imports builder."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from keeperstate import demo_feed
from keeperstate.api.webhooks import WebhookView
from keeperstate.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(url="/builder/", permanent=False)),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("keeperstate.api.urls")),
    path("hooks/<str:workflow_id>/", WebhookView.as_view(), name="webhook"),
    path("builder/", include("builder.urls")),
    path("healthz", healthz, name="healthz"),
    # The demo's block feed and alert sink (keeperstate.demo_feed), which the demo monitor calls.
    path("demo/feed/", demo_feed.feed, name="demo-feed"),
    path("demo/alerts/", demo_feed.alerts, name="demo-alerts"),
]

# Plain pages without internals; a database outage answers 503 (keeperstate/error_pages.py).
handler400 = "keeperstate.error_pages.bad_request"
handler403 = "keeperstate.error_pages.permission_denied"
handler404 = "keeperstate.error_pages.page_not_found"
handler500 = "keeperstate.error_pages.server_error"
