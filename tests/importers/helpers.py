"""Running an importer as a script would, and processing what it queued through the real pipeline."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory.models import MemoryEvent, Operation, OperationStatus, Source
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona

SAMPLES = Path(__file__).parent / "samples"


def run(command: str, *args: str) -> str:
    """The command's output; its last line is the summary."""
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def summary(output: str) -> str:
    return output.strip().splitlines()[-1]


def process_queued() -> int:
    """Run every queued receipt through the pipeline (the worker's job), as a ingestion over REST would be."""
    queued = list(Operation.objects.filter(status=OperationStatus.QUEUED).values_list("pk", flat=True))
    for operation_id in queued:
        run_operation(operation_id)
    return len(queued)


def found(api: Api, persona: Persona, query: str) -> str:
    """Everything /query/search answers for the query, as one text."""
    response = api.post("/query/search", persona, {"query": query})
    assert response.status_code == 200, response.json()
    return " ".join(result["text"] for result in response.json()["searchResults"])


def stored() -> tuple[int, int, int]:
    return Source.objects.count(), Operation.objects.count(), MemoryEvent.objects.count()


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def refused(command: str, *args: str) -> CommandError:
    """The error the command stops with; nothing may have been stored."""
    before = stored()
    with pytest.raises(CommandError) as caught:
        run(command, *args)
    assert stored() == before
    return caught.value
