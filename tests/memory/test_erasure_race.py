"""An erasure and a pipeline job at the same time: a message erased while its conversation's job is between
reading it and writing its chunks leaves no chunk behind (a search reads chunks without their sources). The job
is played by a second connection that holds the conversation's row as ChunkText does, and writes the chunk late."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from memory.access import access_for_user
from memory.models import Chunk, Source, User
from memory.models.copy_rows import copy_rows
from memory.services.erasure import source_erase
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db(transaction=True)

# How long the job waits between reading the message and writing its chunk: far longer than an erasure that did not
# wait for it takes.
LATE_SECONDS = 1.0


def test_a_message_erased_while_its_job_writes_its_chunk_leaves_no_chunk(api: Api, owner: Persona, alice: User) -> None:
    body = {"conversation": {"id": "chat", "messages": [{"id": "m1", "role": "user", "content": "Tell nobody: 4417."}]}}
    conversation = Source.objects.get(pk=api.post("/ingest/conversation", owner, body).json()["sourceId"])
    message = conversation.children.get()
    read, failures = threading.Event(), []

    def job() -> None:
        try:
            with transaction.atomic():
                Source.objects.select_for_update().get(pk=conversation.pk)  # as ChunkText holds its source
                text = Source.objects.get(pk=message.pk).content
                read.set()
                threading.Event().wait(LATE_SECONDS)
                copy_rows(Chunk, [Chunk.of(message, ordinal=0, text=text, char_start=0, char_end=len(text))])
        except Exception as exc:
            failures.append(exc)
        finally:
            read.set()
            connection.close()

    def erasure() -> None:
        try:
            source_erase(access=access_for_user(user=alice), source_id=message.pk, retire_identity=True)
        except Exception as exc:
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=job)]
    threads[0].start()
    assert read.wait(30)
    threads.append(threading.Thread(target=erasure))
    threads[1].start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert Source.objects.get(pk=message.pk).tombstoned_at is not None
    assert not Chunk.objects.filter(source_id=message.pk).exists()
