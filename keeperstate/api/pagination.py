"""Page-number pagination for every list: ``?page=2&pageSize=20``."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination

from keeperstate.core.numbers import whole_number


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "pageSize"
    max_page_size = 200

    def get_page_size(self, request: Any) -> int:
        # DRF silently falls back to the default for a bad pageSize; a client should hear of it.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        size = whole_number(raw)
        if size is None or size < 1:
            raise ValidationError({self.page_size_query_param: ["A whole number of at least 1."]})
        return min(size, self.max_page_size)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = (
                    f"Results per page: 1 or more (default {self.page_size}, at most {self.max_page_size})."
                )
        return parameters


class VersionPagination(Pagination):
    """A workflow's versions carry their whole graph (up to 1 MB each): fewer to a page."""

    page_size = 10
    max_page_size = 20
