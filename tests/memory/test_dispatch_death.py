"""A process that dies while it sends a receipt's job (after the receipt was committed) leaves the receipt for the
beat sweep to send again, never stranded: a job id is recorded only once the queue has the job. Real processes: the
sender is a child on the test database, its broker a loopback socket that accepts and never answers, and it is
killed (SIGKILL) while it waits on it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.models import Operation, OperationStatus, Source
from memory.tasks import requeue_unsent_operations
from tests.factories import UserFactory
from tests.process import ROOT, child_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]

SEND = """
import sys, django
django.setup()
from memory.services.operations import operation_dispatch
operation_dispatch(sys.argv[1])
"""


def test_a_sender_killed_while_the_queue_takes_the_job_leaves_the_receipt_to_the_sweep() -> None:
    alice = UserFactory.create()
    source = Source.objects.create(
        owner=alice, partition=alice.partitions.get(key="memory:personal"), kind="document", external_id="doc",
        title="doc", content="Kept.", occurred_at=timezone.now(),
    )  # fmt: skip
    receipt = Operation.objects.create(owner=alice, partition=source.partition, source=source, source_version=1)
    with socket.create_server(("127.0.0.1", 0)) as black_hole:
        black_hole.settimeout(60)
        broker = f"redis://127.0.0.1:{black_hole.getsockname()[1]}/0"
        env = child_env(connection.settings_dict["NAME"], REDIS_URL=broker)
        sender = subprocess.Popen(
            [sys.executable, "-c", SEND, receipt.pk], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
        )
        try:
            held, _ = black_hole.accept()  # the sender is publishing now, and waits for an answer
            os.kill(sender.pid, signal.SIGKILL)
            assert sender.wait(timeout=30) == -signal.SIGKILL
            held.close()
        finally:
            sender.kill()

    left = Operation.objects.get(pk=receipt.pk)
    assert (left.status, left.task_id) == (OperationStatus.QUEUED, "")  # not marked as sent
    Operation.objects.filter(pk=receipt.pk).update(queued_at=timezone.now() - timedelta(minutes=5))
    assert requeue_unsent_operations() == 1  # the sweep, on the suite's real Redis, sends it
    assert Operation.objects.get(pk=receipt.pk).task_id != ""
