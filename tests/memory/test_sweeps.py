"""The beat sweeps that finish what an outage left undone: vectors never made (the queue or the embedder was
down when the row was written) and receipts whose job could not be sent, or whose sender died sending it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.embeddings import get_embedder
from memory.models import Chunk, Claim, Node, Operation, OperationStatus, Source
from memory.tasks import requeue_unsent_operations, sweep_missing_vectors
from tests.factories import ClaimFactory, NodeFactory, UserFactory, saved_chunk
from tests.process import ROOT, child_env

pytestmark = pytest.mark.django_db


def _source(user: Any, external_id: str, **fields: Any) -> Source:
    return Source.objects.create(
        owner=user, partition=user.partitions.get(key="memory:personal"), kind="document", external_id=external_id,
        title=external_id, occurred_at=timezone.now(), **fields,
    )  # fmt: skip


def test_the_sweep_embeds_claims_nodes_and_chunks_without_a_vector_of_the_active_model() -> None:
    alice, bob = UserFactory.create(), UserFactory.create()
    claim = ClaimFactory.create(owner=alice, statement="The user prefers tea.")
    old_model = ClaimFactory.create(owner=bob, statement="Bob likes chess.", embedding=[0.1] * 3, embedding_model="old")
    retracted = ClaimFactory.create(owner=alice, statement="Retracted.", status="retracted")
    node = NodeFactory.create(owner=bob, label="Marcel")
    live = saved_chunk(_source(alice, "live"), "Quarterly planning notes.")
    erased = saved_chunk(_source(alice, "gone", tombstoned_at=timezone.now()), "Replaced text.")

    counts = sweep_missing_vectors()

    model = get_embedder().model_id
    assert counts == {"claims": 2, "nodes": 1, "chunks": 1}
    rows: list[Claim | Node] = [
        Claim.objects.get(pk=claim.pk), Claim.objects.get(pk=old_model.pk), Node.objects.get(pk=node.pk)
    ]  # fmt: skip
    for row in rows:
        assert row.embedding_model == model
        assert len(row.embedding) == 384
    assert Chunk.objects.get(pk=live.pk).embedding_model == model
    assert Claim.objects.get(pk=retracted.pk).embedding is None  # not searchable anyway
    assert Chunk.objects.get(pk=erased.pk).embedding is None
    assert sweep_missing_vectors() == {"claims": 0, "nodes": 0, "chunks": 0}


def test_the_sweep_runs_on_beat() -> None:
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"memory.sweep_missing_vectors", "memory.requeue_unsent_operations"} <= tasks


def test_a_receipt_whose_job_could_not_be_sent_is_sent_again() -> None:
    alice = UserFactory.create()
    source = _source(alice, "doc")
    unsent = Operation.objects.create(owner=alice, partition=source.partition, source=source, source_version=1)
    fresh = Operation.objects.create(owner=alice, partition=source.partition, source=source, source_version=1)
    sent = Operation.objects.create(
        owner=alice, partition=source.partition, source=source, source_version=1, task_id="already-sent"
    )
    Operation.objects.filter(pk__in=[unsent.pk, sent.pk]).update(queued_at=timezone.now() - timedelta(minutes=5))

    assert requeue_unsent_operations() == 1

    assert Operation.objects.get(pk=unsent.pk).task_id not in {"", "already-sent"}
    assert Operation.objects.get(pk=fresh.pk).task_id == ""  # its own dispatch may still be on the way
    assert Operation.objects.get(pk=sent.pk).task_id == "already-sent"


SEND = """
import sys, django
django.setup()
from memory.services.operations import operation_dispatch
operation_dispatch(sys.argv[1])
"""


@pytest.mark.server
@pytest.mark.django_db(transaction=True)
def test_a_sender_killed_while_the_queue_takes_the_job_leaves_the_receipt_to_the_sweep() -> None:
    # A job id is recorded only once the queue has the job. Real processes: the sender is a child on the test
    # database, its broker a loopback socket that accepts and never answers, and it is killed while it waits.
    alice = UserFactory.create()
    source = _source(alice, "doc", content="Kept.")
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
            os.kill(sender.pid, signal.SIGKILL)  # before the socket closes: a failed publish would be handled
            assert sender.wait(timeout=30) == -signal.SIGKILL
            held.close()
        finally:
            sender.kill()

    left = Operation.objects.get(pk=receipt.pk)
    assert (left.status, left.task_id) == (OperationStatus.QUEUED, "")  # not marked as sent
    Operation.objects.filter(pk=receipt.pk).update(queued_at=timezone.now() - timedelta(minutes=5))
    assert requeue_unsent_operations() == 1  # the sweep, on the suite's real Redis, sends it
    assert Operation.objects.get(pk=receipt.pk).task_id != ""
