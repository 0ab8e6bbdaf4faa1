"""State over HTTP (DESIGN.md §15): a workflow's keys under ``/api/workflows/<id>/state/``.

Thin adapters over keeperstate.state.clients, which calls the store (versions, TTL, limits,
history) and writes the audit row; nothing here decides a rule of state. HTTP's own spelling of
compare-and-set maps onto the store's ``expectedVersion``: ``If-Match: "<version>"`` is that
version, ``If-None-Match: *`` is version 0 (create only), and a refusal is 412 instead of the
run's 409 because the precondition was the client's header.

Reading needs membership of the workflow's organization; writing needs what changing the
workflow needs, which is the same today (every role edits and runs workflows, §9). Another
organization's workflow answers 404 (keeperstate.accounts.access).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import urlencode

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.access import get_workflow_for
from keeperstate.api.exceptions import error_response
from keeperstate.api.fields import WholeNumberField
from keeperstate.api.schema import errors
from keeperstate.api.serializers import ErrorOutput
from keeperstate.api.views import JSONOnly
from keeperstate.core.errors import Code, CodedError
from keeperstate.core.paths import path_was_utf8
from keeperstate.state.clients import (
    MAX_PAGE,
    Client,
    client_delete,
    client_increment,
    client_set,
    key_entry,
    key_history,
    key_page,
)
from keeperstate.state.errors import StateInvalidKey, StateKeyLimit, StateOrgBudget, StateVersionConflict
from keeperstate.state.shapes import increment_json
from keeperstate.state.store import StateScope, StateWrite

DEFAULT_PAGE = 50


class StateKeyNotFound(CodedError):
    error = Code.STATE_KEY_NOT_FOUND


# --- serializers (shapes for the schema; the store judges values, TTLs and versions) -----------


class StateEntryOutput(serializers.Serializer):
    key = serializers.CharField()
    value = serializers.JSONField(help_text="The stored JSON: text, number, boolean, list or object.")
    version = serializers.IntegerField(help_text="Grows by one on every write; never reused for the key.")
    expiresAt = serializers.DateTimeField(allow_null=True, help_text="When the key expires; null: no TTL.")
    updatedAt = serializers.DateTimeField()
    updatedByExecution = serializers.UUIDField(allow_null=True, help_text="The run that wrote it; null: not a run.")


class StatePageOutput(serializers.Serializer):
    results = StateEntryOutput(many=True)
    next = serializers.URLField(allow_null=True, help_text="The next page, or null on the last one.")


class StateListQuery(serializers.Serializer):
    prefix = serializers.CharField(required=False, default="", trim_whitespace=False,
                                   help_text="Only keys that start with this text.")
    pageSize = WholeNumberField(required=False, default=DEFAULT_PAGE, min_value=1, max_value=MAX_PAGE,
                                help_text=f"Keys per page, 1 to {MAX_PAGE} (default {DEFAULT_PAGE}).")
    cursor = serializers.CharField(required=False, help_text="From the previous page's next link.")

    def validate_prefix(self, value: str) -> str:
        if "\x00" in value:  # no key holds U+0000 (nor can Postgres text)
            raise ValidationError("The prefix contains the character U+0000, which no key holds; remove it.")
        return value

    def validate_cursor(self, value: str) -> str:
        try:
            key = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            key = "\x00"
        if "\x00" in key:  # no key holds U+0000 (nor can Postgres text)
            raise ValidationError("Not a cursor of this list: follow the next link as given.")
        return key


class StateSetInput(serializers.Serializer):
    value = serializers.JSONField(allow_null=True, help_text="Any JSON but null, at most 8 KB.")
    ttl = serializers.JSONField(required=False, allow_null=True,
                                help_text="Seconds until the key expires (whole, ≥ 1, at most 365 days); "
                                "absent or null: no expiry. Each write sets the expiry afresh.")


class StateWriteOutput(serializers.Serializer):
    key = serializers.CharField()
    version = serializers.IntegerField()
    created = serializers.BooleanField(help_text="True when no live key existed before (new or expired).")
    expiresAt = serializers.DateTimeField(allow_null=True)


class StateIncrementInput(serializers.Serializer):
    by = serializers.JSONField(required=False, help_text="A whole number to add (default 1).")
    ttl = serializers.JSONField(required=False, allow_null=True, help_text="As for PUT.")


class StateIncrementOutput(serializers.Serializer):
    key = serializers.CharField()
    value = serializers.IntegerField(help_text="The value after the increment.")
    version = serializers.IntegerField()
    created = serializers.BooleanField()


class StateEventOutput(serializers.Serializer):
    operation = serializers.ChoiceField(choices=["insert", "update", "delete"])
    oldValue = serializers.JSONField(allow_null=True)
    newValue = serializers.JSONField(allow_null=True)
    oldVersion = serializers.IntegerField(allow_null=True)
    newVersion = serializers.IntegerField(allow_null=True)
    execution = serializers.UUIDField(allow_null=True, help_text="The run that made the change, if a run did.")
    actor = serializers.CharField(allow_null=True, help_text="Who changed it outside a run, e.g. "
                                  "'api:alice (token deploy)', 'admin:ada', 'sweeper'; null for a run.")
    at = serializers.DateTimeField()


class StateHistoryOutput(serializers.Serializer):
    results = StateEventOutput(many=True)


class StateHistoryQuery(serializers.Serializer):
    pageSize = WholeNumberField(required=False, default=DEFAULT_PAGE, min_value=1, max_value=MAX_PAGE,
                                help_text=f"The newest events to show, 1 to {MAX_PAGE} (default {DEFAULT_PAGE}).")


# --- schema pieces -----------------------------------------------------------------------------

KEY = OpenApiParameter(
    "key", OpenApiTypes.STR, OpenApiParameter.PATH,
    description="The key, percent-encoded (cursor, feed%3Aeth, caf%C3%A9). A '/' in a key is sent as itself "
    "or as %2F; both arrive as '/', so a/b/ names the key 'a/b'.",
)
IF_MATCH = OpenApiParameter(
    "If-Match", OpenApiTypes.STR, OpenApiParameter.HEADER,
    description='"<version>" (the ETag of a GET): write only if the key is live at that version, else 412 '
    'STATE_VERSION_CONFLICT with details.current. "*": only if the key is live.',
)
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match", OpenApiTypes.STR, OpenApiParameter.HEADER,
    description="*: create only; 412 STATE_VERSION_CONFLICT when the key is live.",
)
_CONFLICT = OpenApiExample(
    "stale If-Match",
    status_codes=["412"],
    response_only=True,
    value={"code": Code.STATE_VERSION_CONFLICT.name, "field": "expectedVersion",
           "details": {"expected": 3, "current": 4},
           "detail": "State key 'cursor' was changed by another run: expected version 3, but its current "
           "version is 4. Read it again with State Get and retry with the new version."},
)
_NOT_FOUND = OpenApiExample(
    "missing key", status_codes=["404"], response_only=True,
    value={"code": Code.STATE_KEY_NOT_FOUND.name, "detail": "There is no live state key 'cursor' in this workflow."},
)
_ENTRY = OpenApiExample(
    "cursor", status_codes=["200"], response_only=True,
    value={"key": "cursor", "value": 19234001, "version": 42, "expiresAt": None,
           "updatedAt": "2026-12-01T09:30:00Z", "updatedByExecution": "6f1c0a4e-8d1b-4b7e-9a52-0c3f8e2d7b10"},
)


def _precondition_failed() -> OpenApiResponse:
    return OpenApiResponse(ErrorOutput, description="If-Match or If-None-Match did not hold: "
                           "STATE_VERSION_CONFLICT with details.expected and details.current.")


def _key_invalid() -> OpenApiResponse:
    return OpenApiResponse(ErrorOutput, description="STATE_INVALID_KEY: the key is empty, over 256 characters, "
                           "holds a control, invisible or direction-changing character, or is not UTF-8.")


def _key_missing() -> OpenApiResponse:
    return OpenApiResponse(ErrorOutput, description="STATE_KEY_NOT_FOUND, or NOT_FOUND for a workflow not yours.")


# --- views -------------------------------------------------------------------------------------


class _StateView(JSONOnly):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if "key" in kwargs and not path_was_utf8(request._request.META):
            # Django re-percent-encodes bytes that are not UTF-8 (a%FFb arrives as the text "a%FFb"),
            # which would give one key two addresses (a%FFb and a%25FFb): such a key is refused.
            raise StateInvalidKey("The key in the address is not UTF-8 text (percent-encoded bytes such as %FF or "
                                  "%C0%AF); percent-encode the key's UTF-8 bytes, e.g. caf%C3%A9.", field="key")

    def scope(self, request: Request, pk: str) -> StateScope:
        workflow = get_workflow_for(request.user, pk)  # 404 for another organization's
        return StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)

    def client(self, request: Request) -> Client:
        token = request.auth
        name = (getattr(token, "name", "") or getattr(token, "token_key", "")) if token is not None else None
        return Client(user=request.user, channel="api", token_name=name or None)

    def handle_exception(self, exc: Exception) -> Response:
        # The client's precondition failed: 412, with the current version as the ETag to retry with.
        if isinstance(exc, StateVersionConflict):
            response = error_response(exc, status=status.HTTP_412_PRECONDITION_FAILED)
            if exc.current:
                response["ETag"] = etag(exc.current)
            return response
        # A limit is bad input here (§15: 400 with the action's code), not a run's conflict.
        if isinstance(exc, StateKeyLimit | StateOrgBudget):
            return error_response(exc, status=status.HTTP_400_BAD_REQUEST)
        return super().handle_exception(exc)


def etag(version: int) -> str:
    return f'"{version}"'


def expected_version(request: Request) -> Any:
    """The expectedVersion the request's preconditions say: None, 0 (If-None-Match: *), "*"
    (If-Match: *, any live version) or the text of If-Match for the store to parse."""
    if_match = request.headers.get("If-Match")
    if_none_match = request.headers.get("If-None-Match")
    if if_match is not None and if_none_match is not None:
        raise CodedError.of(Code.BAD_REQUEST, "Send If-Match or If-None-Match, not both.")
    if if_none_match is not None:
        if if_none_match.strip() != "*":
            raise CodedError.of(Code.BAD_REQUEST, 'A write takes If-None-Match: * (create only), no other value.')
        return 0
    if if_match is None:
        return None
    text = if_match.strip()
    if not text:
        # An empty precondition is no precondition a client meant: writing anyway would be the
        # unconditional write the header was sent to prevent.
        raise CodedError.of(Code.STATE_INVALID_EXPECTED_VERSION, 'If-Match is empty; send the ETag of a GET, e.g. '
                            'If-Match: "4", or leave the header out to write unconditionally.', field="If-Match")
    if text == "*":
        return "*"
    if text.startswith("W/"):
        # RFC 9110 §13.1.1: If-Match compares strongly, and a weak tag never matches strongly.
        raise CodedError.of(Code.STATE_INVALID_EXPECTED_VERSION, f"If-Match takes a strong ETag, {text[2:]} "
                            "without W/ (RFC 9110 compares If-Match strongly); this API's ETags are strong.",
                            field="If-Match")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
        if not text.strip():  # "" is an entity tag no version has: a precondition that cannot hold
            raise CodedError.of(Code.STATE_INVALID_EXPECTED_VERSION, 'If-Match "" names no version; send the ETag '
                                'of a GET, e.g. If-Match: "4".', field="If-Match")
    if "," in text:
        raise CodedError.of(Code.STATE_INVALID_EXPECTED_VERSION, 'If-Match takes one version, e.g. "4".')
    return text


def _resolve_any_live(scope: StateScope, key: str) -> int:
    """If-Match: * — the key's live version, to compare-and-set against (412 when absent)."""
    entry = key_entry(scope=scope, key=key)
    if entry is None:
        raise StateVersionConflict(key=key.strip(), expected=0, current=0)
    return int(entry["version"])


