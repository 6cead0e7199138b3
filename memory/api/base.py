"""The base of every REST endpoint: validate strictly, build the Access, call one service, record a ToolEvent.

An endpoint declares `tool`, `request_serializer`, `response_serializer` (or, when `handle()` returns a
ready dict, a documentation-only `response_schema`) and implements `handle()`; it never looks at the token
or filters by owner itself. The OpenAPI operation of every endpoint is derived here from those attributes.
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.access import WORKSPACE_HEADER, Access, access_for_token, workspace_requested
from memory.api.handover import failure_taken, handed_over
from memory.api.openapi import ERROR_STATUSES, ErrorSerializer
from memory.api.parsers import BodyRequest
from memory.api.shapes import shaped
from memory.connectivity import READ_TOOLS, is_disconnect, outage_noted, probe, reconnect, replay_safe
from memory.errors import AuthenticationError
from memory.models import AccessToken, ChangeSurface
from memory.services.telemetry import call_record

logger = logging.getLogger("memory.api")


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare, so a misspelt option is an error, not a silent default."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown}, code="unknown_field")
        return super().to_internal_value(data)


class RequestSerializer(StrictSerializer):
    """Fields every call accepts: whose memory (`userId`) and which partition (`partitionKey`)."""

    userId = serializers.CharField(
        required=False, max_length=200, help_text="The user's external id. Defaults to the token's owner."
    )
    partitionKey = serializers.CharField(
        required=False,
        max_length=64,
        help_text="Limit the call to this partition. Defaults to the token's default, else memory:personal.",
    )


class EndpointSchema(AutoSchema):
    """OpenAPI from the endpoint's declared serializers and its tool name."""

    def get_request_serializer(self) -> Any:
        return getattr(self.view, "request_schema", None) or getattr(self.view, "request_serializer", None)

    def get_override_parameters(self) -> list[Any]:
        query = getattr(self.view, "query_serializer", None)
        return [query] if query is not None else []

    def get_response_serializers(self) -> Any:
        """The answer under each success status the endpoint gives, and the one error shape under every
        error status it can give."""
        from drf_spectacular.utils import OpenApiResponse

        view = self.view
        answer = getattr(view, "response_serializer", None) or getattr(view, "response_schema", None)
        statuses = getattr(view, "success_statuses", None) or (getattr(view, "success_status", 200),)
        media_type = getattr(view, "answer_media_type", "")
        responses: dict[Any, Any] = {(status, media_type) if media_type else status: answer for status in statuses}
        for status in (*ERROR_STATUSES, *getattr(view, "more_error_statuses", ())):
            responses[status] = OpenApiResponse(ErrorSerializer, description="The one error shape.")
        return responses

    def get_examples(self) -> list[Any]:
        from drf_spectacular.utils import OpenApiExample

        example = getattr(self.view, "example_request", None)
        return [OpenApiExample("Request", value=example, request_only=True)] if example else []

    def get_operation_id(self) -> str:
        return str(getattr(self.view, "tool", super().get_operation_id()))

    # drf-spectacular calls get_description() without arguments; DRF's stub describes another signature.
    def get_description(self) -> str:  # type: ignore[override]
        return (self.view.__doc__ or "").strip()


