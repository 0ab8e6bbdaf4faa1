"""OPTIONS answers: the view's name, description and media types.

DRF's default would also describe each write's serializer, which needs one serializer class
per view; these views have an input and an output serializer per action instead, and the
OpenAPI schema at /api/schema/ describes them all.
"""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import SimpleMetadata


class ApiMetadata(SimpleMetadata):
    def determine_actions(self, request: Any, view: Any) -> dict[str, Any]:
        return {}