def _write_response(write: StateWrite, body: dict[str, Any]) -> Response:
    code = status.HTTP_201_CREATED if write.created else status.HTTP_200_OK
    return Response(body, status=code, headers={"ETag": etag(write.version)})


class StateListView(_StateView):
    @extend_schema(
        tags=["state"],
        operation_id="state_list",
        summary="List the workflow's live state keys, in key order",
        parameters=[StateListQuery],
        responses={200: StatePageOutput, **errors(400, 401, 404)},
        examples=[OpenApiExample("a page", response_only=True, status_codes=["200"], value={
            "results": [_ENTRY.value],
            "next": "http://127.0.0.1:8000/api/workflows/0b7e…/state/?pageSize=1&cursor=Y3Vyc29y"})],
    )
    def get(self, request: Request, pk: str) -> Response:
        scope = self.scope(request, pk)
        query = StateListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        page, last = key_page(scope=scope, prefix=data["prefix"], after=data.get("cursor"), size=data["pageSize"])
        next_url = None
        if last is not None:
            params = {k: v for k, v in request.query_params.items() if k != "cursor"}
            params["cursor"] = base64.urlsafe_b64encode(last.encode()).decode().rstrip("=")
            next_url = request.build_absolute_uri(f"{request.path}?{urlencode(params)}")
        return Response({"results": page, "next": next_url})


