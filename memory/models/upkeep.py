"""What the service owes its own caches: writes to Redis that met it away and must land once it answers, even when
the process that owed them is gone (memory.services.redis_debts)."""

from __future__ import annotations

from django.db import models


class RedisDebtKind(models.TextChoices):
    MEMORY_VERSION = "memory-version", "Memory version to move on"
    ERASED_VIEWS = "erased-views", "Cached views of an erasure to drop"
    CREDENTIALS_GENERATION = "credentials-generation", "Credentials' generation to replace"


class RedisDebt(models.Model):
    """One kind of write owed to Redis for one owner (0: for all of them), for every piece recorded until `mark`.
    The owner is a bare id: an erased account's cached views are still owed a drop. Written by
    memory.services.redis_debts alone: `mark` is the next value of a sequence of the database's own, taken as the
    row is written (after the commit the piece follows), never lowered."""

    kind = models.CharField(max_length=32, choices=RedisDebtKind.choices)
    owner_id = models.BigIntegerField(default=0)
    mark = models.BigIntegerField()
    recorded_at = models.DateTimeField()  # when `mark` was taken (for people: the order is the mark's)

    class Meta:
        verbose_name = "write owed to Redis"
        verbose_name_plural = "writes owed to Redis"
        ordering = ["recorded_at"]
        constraints = [models.UniqueConstraint(fields=["kind", "owner_id"], name="redisdebt_one_per_kind_and_owner")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.owner_id}"
