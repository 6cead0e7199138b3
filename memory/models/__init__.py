from memory.models.accounts import AccessToken, Partition, Scope, Surface, ToolProfile, User
from memory.models.audit import ActorKind, MemoryEvent, ToolEvent

__all__ = [
    "AccessToken",
    "ActorKind",
    "MemoryEvent",
    "Partition",
    "Scope",
    "Surface",
    "ToolEvent",
    "ToolProfile",
    "User",
]
