"""Builder routes (DESIGN.md §8). Action ids contain spaces: their URLs are percent-encoded."""

from django.urls import path

from builder import endpoints, secrets, state_panel, views

app_name = "builder"
urlpatterns = [
    path("", views.workflow_list, name="workflow-list"),
    path("palette/", views.palette, name="palette"),
    path("secrets/", secrets.secrets_page, name="secrets"),
    path("secrets/<int:organization_id>/<str:name>/delete/", secrets.secret_delete_view, name="secret-delete"),
    path("forms/trigger/<str:trigger_id>/", views.trigger_form, name="trigger-form"),
    path("forms/<str:action_id>/", views.action_form, name="action-form"),
    path("references/", endpoints.references, name="references"),
    path("workflows/<uuid:workflow_id>/", views.editor, name="editor"),
    path("workflows/<uuid:workflow_id>/save/", endpoints.save, name="save"),
    path("workflows/<uuid:workflow_id>/validate/", endpoints.validate, name="validate"),
    path("workflows/<uuid:workflow_id>/run/", endpoints.run, name="run"),
    path("workflows/<uuid:workflow_id>/state/", state_panel.workflow_state, name="state"),
]
