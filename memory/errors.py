"""The one error vocabulary of REST and MCP: stable codes, HTTP status, and a remedy for each (SPEC §4).

Services raise `ServiceError` subclasses; the REST exception handler and the MCP bridge render them as
`{"error": {"code", "message", "remedy", "details"}}`.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ErrorKind(NamedTuple):
    status: int
    remedy: str


ERROR_KINDS: dict[str, ErrorKind] = {
    "AUTH_REQUIRED": ErrorKind(
        401, "Send 'Authorization: Bearer <token>'. Mint a token in the UI at /ui/tokens/ or with issue_token."
    ),
    "TOKEN_INVALID": ErrorKind(
        401, "Check the token for typos; mint a new one in the UI at /ui/tokens/ or with issue_token."
    ),
    "TOKEN_REVOKED": ErrorKind(401, "This token was revoked or rotated. Use its replacement or mint a new one."),
    "TOKEN_EXPIRED": ErrorKind(
        401, "This token has expired. Mint a new one in the UI at /ui/tokens/ or with issue_token."
    ),
    "QUERY_TOKEN_NOT_ALLOWED": ErrorKind(
        401, "Send the token in the Authorization header, or enable 'allow query token' on it."
    ),
    "SCOPE_REQUIRED": ErrorKind(403, "Use a token that has the scope named in details.requiredScope."),
    "NOT_FOUND": ErrorKind(
        404, "Check the id, userId and partitionKey. Objects out of this token's reach are reported as not found."
    ),
    "METHOD_NOT_ALLOWED": ErrorKind(405, "Use the method listed in details.allowed (API calls are POST)."),
    "NOT_ACCEPTABLE": ErrorKind(406, "Accept application/json."),
    "VALIDATION_ERROR": ErrorKind(400, "Fix the fields listed in details and send the request again."),
    "MALFORMED_JSON": ErrorKind(400, "Send a valid JSON object with 'Content-Type: application/json'."),
    "CONFLICT": ErrorKind(409, "Read the current state of the object, then retry with a request that fits it."),
    "PARTITION_INACTIVE": ErrorKind(409, "Write to an active partition, or reactivate this one in the admin."),
    "PAYLOAD_TOO_LARGE": ErrorKind(413, "Send a smaller body; the limit is in details.maxBytes."),
    "UNSUPPORTED_MEDIA_TYPE": ErrorKind(415, "Send 'Content-Type: application/json'."),
    "RANGE_NOT_SATISFIABLE": ErrorKind(416, "Ask for a range inside the artifact; details.size is its length."),
    "RATE_LIMITED": ErrorKind(429, "Wait details.retryAfterSeconds seconds, then retry."),
    "PROCESSING_INTERRUPTED": ErrorKind(409, "Check the operation, then use the processing retry endpoint."),
    "IDENTITY_RETIRED": ErrorKind(
        409, "This source identity was retired when it was erased; send new material under a new id."
    ),
    "CONVERSION_FAILED": ErrorKind(
        422, "The original is kept; read it with /source/get, or send a supported format (PDF, DOCX, ...)."
    ),
    "EMBEDDER_UNAVAILABLE": ErrorKind(503, "Check the embedding settings with `manage.py embeddings probe`."),
    "SERVICE_UNAVAILABLE": ErrorKind(503, "A backing service is down; retry shortly and check /healthz."),
    "INTERNAL_ERROR": ErrorKind(500, "Retry; if it persists, report it with the time of the request."),
}


class ServiceError(Exception):
    """A failure a client can act on. `code` is one of ERROR_KINDS."""

    code = "INTERNAL_ERROR"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if self.code not in ERROR_KINDS:
            raise ValueError(f"unknown error code {self.code}")
        self.message = message
        self.details = details or {}

    @property
    def status(self) -> int:
        return ERROR_KINDS[self.code].status

    def as_dict(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.details)


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "error": {
            "code": code,
            "message": message,
            "remedy": ERROR_KINDS[code].remedy,
            "details": details or {},
        }
    }


class NotFound(ServiceError):
    code = "NOT_FOUND"


class Conflict(ServiceError):
    code = "CONFLICT"


class ValidationFailed(ServiceError):
    code = "VALIDATION_ERROR"


class ScopeRequired(ServiceError):
    code = "SCOPE_REQUIRED"

    def __init__(self, scope: str, message: str | None = None) -> None:
        super().__init__(message or f"This call needs the '{scope}' scope.", details={"requiredScope": scope})


class PartitionInactive(ServiceError):
    code = "PARTITION_INACTIVE"


class PayloadTooLarge(ServiceError):
    code = "PAYLOAD_TOO_LARGE"


class AuthenticationError(ServiceError):
    """The credential is missing or unusable. `code` says which (AUTH_REQUIRED, TOKEN_REVOKED, ...)."""

    code = "AUTH_REQUIRED"
