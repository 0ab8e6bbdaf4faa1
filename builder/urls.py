"""Builder routes (DESIGN.md §8): HTML pages and fragments, and two JSON reads (the @ autocomplete and
the state panel). The editor saves, validates and runs through the API. Action ids contain
spaces: their URLs are percent-encoded."""

from django.urls import path

from builder import autocomplete, pages, secrets, state_chart, state_panel, views

app_name = "builder"
urlpatterns = [
    path("", views.workflow_list, name="workflow-list"),
    path("palette/", views.palette, name="palette"),
    path("secrets/", secrets.secrets_page, name="secrets"),
    path("secrets/<int:organization_id>/<str:name>/delete/", secrets.secret_delete_view, name="secret-delete"),
    path("forms/trigger/<str:trigger_id>/", views.trigger_form, name="trigger-form"),
    path("forms/<str:action_id>/", views.action_form, name="action-form"),
    path("references/", autocomplete.references, name="references"),
    path("workflows/<uuid:workflow_id>/", views.editor, name="editor"),
    path("workflows/<uuid:workflow_id>/state/", state_panel.workflow_state, name="state"),
    path("workflows/<uuid:workflow_id>/state-chart/", state_chart.state_chart, name="state-chart"),
    path("workflows/<uuid:workflow_id>/versions/", pages.versions_page, name="versions"),
    path("tokens/", pages.tokens_page, name="tokens"),
]
