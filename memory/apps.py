from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory.credentials import connect_signals
        from memory.services.redis_debts import ledger_installed
        from memory.web.sign_in_limits import sign_in_limits_fail_open

        # Tokens, users and partitions are cached per process under a generation in Redis; every ORM change of
        # those rows (services, admin forms, erasure) must replace it, wherever it is made.
        connect_signals()
        sign_in_limits_fail_open()  # a sign-in while Redis is away is not a 500
        ledger_installed()  # what a process owes Redis is written down, for another to do should it be killed first
