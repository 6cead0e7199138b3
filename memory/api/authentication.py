"""The one REST authentication class: `Authorization: Bearer <token>`, or `?token=` where the token allows it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from memory.api.handover import failure_taken, handed_over
from memory.credentials import bearer_secret
from memory.errors import AuthenticationError
from memory.models import AccessToken, User
from memory.services.tokens import token_call_for_secret, token_touch


class BearerTokenAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, AccessToken] | None:
        handed = handed_over(request)  # checked by the fast lane (memory.api.lane), its call counted there
        if handed is not None:
            if not handed.touched and (failure := failure_taken(request)) is not None:
                raise failure  # the lane's check or touch failed: as if it had failed here
            if handed.token is not None:
                if not handed.touched:
                    token_touch(handed.token)
                request.rate_verdict = handed.counted  # type: ignore[attr-defined]
                return handed.token.owner, handed.token
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header:
            secret = bearer_secret(header)
            if not secret:
                raise exceptions.AuthenticationFailed(
                    "The Authorization header must be 'Bearer <token>'.", code="TOKEN_INVALID"
                )
            token = self._resolve(request, secret, via_query=False)
        elif "token" in request.query_params:
            token = self._resolve(request, request.query_params["token"], via_query=True)
        else:
            return None
        token_touch(token)
        return token.owner, token

    @staticmethod
    def _resolve(request: Request, secret: str, *, via_query: bool) -> AccessToken:
        try:
            # The token's rate window is counted in the same Redis round trip; TokenRateThrottle reads the verdict.
            token, verdict = token_call_for_secret(secret, via_query=via_query, count_call=True)
        except AuthenticationError as exc:
            raise exceptions.AuthenticationFailed(exc.message, code=exc.code) from exc
        request.rate_verdict = verdict  # type: ignore[attr-defined]
        return token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="memory"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describes the token in the OpenAPI document, so the docs page offers 'Authorize'."""

    target_class = BearerTokenAuthentication
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An access token (mem_…)."}
