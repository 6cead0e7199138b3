"""The DRF exception handler: every failure of every endpoint leaves in the one error shape."""

from __future__ import annotations

import logging
import math
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from memory.api.parsers import NestedTooDeep, PayloadTooLarge
from memory.connectivity import UNAVAILABLE_MESSAGE, is_unavailable, note_outage
from memory.errors import ERROR_KINDS, ServiceError, error_body

logger = logging.getLogger("memory.api")

_DRF_CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "AUTH_REQUIRED"),
    (exceptions.ParseError, "MALFORMED_JSON"),
    (exceptions.ValidationError, "VALIDATION_ERROR"),
    (exceptions.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (exceptions.NotAcceptable, "NOT_ACCEPTABLE"),
    (exceptions.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (exceptions.Throttled, "RATE_LIMITED"),
    (exceptions.NotFound, "NOT_FOUND"),
    (PayloadTooLarge, "PAYLOAD_TOO_LARGE"),
]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    code, message, details = describe_exception(exc, context)
    response = Response(error_body(code, message, details), status=ERROR_KINDS[code].status)
    if code == "SERVICE_UNAVAILABLE":
        response["Retry-After"] = "5"
    if code == "RATE_LIMITED" and details.get("retryAfterSeconds") is not None:
        response["Retry-After"] = str(details["retryAfterSeconds"])
    if response.status_code == 401:
        response["WWW-Authenticate"] = getattr(exc, "auth_header", None) or 'Bearer realm="memory"'
    if code == "RANGE_NOT_SATISFIABLE" and "size" in details:
        response["Content-Range"] = f"bytes */{details['size']}"
    if code == "METHOD_NOT_ALLOWED":
        response["Allow"] = ", ".join(details.get("allowed", []))
    return response


def describe_exception(exc: Exception, context: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The error code, message and details of any failure, as REST and MCP answer it."""
    if isinstance(exc, ServiceError):
        return exc.code, exc.message, exc.details
    if is_unavailable(exc):
        note_outage()
        return "SERVICE_UNAVAILABLE", UNAVAILABLE_MESSAGE, {}
    if isinstance(exc, Http404):
        return "NOT_FOUND", "Not found.", {}
    if isinstance(exc, RequestDataTooBig):  # Django's own cap, checked first also for bodies without a length
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return "PAYLOAD_TOO_LARGE", f"The request body is larger than {limit} bytes.", {"maxBytes": limit}
    if isinstance(exc, DjangoPermissionDenied):
        return "SCOPE_REQUIRED", "Permission denied.", {}
    if isinstance(exc, exceptions.AuthenticationFailed):
        code = str(exc.get_codes())
        return (code if code in ERROR_KINDS else "TOKEN_INVALID"), str(exc.detail), {}
    if isinstance(exc, exceptions.PermissionDenied):
        return "SCOPE_REQUIRED", str(exc.detail), {}
    if isinstance(exc, exceptions.APIException):
        return _describe_api_exception(exc, context)
    logger.exception("api.unhandled_error", extra={"view": type(context.get("view")).__name__})
    return "INTERNAL_ERROR", "An unexpected error occurred.", {}


def _describe_api_exception(exc: exceptions.APIException, context: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    code = next((code for kind, code in _DRF_CODES if isinstance(exc, kind)), None)
    if code is None:
        code = "INTERNAL_ERROR" if exc.status_code >= 500 else "VALIDATION_ERROR"
    if isinstance(exc, NestedTooDeep):
        return code, "The request is invalid.", {**exc.detail, "maxDepth": exc.max_depth}  # type: ignore[dict-item]
    if isinstance(exc, exceptions.ValidationError):
        details = exc.detail if isinstance(exc.detail, dict) else {"body": exc.detail}
        return code, "The request is invalid.", details
    if isinstance(exc, exceptions.Throttled):
        wait = getattr(exc, "wait", None)
        return code, "Too many requests for this token.", {"retryAfterSeconds": wait and math.ceil(wait)}
    if isinstance(exc, exceptions.MethodNotAllowed):
        view = context.get("view")
        allowed = [m.upper() for m in getattr(view, "http_method_names", []) if m not in ("options", "head")]
        return code, str(exc.detail), {"allowed": allowed}
    if isinstance(exc, PayloadTooLarge):
        return code, str(exc.detail), {"maxBytes": exc.max_bytes}
    return code, str(exc.detail), {}


def json_not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    """handler404 for paths no view matches."""
    return JsonResponse(error_body("NOT_FOUND", "No such endpoint.", {"path": request.path}), status=404)


def json_server_error(request: HttpRequest) -> JsonResponse:
    """handler500: even a bug answers in the error shape."""
    return JsonResponse(error_body("INTERNAL_ERROR", "An unexpected error occurred."), status=500)
