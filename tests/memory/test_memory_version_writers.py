"""Writers that change what a search shows move the owner's memory version themselves, whoever calls them: a copy of
the owner's rows held at that version (memory.recall.held_vectors) would show the old rows otherwise (issue 18,
thirty-eighth pass: the writers that relied on their caller to say so)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from memory.extraction.base import ClaimCandidate, EvidenceRef, Extraction, NodeRef
from memory.models import Claim, Evidence, Partition, Source, User
from memory.services.audit import memory_version_key
from memory.services.claim_erasure import claims_erase
from memory.services.reconcile import reconcile
from tests.conftest import Api, Persona

pytestmark = pytest.mark.django_db(transaction=True)  # the version moves once the write commits


def version(user: User) -> Any:
    return cache.get(memory_version_key(user.pk))


def a_source(api: Api, owner: Persona) -> Source:
    body = {"conversation": {"id": "c", "messages": [{"id": "m1", "role": "user", "content": "Marcel roasts tea."}]}}
    return Source.objects.get(pk=api.post("/ingest/conversation", owner, body).json()["sourceId"])


def said(source: Source, message_id: str) -> Extraction:
    evidence = EvidenceRef(source_id=source.pk, excerpt="Marcel roasts tea.", message_id=message_id)
    claim = ClaimCandidate(
        statement="Marcel roasts tea.", kind="fact", subject=NodeRef(type="Person", label="Marcel"), evidence=evidence
    )
    return Extraction(claims=[claim])


def test_reconcile_moves_the_version_when_it_only_adds_evidence(api: Api, owner: Persona, alice: User) -> None:
    source = a_source(api, owner)
    reconcile(source=source, extraction=said(source, "m1"), extractor="rules")
    before = version(alice)
    reconcile(source=source, extraction=said(source, "m2"), extractor="rules")  # the same claim, said again
    assert Evidence.objects.filter(claim__owner=alice).count() == 2 and Claim.objects.filter(owner=alice).count() == 1
    assert version(alice) != before


def test_claims_erase_moves_the_version_whoever_calls_it(api: Api, owner: Persona, alice: User) -> None:
    source = a_source(api, owner)
    reconcile(source=source, extraction=said(source, "m1"), extractor="rules")
    before = version(alice)
    assert claims_erase(owner=alice, claim_ids=set(Claim.objects.filter(owner=alice).values_list("pk", flat=True)))
    assert version(alice) != before


def test_a_partition_deleted_moves_its_owners_version(alice: User) -> None:
    partition = Partition.objects.create(owner=alice, key="scratch", label="Scratch")
    before = version(alice)
    partition.delete()
    assert version(alice) != before
