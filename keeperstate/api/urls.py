"""Routes of the DRF API (DESIGN.md §9), its OpenAPI schema and its docs pages."""

from django.urls import path, re_path, register_converter
from django.urls.converters import PathConverter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from keeperstate.api import audit, offers, secrets, state, state_summary, stats, tokens, views
from keeperstate.api.authentication import api_authentication_classes

app_name = "api"
AUTHENTICATION = api_authentication_classes()

class KeyConverter(PathConverter):
    """A state key in the path: any text, '/' and line breaks too (Django's path converter stops
    at a line break), so a key the store refuses is answered STATE_INVALID_KEY, not a 404."""

    regex = r"[\s\S]+"


register_converter(KeyConverter, "key")

router = SimpleRouter()
router.register("workflows", views.WorkflowViewSet, basename="workflow")
router.register("executions", views.ExecutionViewSet, basename="execution")

urlpatterns = [
    path("actions/", views.ActionCatalogueView.as_view(), name="actions"),
    path("execute/node/", views.NodeExecuteView.as_view(), name="execute-node"),
    path("tokens/", tokens.TokenListView.as_view(), name="tokens"),
    path("tokens/<str:prefix>/", tokens.TokenRevokeView.as_view(), name="token-revoke"),
    path("audit/", audit.AuditListView.as_view(), name="audit"),
    # Before the router's workflows/<pk>/: the editor's @ autocomplete for an unsaved graph.
    path("workflows/references/", offers.ReferenceOffersView.as_view(), name="workflow-references"),
    *router.urls,
    path("secrets/", secrets.SecretListView.as_view(), name="secrets"),
    path("secrets/<str:name>/", secrets.SecretDetailView.as_view(), name="secret"),
    # State over HTTP (DESIGN.md §15). <key:key>: a key may hold '/', which WSGI decodes from %2F.
    path("workflows/<str:pk>/state/", state.StateListView.as_view(), name="state-list"),
    path("workflows/<str:pk>/state/<key:key>/history/", state.StateHistoryView.as_view(), name="state-history"),
    path("workflows/<str:pk>/state/<key:key>/increment/", state.StateIncrementView.as_view(), name="state-increment"),
    path("workflows/<str:pk>/state/<key:key>/", state.StateKeyView.as_view(), name="state-key"),
    # The editor's State panel: beside §15's keys, never under state/, where every path is a key.
    path("workflows/<str:pk>/state-summary/", state_summary.StateSummaryView.as_view(), name="state-summary"),
    path("workflows/<str:pk>/state-history/", state_summary.StateHistoryListView.as_view(), name="state-history-list"),
    path("workflows/<str:pk>/state-chart/", state_summary.StateChartView.as_view(), name="state-chart"),
    path("workflows/<str:pk>/executions/stats/", stats.ExecutionStatsView.as_view(), name="workflow-execution-stats"),
    path("schema/", SpectacularAPIView.as_view(authentication_classes=AUTHENTICATION), name="schema"),
    # Swagger UI from drf-spectacular-sidecar: served from our static files, no CDN. (The
    # sidecar's Redoc page loads web fonts from a CDN, so it is not offered.) The split view
    # serves its init script at ?script rather than inline, as the CSP requires.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api:schema", authentication_classes=AUTHENTICATION),
        name="docs",
    ),
    # Anything else under /api/ is a JSON 404, not Django's HTML page.
    re_path(r"^.*$", views.not_found, name="not-found"),
]
