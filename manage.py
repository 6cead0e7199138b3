#!/usr/bin/env python
"""Django's command-line utility; starts the embedded servers first when no URLs are configured."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.management import execute_from_command_line

    from config.embedded import ensure_started

    ensure_started(settings.EMBEDDED_RUNTIME)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
