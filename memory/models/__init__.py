from memory.models.accounts import AccessToken, Partition, Scope, Surface, ToolProfile, User
from memory.models.audit import ActorKind, MemoryEvent, ToolEvent
from memory.models.sources import (
    BLOB_MAX_BYTES,
    Blob,
    Chunk,
    Operation,
    OperationStatus,
    Source,
    SourceKind,
    SourceScope,
)

__all__ = [
    "BLOB_MAX_BYTES",
    "AccessToken",
    "ActorKind",
    "Blob",
    "Chunk",
    "MemoryEvent",
    "Operation",
    "OperationStatus",
    "Partition",
    "Scope",
    "Source",
    "SourceKind",
    "SourceScope",
    "Surface",
    "ToolEvent",
    "ToolProfile",
    "User",
]