class Endpoint(APIView):
    tool: ClassVar[str]
    request_serializer: ClassVar[type[serializers.Serializer]] = RequestSerializer
    response_serializer: ClassVar[type[serializers.Serializer] | None] = None
    # Documents the answer when `handle()` builds it itself (never used to render it), a body that is not
    # the request serializer's JSON (multipart, raw bytes), query parameters, and an answer that is not JSON.
    response_schema: ClassVar[Any] = None
    request_schema: ClassVar[Any] = None
    query_serializer: ClassVar[type[serializers.Serializer] | None] = None
    answer_media_type: ClassVar[str] = ""
    # A minimal valid body: shown in the OpenAPI document and sent by the contract tests.
    example_request: ClassVar[dict[str, Any]] = {}
    success_status: int = 200
    # Where an endpoint answers more than one success status (else `success_status`), and the error
    # statuses it gives beyond the ones every endpoint can (memory.api.openapi.ERROR_STATUSES).
    success_statuses: ClassVar[tuple[int, ...]] = ()
    more_error_statuses: ClassVar[tuple[int, ...]] = ()
    # Ordinary calls answered by the fast lane, without Django's middleware chain and DRF (memory.api.lane).
    fast_lane: ClassVar[bool] = False
    http_method_names = ["post", "options"]
    schema = EndpointSchema()

    access: Access | None = None
    _started: float = 0.0
    _initialized = False
    _reconnected = False

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        return BodyRequest(
            request,
            parsers=self.get_parsers(),
            authenticators=self.get_authenticators(),
            negotiator=self.get_content_negotiator(),
            parser_context=self.get_parser_context(request),
        )

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        handed = handed_over(request)  # the fast lane's attempt counts in the call's duration
        self._started = self._started or (handed.started if handed else time.perf_counter())
        super().initial(request, *args, **kwargs)
        self._initialized = True

    def handle_exception(self, exc: Exception) -> Any:
        """A dropped database connection is retried once on a fresh one when the call may run twice (a read, or
        a write with an eventId: memory.connectivity.replay_safe); anything else is answered as it is."""
        # The direct probe first: with the server down, a retry would only wait on the pool again.
        if not self._reconnected and is_disconnect(exc) and self._replay_safe() and probe():
            self._reconnected = True
            reconnect()
            logger.warning("api.reconnected", extra={"tool": self.tool})
            try:
                if not self._initialized:  # the drop came during authentication
                    self.initial(self.request)
                return self.respond(self.request)
            except Exception as again:
                exc = again
        return super().handle_exception(exc)

    def _replay_safe(self) -> bool:
        if self.tool in READ_TOOLS:
            return True
        try:
            data = self.request.data
        except Exception:  # an unreadable body is not worth a retry
            return False
        return replay_safe(self.tool, data)

    def post(self, request: Request, **kwargs: Any) -> HttpResponseBase:
        return self.respond(request)

    def respond(self, request: Request) -> HttpResponseBase:
        handed = handed_over(request)
        if handed is not None and (failure := failure_taken(request)) is not None:
            # The fast lane's attempt failed: answered as if this one had (a dropped connection is retried once).
            self.access = handed.access
            raise failure
        data = self.parse(request)
        self.access = self.build_access(request, data)
        result = self.handle(self.access, data)
        if isinstance(result, HttpResponseBase):
            return result
        return Response(self.answer_of(result), status=self.success_status)

    def parse(self, request: Request) -> dict[str, Any]:
        """The validated request fields (a JSON body by default)."""
        return self.validated(request.data)

    @classmethod
    def validated(cls, data: Any) -> dict[str, Any]:
        """The fields of a parsed JSON body, checked by the request serializer (ValidationError otherwise)."""
        incoming = shaped(cls.request_serializer, data=data)
        incoming.is_valid(raise_exception=True)
        return dict(incoming.validated_data)

    @classmethod
    def answer_of(cls, result: Any) -> Any:
        """What `handle()` returned, as the JSON answer holds it."""
        return shaped(cls.response_serializer, result).data if cls.response_serializer is not None else result

    def build_access(self, request: Request, data: dict[str, Any]) -> Access:
        token = request.auth
        if not isinstance(token, AccessToken):
            raise AuthenticationError("Authentication credentials were not provided.")
        return rest_access(token, data, request.headers.get(WORKSPACE_HEADER))

    def handle(self, access: Access, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()
        self._record_tool_event(request, response)
        return response

    def _record_tool_event(self, request: Request, response: Any) -> None:
        if outage_noted():
            return
        status = response.status_code
        error_code = ""
        if status >= 400 and isinstance(getattr(response, "data", None), dict):
            error_code = str(response.data.get("error", {}).get("code", ""))
        call_record(
            surface="rest",
            tool=self.tool,
            token=token if isinstance(token := request.__dict__.get("_auth"), AccessToken) else None,
            access=self.access,
            status=status,
            error_code=error_code,
            started=self._started or time.perf_counter(),
            request_bytes=int(request.META.get("CONTENT_LENGTH") or 0),
            response_bytes=len(getattr(response, "content", b"")),
        )


def rest_access(token: AccessToken, data: dict[str, Any], workspace_header: str | None) -> Access:
    """The Access of a REST call: whose memory (`userId`) and which partition (`partitionKey`), both taken out of
    the call's fields, and the access-scope header."""
    return access_for_token(
        token=token,
        user_id=data.pop("userId", None),
        partition_key=data.pop("partitionKey", None),
        workspace=workspace_requested(workspace_header),
        surface=ChangeSurface.REST,
    )


def endpoint_tools() -> list[str]:
    """The `tool` of every REST endpoint (each module of them imported: config.urls), as its calls are logged."""

    def kinds(kind: type[Endpoint]) -> list[type[Endpoint]]:
        return [kind, *(sub for child in kind.__subclasses__() for sub in kinds(child))]

    return sorted({tool for kind in kinds(Endpoint) if (tool := getattr(kind, "tool", ""))})
