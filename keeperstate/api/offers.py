"""``POST /api/workflows/references/``: what a node of an unsaved graph may reference, for the
editor's @ autocomplete (DESIGN.md §8; keeperstate.engine.offers decides it).

A read: it writes nothing. The body is the editor's graph as it stands, so it is judged by the
offers themselves, with their codes (CYCLE, NODE_NOT_FOUND, WORKFLOW_INVALID), not by a serializer.
Naming the workflow adds its organization's secrets and its last run's answers to the offers.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.access import get_workflow_for
from keeperstate.api.fields import edges_field, nodes_field
from keeperstate.api.schema import errors
from keeperstate.api.views import JSONOnly
from keeperstate.core.inputs import BodyInvalid
from keeperstate.engine.offers import reference_options
from keeperstate.executions.selectors import last_node_results
from keeperstate.secrets.store import secret_names


class ReferencesInput(serializers.Serializer):
    nodes = nodes_field(help_text="The graph as the editor holds it, saved or not.")
    edges = edges_field()
    nodeId = serializers.CharField(help_text="The node whose fields are being filled in.")
    workflowId = serializers.UUIDField(required=False, help_text="The workflow: adds its organization's secrets "
                                       "and the fields its last run's answers held.")


class OfferedFieldOutput(serializers.Serializer):
    field = serializers.CharField(help_text="The path below the node's output, e.g. value or body.result.")
    type = serializers.CharField(help_text="The JSON type: string, integer, number, boolean, array, object, any.")
    description = serializers.CharField()
    token = serializers.CharField(help_text="Ready to insert: <<@nodeId:Label.field>>.")


class OfferedSourceOutput(serializers.Serializer):
    nodeId = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a Serializer attribute name, shadowed harmlessly
    kind = serializers.ChoiceField(choices=["trigger", "action", "system", "secrets"])
    type = serializers.CharField(allow_null=True, help_text="The action's or trigger's id.")
    icon = serializers.CharField(allow_null=True)
    fields = OfferedFieldOutput(many=True)  # type: ignore[assignment]  # as label
    hint = serializers.CharField(allow_null=True, help_text="Why a source offers nothing, and what to do.")


class ReferenceOffersOutput(serializers.Serializer):
    nodeId = serializers.CharField()
    sources = OfferedSourceOutput(many=True, help_text="Upstream nodes, nearest first; then System and Secrets.")


@extend_schema(tags=["workflows"])
class ReferenceOffersView(JSONOnly):
    """The @ autocomplete of the editor."""

    @extend_schema(
        summary="What a node of an unsaved graph may reference: its upstream nodes' output fields, as tokens",
        request=ReferencesInput,
        responses={200: ReferenceOffersOutput, **errors(400, 401, 403, 404, with_body=True)},
    )
    def post(self, request: Request) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise BodyInvalid('The request body must be a JSON object, for example {"nodes": [], "edges": [], '
                              '"nodeId": "trigger"}.')
        extras: dict[str, Any] = {}
        if body.get("workflowId"):
            workflow = get_workflow_for(request.user, body["workflowId"])  # another organization's: 404
            extras["secret_names"] = secret_names(workflow.organization_id)
            extras["last_results"] = last_node_results(workflow)
        return Response(reference_options(body.get("nodes"), body.get("edges"), body.get("nodeId"), **extras))
