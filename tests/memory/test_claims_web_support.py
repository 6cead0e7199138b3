"""What the web UI's claim pages need from the claim services and selectors: the partition filter of the claim
list, and the erasure preview (exactly the claims `claim_erase` removes)."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.access import access_for_user
from memory.errors import NotFound
from memory.models import Claim
from memory.services.claims import claim_correct, claim_erase, claim_erase_preview
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_claim_list_narrows_to_the_partitions_asked_for() -> None:
    alice = UserFactory.create()
    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    personal = access_for_user(user=alice).partition
    ClaimFactory.create(owner=alice, partition=personal, statement="Personal.")
    ClaimFactory.create(owner=alice, partition=apollo, statement="Apollo.")
    workspace = access_for_user(user=alice, workspace=True)
    every = selectors.claims_for_access(workspace).claims
    assert {c.statement for c in every} == {"Personal.", "Apollo."}
    narrowed = selectors.claims_for_access(workspace, partition_keys=["project:apollo"]).claims
    assert [c.statement for c in narrowed] == ["Apollo."]
    strict = access_for_user(user=alice)  # a filter never widens what the request reads
    assert selectors.claims_for_access(strict, partition_keys=["project:apollo"]).claims == []


def test_the_erasure_preview_lists_exactly_what_erase_removes() -> None:
    alice = UserFactory.create()
    access = access_for_user(user=alice)
    first = ClaimFactory.create(owner=alice, partition=access.partition, statement="Likes tea.")
    other = ClaimFactory.create(owner=alice, partition=access.partition, statement="Lives in Zwolle.")
    second = claim_correct(access=access, claim_id=first.pk, statement="Likes green tea.")
    preview = claim_erase_preview(access=access, claim_id=second.pk)
    assert [c.statement for c in preview] == ["Likes tea.", "Likes green tea."]
    assert Claim.objects.filter(owner=alice).count() == 3  # a preview removes nothing
    assert claim_erase(access=access, claim_id=second.pk) == len(preview)
    assert list(Claim.objects.filter(owner=alice)) == [other]


def test_the_erasure_preview_of_another_persons_claim_is_not_found() -> None:
    claim = ClaimFactory.create(owner=UserFactory.create())
    with pytest.raises(NotFound):
        claim_erase_preview(access=access_for_user(user=UserFactory.create()), claim_id=claim.pk)


def test_erasing_a_tasks_only_status_previews_every_claim_about_the_task() -> None:
    alice = UserFactory.create()
    access = access_for_user(user=alice)
    task = NodeFactory.create(owner=alice, type="Task", label="Send the spec")
    status = ClaimFactory.create(
        owner=alice, subject=task, predicate="HAS_TASK_STATUS", object_value="open", kind="task_status"
    )
    due = ClaimFactory.create(owner=alice, subject=task, predicate="DUE_ON", object_value="2026-05-01")
    ClaimFactory.create(owner=alice, statement="Unrelated.")
    preview = claim_erase_preview(access=access, claim_id=status.pk)
    assert {c.pk for c in preview} == {status.pk, due.pk}
    assert claim_erase(access=access, claim_id=status.pk) == 1  # counts the status; the task's claims go with it
    assert not Claim.objects.filter(pk__in=[status.pk, due.pk]).exists()
    assert Claim.objects.filter(owner=alice, statement="Unrelated.").exists()