class StateKeyView(_StateView):
    @extend_schema(
        tags=["state"],
        operation_id="state_read",
        summary="Read one live key, with its version as the ETag",
        parameters=[KEY],
        responses={200: StateEntryOutput, 304: None, 400: _key_invalid(), 401: errors(401)[401], 404: _key_missing()},
        examples=[_ENTRY, _NOT_FOUND],
        description='The ETag is "<version>": send it back as If-Match to write only if nobody wrote since. '
        'If-None-Match: "<version>" answers 304 while the key is unchanged.',
    )
    def get(self, request: Request, pk: str, key: str) -> Response:
        scope = self.scope(request, pk)
        entry = key_entry(scope=scope, key=key)
        if entry is None:
            raise StateKeyNotFound(f"There is no live state key '{key.strip()}' in this workflow.")
        tag = etag(entry["version"])
        if request.headers.get("If-None-Match") in (tag, f"W/{tag}"):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": tag})
        return Response(entry, headers={"ETag": tag})

    @extend_schema(
        tags=["state"],
        operation_id="state_write",
        summary="Write a key (compare-and-set with If-Match, create-only with If-None-Match: *)",
        parameters=[KEY, IF_MATCH, IF_NONE_MATCH],
        request=StateSetInput,
        responses={201: StateWriteOutput, 200: StateWriteOutput, **errors(400, 401, 404, with_body=True),
                   412: _precondition_failed()},
        examples=[
            OpenApiExample("cursor", request_only=True, value={"value": 19234001}),
            OpenApiExample("with a TTL", request_only=True, value={"value": {"alerted": True}, "ttl": 3600}),
            OpenApiExample("written", response_only=True, status_codes=["200"],
                           value={"key": "cursor", "version": 43, "created": False, "expiresAt": None}),
            _CONFLICT,
            OpenApiExample("too many keys", response_only=True, status_codes=["400"], value={
                "code": Code.STATE_KEY_LIMIT.name, "field": "key", "details": {"limit": 100, "live": 100},
                "detail": "This workflow already has 100 live state keys, the most it may hold is 100. Reuse an "
                "existing key, give keys a TTL, or delete keys you no longer need."}),
        ],
    )
    def put(self, request: Request, pk: str, key: str) -> Response:
        scope = self.scope(request, pk)
        expected = expected_version(request)
        body = StateSetInput(data=request.data)
        body.is_valid(raise_exception=True)
        if expected == "*":
            expected = _resolve_any_live(scope, key)
        write = client_set(scope=scope, client=self.client(request), key=key, value=body.validated_data["value"],
                           ttl=body.validated_data.get("ttl"), expected_version=expected)
        return _write_response(write, write.as_output())

    @extend_schema(
        tags=["state"],
        operation_id="state_delete",
        summary="Delete a key (only at the If-Match version when given)",
        parameters=[KEY, IF_MATCH],
        responses={204: None, 400: errors(400)[400], 401: errors(401)[401], 404: _key_missing(),
                   412: _precondition_failed()},
        examples=[_NOT_FOUND, _CONFLICT],
    )
    def delete(self, request: Request, pk: str, key: str) -> Response:
        scope = self.scope(request, pk)
        expected = expected_version(request)
        if expected == 0:
            raise CodedError.of(Code.BAD_REQUEST, "A delete takes If-Match, not If-None-Match.")
        if expected == "*":
            expected = _resolve_any_live(scope, key)
        deleted = client_delete(scope=scope, client=self.client(request), key=key, expected_version=expected)
        if not deleted.deleted:
            raise StateKeyNotFound(f"There is no live state key '{key.strip()}' in this workflow.")
        return Response(status=status.HTTP_204_NO_CONTENT)


