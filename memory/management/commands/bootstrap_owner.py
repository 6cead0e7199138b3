"""First start: create the admin user and a personal access token, and print both once."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from memory.access import Actor
from memory.models import Scope, Surface, ToolProfile, User
from memory.services.tokens import token_issue


class Command(BaseCommand):
    help = "Create the admin user and a full-access token if no admin exists yet; print them once."

    def handle(self, *args: Any, **options: Any) -> None:
        if User.objects.filter(is_superuser=True).exists():
            return
        password = settings.ADMIN_PASSWORD or secrets.token_urlsafe(12)
        with transaction.atomic():
            user = User.objects.create_superuser(
                username=settings.ADMIN_USERNAME, email=settings.ADMIN_EMAIL, password=password
            )
            issued = token_issue(
                actor=Actor.system(),
                owner=user,
                label="Personal token (first start)",
                scopes=Scope.values,
                surface=Surface.CLI,
                profile=ToolProfile.FULL,
            )
        base = f"http://{settings.HOST}:{settings.PORT}"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "=" * 72,
                    "  First start: save these now, they are not shown again.",
                    f"  Web UI / admin : {base}/ui/   {base}/admin/",
                    f"  Login          : {user.username}",
                    f"  Password       : {'(from ADMIN_PASSWORD)' if settings.ADMIN_PASSWORD else password}",
                    f"  Access token   : {issued.secret}",
                    f"  Try it         : curl -X POST -H 'Authorization: Bearer {issued.secret}' {base}/whoami",
                    f"  MCP            : {base}/mcp (Streamable HTTP) or {base}/sse, same token; see README",
                    "=" * 72,
                    "",
                ]
            )
        )
