"""`manage.py mcp_stdio --token T`: the same MCP tools over stdin/stdout, for clients that start a process
(Claude Desktop, Claude Code, Cursor). The token can also come from MEMORY_TOKEN, which keeps it out of the
process list. Logs go to stderr; stdout carries only the protocol."""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.errors import AuthenticationError


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio with one access token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--token", default=os.environ.get("MEMORY_TOKEN", ""), help="The access token (mem_…).")
        parser.add_argument(
            "--workspace", action="store_true", help="Let reads span every partition the token reaches."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from mcp_bridge.calls import Caller
        from mcp_bridge.server import mcp_server, process_caller
        from memory.services.tokens import token_for_secret

        if not options["token"]:
            raise CommandError("Give the access token with --token or MEMORY_TOKEN.")
        try:
            token = token_for_secret(options["token"])
        except AuthenticationError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        process_caller.set(Caller(token_id=token.pk, access_scope="workspace" if options["workspace"] else "strict"))
        # A client may end this process with a signal, which skips atexit: each call writes its event row itself.
        settings.TOOL_EVENTS_DEFERRED = False
        anyio.run(mcp_server.run_stdio_async)