class StateIncrementView(_StateView):
    @extend_schema(
        tags=["state"],
        operation_id="state_increment",
        summary="Add to a whole-number key atomically (an absent key starts at by)",
        parameters=[KEY],
        request=StateIncrementInput,
        responses={200: StateIncrementOutput, 201: StateIncrementOutput, **errors(400, 401, 404, with_body=True)},
        examples=[
            OpenApiExample("by 5", request_only=True, value={"by": 5}),
            OpenApiExample("counted", response_only=True, status_codes=["200"],
                           value={"key": "alerts", "value": 12, "version": 12, "created": False}),
        ],
    )
    def post(self, request: Request, pk: str, key: str) -> Response:
        scope = self.scope(request, pk)
        body = StateIncrementInput(data=request.data)
        body.is_valid(raise_exception=True)
        write = client_increment(scope=scope, client=self.client(request), key=key, by=body.validated_data.get("by", 1),
                                 ttl=body.validated_data.get("ttl"))
        return _write_response(write, increment_json(write))


class StateHistoryView(_StateView):
    @extend_schema(
        tags=["state"],
        operation_id="state_history",
        summary="A key's changes, newest first: who (run or actor), old and new value and version",
        parameters=[KEY, StateHistoryQuery],
        responses={200: StateHistoryOutput, **errors(400, 401, 404)},
        examples=[OpenApiExample("set by a token", response_only=True, status_codes=["200"], value={"results": [{
            "operation": "update", "oldValue": 19234000, "newValue": 19234001, "oldVersion": 42, "newVersion": 43,
            "execution": None, "actor": "api:alice (token ops)", "at": "2026-12-01T09:31:00Z"}]})],
    )
    def get(self, request: Request, pk: str, key: str) -> Response:
        scope = self.scope(request, pk)
        query = StateHistoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response({"results": key_history(scope=scope, key=key, limit=query.validated_data["pageSize"])})
