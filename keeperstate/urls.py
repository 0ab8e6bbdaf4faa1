"""Root URLconf. The builder is included by dotted path: keeperstate never imports builder."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from keeperstate.api.webhooks import WebhookView

urlpatterns = [
    path("", RedirectView.as_view(url="/builder/", permanent=False)),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("keeperstate.api.urls")),
    path("hooks/<str:workflow_id>/", WebhookView.as_view(), name="webhook"),
    path("builder/", include("builder.urls")),
]
