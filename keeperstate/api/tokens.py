"""Your API tokens: list (name, prefix, dates; never the token), create (the token is in this
one answer only), revoke. Each is the keeperstate.accounts.tokens service behind a thin view."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.tokens import MAX_EXPIRY_DAYS, MAX_NAME_LENGTH, create_token, revoke_token, tokens_of
from keeperstate.api.fields import TextField, WholeNumberField
from keeperstate.api.schema import errors
from keeperstate.api.views import JSONOnly, validated
from keeperstate.core.errors import Code, CodedError


class TokenOutput(serializers.Serializer):
    name = serializers.CharField()
    prefix = serializers.CharField(source="token_key", help_text="The token's first characters, to tell it apart.")
    createdAt = serializers.DateTimeField(source="created")
    expiresAt = serializers.DateTimeField(source="expiry", allow_null=True)
    expired = serializers.BooleanField()


class TokenCreatedOutput(TokenOutput):
    token = serializers.CharField(help_text="Shown only in this answer; store it now. Send 'Authorization: Token …'.")


class TokenCreateInput(serializers.Serializer):
    name = TextField(max_length=MAX_NAME_LENGTH, allow_blank=True, required=False, default="",
                     help_text="Visible text: no control, invisible or direction-changing characters "
                     "(400 TOKEN_INVALID).")
    expiresInDays = WholeNumberField(
        min_value=1, max_value=MAX_EXPIRY_DAYS, allow_null=True, required=False,
        help_text="Days until the token stops working; null: never; absent: the server's default.",
    )


class TokenListView(JSONOnly):
    @extend_schema(tags=["tokens"], summary="Your API tokens (never the tokens themselves)",
                   responses={200: TokenOutput(many=True), **errors(401)})
    def get(self, request: Request) -> Response:
        return Response(TokenOutput(tokens_of(request.user), many=True).data)

    @extend_schema(tags=["tokens"], summary="Create a named token; the answer is the only time it is shown",
                   request=TokenCreateInput, responses={201: TokenCreatedOutput, **errors(400, 401, with_body=True)})
    def post(self, request: Request) -> Response:
        data = validated(TokenCreateInput, request)
        kwargs = {"expires_in_days": data["expiresInDays"]} if "expiresInDays" in data else {}
        row, token = create_token(request.user, name=data["name"], **kwargs)
        row.token = token  # type: ignore[attr-defined]  # for this answer only
        return Response(TokenCreatedOutput(row).data, status=status.HTTP_201_CREATED)


class TokenRevokeView(JSONOnly):
    @extend_schema(tags=["tokens"], summary="Revoke one of your tokens by its prefix",
                   responses={204: None, **errors(401, 404)})
    def delete(self, request: Request, prefix: str) -> Response:
        if not revoke_token(request.user, prefix):
            raise CodedError.of(Code.NOT_FOUND, "You have no token with this prefix.")
        return Response(status=status.HTTP_204_NO_CONTENT)
