"""Builder routes (DESIGN.md §8): HTML pages and fragments only. Every JSON the editor reads or
writes (the @ autocomplete, the State panel and its chart, saves, runs) is the API's. Action ids
contain spaces: their URLs are percent-encoded."""

from django.urls import path

from builder import pages, secrets, views

app_name = "builder"
urlpatterns = [
    path("", views.workflow_list, name="workflow-list"),
    path("palette/", views.palette, name="palette"),
    path("secrets/", secrets.secrets_page, name="secrets"),
    path("secrets/<int:organization_id>/<str:name>/delete/", secrets.secret_delete_view, name="secret-delete"),
    path("forms/trigger/<str:trigger_id>/", views.trigger_form, name="trigger-form"),
    path("forms/<str:action_id>/", views.action_form, name="action-form"),
    path("workflows/<uuid:workflow_id>/", views.editor, name="editor"),
    path("workflows/<uuid:workflow_id>/versions/", pages.versions_page, name="versions"),
    path("tokens/", pages.tokens_page, name="tokens"),
]
