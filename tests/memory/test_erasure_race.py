"""An erasure and a pipeline job at the same time (tests.races): a message erased while its conversation's job is
between reading it and writing its chunks leaves no chunk behind (a search reads chunks without their sources). The
job is played by a transaction that holds the conversation's row, as ChunkText does, and writes the chunk late."""

from __future__ import annotations

import pytest

from memory.access import access_for_user
from memory.models import Chunk, Source, User
from memory.models.copy_rows import copy_rows
from memory.services.erasure import source_erase
from tests.conftest import Api, Persona
from tests.races import race

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_message_erased_while_its_job_writes_its_chunk_leaves_no_chunk(api: Api, owner: Persona, alice: User) -> None:
    body = {"conversation": {"id": "chat", "messages": [{"id": "m1", "role": "user", "content": "Tell nobody: 4417."}]}}
    conversation = Source.objects.get(pk=api.post("/ingest/conversation", owner, body).json()["sourceId"])
    message = conversation.children.get()
    read: list[str] = []

    def job_reads() -> None:
        Source.objects.select_for_update().get(pk=conversation.pk)  # as ChunkText holds its source
        read.append(Source.objects.get(pk=message.pk).content)

    def job_writes() -> None:
        copy_rows(Chunk, [Chunk.of(message, ordinal=0, text=read[0], char_start=0, char_end=len(read[0]))])

    def erasure() -> None:
        source_erase(access=access_for_user(user=alice), source_id=message.pk, retire_identity=True)

    race(job_reads, erasure, then=job_writes)
    assert Source.objects.get(pk=message.pk).tombstoned_at is not None
    assert not Chunk.objects.filter(source_id=message.pk).exists()
