"""The builder's pages and fragments: the workflow list, the editor, the palette and the
config forms. Every JSON the editor reads or writes (saves, runs, the @ offers, the State panel)
is the API's."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_http_methods

from builder.forms import ConfigForm, FormSpec, form_data, initial_values, spec_for_action, spec_for_trigger
from builder.http import failure_fragment, read_json
from builder.palette import editor_catalogue, form_url, palette_groups
from builder.run_charts import list_run_charts
from keeperstate.accounts.access import get_workflow_for, organizations_of
from keeperstate.accounts.models import Organization
from keeperstate.core.errors import Code, CodedError, form_error
from keeperstate.engine.graph import Graph, GraphInvalid
from keeperstate.workflows.selectors import workflows_for_list
from keeperstate.workflows.services import workflow_create
from keeperstate.workflows.shapes import workflow_json

# How often the open editor reads its runs and next run again (the Runs list is live).
EDITOR_POLL_MS = 2000


class WorkflowCreateForm(forms.Form):
    name = forms.CharField(
        max_length=200, label="Name", widget=forms.TextInput(attrs={"placeholder": "e.g. Block monitor"})
    )
    organization = forms.ModelChoiceField(
        queryset=Organization.objects.none(), empty_label=None, label="Organization"
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        organizations = organizations_of(user).order_by("name")
        field = cast(forms.ModelChoiceField, self.fields["organization"])
        field.queryset = organizations  # only the user's organizations are valid choices
        if organizations.count() == 1:
            field.widget = forms.HiddenInput()
            field.initial = organizations.first()


@login_required
@ensure_csrf_cookie  # the list's rename, duplicate and delete call the API with the CSRF cookie
@require_http_methods(["GET", "POST"])
def workflow_list(request: HttpRequest) -> HttpResponse:
    form = WorkflowCreateForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            workflow = workflow_create(
                organization=form.cleaned_data["organization"], user=request.user, name=form.cleaned_data["name"]
            )
        except CodedError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, form_error(exc))
        else:
            return redirect("builder:editor", workflow_id=workflow.id)
    has_organization = organizations_of(request.user).exists()
    workflows = list(workflows_for_list(request.user))
    context = {
        "workflows": workflows,
        "run_charts": list_run_charts(workflows),
        "form": form,
        "has_organization": has_organization,
        "highlight": request.GET.get("highlight", ""),
    }
    return render(request, "builder/workflow_list.html", context, status=400 if form.errors else 200)


@login_required
@ensure_csrf_cookie
@require_GET
def editor(request: HttpRequest, workflow_id: Any) -> HttpResponse:
    workflow = get_workflow_for(request.user, workflow_id)
    # The graph the editor edits, and what the switches beside it start with: the workflow's JSON,
    # which the page reads from the API (GET /api/workflows/<id>/) again after each change.
    shape = workflow_json(workflow)
    graph = {name: shape[name] for name in ("id", "name", "nodes", "edges")}
    settings = {
        **{name: shape[name] for name in ("id", "organization", "active", "nextRunAt", "webhookSecret", "settings")},
        "webhookUrl": request.build_absolute_uri(shape["webhookUrl"]),
    }
    return render(
        request,
        "builder/editor.html",
        {"workflow": workflow, "graph": graph, "settings": settings, "catalogue": editor_catalogue(),
         "palette_groups": palette_groups(), "poll_ms": EDITOR_POLL_MS},
    )


@login_required
@require_GET
def palette(request: HttpRequest) -> HttpResponse:
    return render(request, "builder/palette.html", {"palette_groups": palette_groups()})


@require_http_methods(["GET", "POST"])
def action_form(request: HttpRequest, action_id: str) -> HttpResponse:
    spec = spec_for_action(action_id)
    if spec is None:
        raise Http404(f"No action '{action_id}'.")
    return _config_form(request, spec)


@require_http_methods(["GET", "POST"])
def trigger_form(request: HttpRequest, trigger_id: str) -> HttpResponse:
    spec = spec_for_trigger(trigger_id)
    if spec is None:
        raise Http404(f"No trigger '{trigger_id}'.")
    return _config_form(request, spec)


FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _config_form(request: HttpRequest, spec: FormSpec) -> HttpResponse:
    """GET: the form with initial values from the query string or a saved node
    (``?workflow=<id>&node=<node id>``). POST (form fields, or a JSON object of them): the form
    judged, with its field errors (400) or the normalised config (200)."""
    if not request.user.is_authenticated:
        if request.method == "POST":
            return failure_fragment(request, CodedError.of(Code.NOT_AUTHENTICATED,
                                                           "Your session has ended. Log in again and retry."))
        return redirect_to_login(request.get_full_path())
    if request.method == "GET":
        initial = initial_values(spec, _saved_node_config(request), request.GET)
        return _render_form(request, spec, ConfigForm(spec, initial=initial))
    try:
        if request.content_type in FORM_MEDIA_TYPES:
            data: Any = request.POST
        else:  # JSON, or a coded 415 from the one body reader
            data = form_data(spec, read_json(request))
    except CodedError as exc:  # the body reader's PARSE_ERROR, REQUEST_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE
        return failure_fragment(request, exc)
    form = ConfigForm(spec, data=data)
    return _render_form(request, spec, form, status=200 if form.is_valid() else 400)


def _render_form(request: HttpRequest, spec: FormSpec, form: ConfigForm, status: int = 200) -> HttpResponse:
    bound_valid = form.is_bound and not form.errors
    context = {
        "spec": spec,
        "form": form,
        "post_url": form_url(spec.kind, spec.id),
        "valid": bound_valid,
    }
    return render(request, "builder/config_form.html", context, status=status)


def _saved_node_config(request: HttpRequest) -> dict[str, Any] | None:
    workflow_id, node_id = request.GET.get("workflow"), request.GET.get("node")
    if not workflow_id or not node_id:
        return None
    workflow = get_workflow_for(request.user, workflow_id)  # another organization's: 404
    try:
        graph = Graph.parse(workflow.nodes, workflow.edges)
    except GraphInvalid as exc:
        raise Http404("The saved workflow cannot be read.") from exc
    if node_id not in graph.nodes:
        raise Http404(f"No node '{node_id}' in this workflow.")
    return graph.config(node_id)

