"""Run a saved workflow, or a graph from a JSON file, and print the node results as JSON."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from keeperstate.accounts.models import Organization
from keeperstate.core.errors import CodedError
from keeperstate.executions.service import run_workflow
from keeperstate.ops.schema import require_migrated
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import workflow_create, workflow_update


class Command(BaseCommand):
    help = (
        "Run a workflow by id, or the graph in a JSON file ({\"nodes\": [...], \"edges\": [...]}), and print "
        "its execution as JSON. A file's graph runs as a workflow named after the file in --organization, so "
        "its state carries over between runs like any workflow's. Exits 1 when the run fails."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("workflow", help="a workflow id, or the path of a graph JSON file")
        parser.add_argument("--input", default="{}", help='the run input as a JSON object, e.g. \'{"block": 100}\'')
        parser.add_argument("--organization", default="demo", help="organization slug for a graph file (default: demo)")

    def handle(self, *args: Any, **options: Any) -> None:
        require_migrated()
        try:
            run_input = json.loads(options["input"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--input is not JSON: {exc}") from exc
        workflow = self._workflow(options["workflow"], options["organization"])
        try:
            execution = run_workflow(workflow, run_input)
        except CodedError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            json.dumps(
                {
                    "execution": str(execution.id),
                    "workflow": str(workflow.id),
                    "status": execution.status,
                    "nodeResults": execution.node_results,
                    "error": execution.error,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        if execution.status != "success":
            raise CommandError(execution.error or "The run failed.")

    def _workflow(self, ref: str, org_slug: str) -> Workflow:
        try:
            return Workflow.objects.alive().get(pk=uuid.UUID(ref))
        except ValueError:
            pass
        except Workflow.DoesNotExist as exc:
            raise CommandError(f"No workflow with id {ref}.") from exc
        path = Path(ref)
        if not path.is_file():
            raise CommandError(f"{ref} is neither a workflow id nor a JSON file.")
        try:
            document = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc
        organization = Organization.objects.filter(slug=org_slug).first()
        if organization is None:
            raise CommandError(f"No organization '{org_slug}'. Pass --organization, or run `manage.py serve` once.")
        nodes, edges = document.get("nodes", []), document.get("edges", [])
        name = f"{path.name} (run_workflow)"
        try:
            existing = Workflow.objects.alive().filter(organization=organization, name=name).first()
            if existing is not None:
                return workflow_update(existing, nodes=nodes, edges=edges)
            return workflow_create(organization=organization, user=None, name=name, nodes=nodes, edges=edges)
        except CodedError as exc:
            details = exc.details.get("errors") or []
            lines = "\n".join(f"  {d['nodeId']}.{d['field']}: {d['message']}" for d in details)
            raise CommandError(f"{exc.message}\n{lines}".rstrip()) from exc
