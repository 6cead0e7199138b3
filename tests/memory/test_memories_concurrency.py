"""Keyed memories under real concurrency: threads with their own PostgreSQL connections save one key at once;
the database keeps exactly one current value per (owner, partition, key) and the whole history."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction

from memory.access import access_for_token
from memory.models import Claim, ClaimStatus, Partition
from memory.services.memories import memory_save
from tests.conftest import Persona
from tests.races import race, wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 20


def _access(persona: Persona, partition_key: str | None = None) -> Any:
    assert persona.token is not None
    return access_for_token(token=persona.token, user_id=None, partition_key=partition_key, workspace=False)


def _at_once(work: Callable[[int], Any], count: int = WRITERS) -> list[Any]:
    """Run `work(n)` in `count` threads released together, each on its own database connection."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(n: int) -> None:
        try:
            barrier.wait()
            results[n] = work(n)
        except Exception as exc:  # reported below, with the thread's number
            results[n] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failures = [(n, result) for n, result in enumerate(results) if isinstance(result, Exception)]
    assert not failures, failures
    return results


def _history(key: str) -> list[Claim]:
    return list(Claim.objects.filter(key=key).order_by("recorded_at", "id"))


def _assert_one_linear_history(key: str, values: set[Any]) -> None:
    """One active revision; following `derived_from` back from it visits every revision once, and every
    superseded revision names the one that replaced it."""
    revisions = {claim.pk: claim for claim in _history(key)}
    active = [claim for claim in revisions.values() if claim.status == ClaimStatus.ACTIVE]
    assert len(active) == 1, [(c.pk, c.value, c.status) for c in revisions.values()]
    chain: list[Claim] = []
    current: Claim | None = active[0]
    while current is not None:
        chain.append(current)
        current = revisions[current.derived_from_id] if current.derived_from_id else None
    assert len(chain) == len(revisions)
    assert {claim.value for claim in chain} == values
    for newer, older in itertools.pairwise(chain):
        assert older.status == ClaimStatus.SUPERSEDED and older.superseded_by_id == newer.pk


def test_parallel_first_saves_of_one_key_leave_one_current_value(owner: Persona) -> None:
    access = _access(owner)
    acks = _at_once(lambda n: memory_save(access=access, key="race.new", value=f"value {n}"))
    assert all(ack.verified_persisted for ack in acks)
    _assert_one_linear_history("race.new", {f"value {n}" for n in range(WRITERS)})


def test_parallel_saves_to_an_existing_key_keep_every_revision(owner: Persona) -> None:
    access = _access(owner)
    memory_save(access=access, key="race.old", value="first")
    _at_once(lambda n: memory_save(access=access, key="race.old", value=f"value {n}"))
    _assert_one_linear_history("race.old", {"first", *(f"value {n}" for n in range(WRITERS))})


def test_a_save_racing_another_writer_of_the_key_retries_and_supersedes_it(owner: Persona, alice: Any) -> None:
    """Another transaction inserts a current value of the key and has not committed yet when a save reads
    the key: the save's insert waits for it, conflicts, and retries on top of it (savepoint, re-read)."""
    personal = Partition.objects.get(owner=alice, key="memory:personal")
    access = _access(owner)
    inserted, release = threading.Event(), threading.Event()

    def other_writer() -> None:
        try:
            with transaction.atomic():
                Claim.objects.create(
                    owner=alice, partition=personal, statement="k: theirs", key="k", value="theirs", kind="note"
                )
                inserted.set()
                release.wait(timeout=60)
        finally:
            connection.close()

    writer = threading.Thread(target=other_writer)
    writer.start()
    assert inserted.wait(timeout=60)
    saved: list[Any] = []

    def save_mine() -> None:
        try:
            saved.append(memory_save(access=access, key="k", value="mine"))
        finally:
            connection.close()

    saver = threading.Thread(target=save_mine)
    saver.start()
    assert wait_until_blocked(), "the save never waited for the other writer"
    release.set()
    writer.join()
    saver.join()
    assert saved and saved[0].claim.value == "mine"
    _assert_one_linear_history("k", {"theirs", "mine"})


def test_an_event_id_is_replayed_only_within_its_partition(owner: Persona, alice: Any) -> None:
    Partition.objects.create(owner=alice, key="project:apollo", label="Apollo")
    personal = memory_save(access=_access(owner), key="k", value="personal", event_id="ev-1")
    apollo = memory_save(access=_access(owner, "project:apollo"), key="k", value="apollo", event_id="ev-1")
    assert apollo.deduplicated is False and apollo.claim.pk != personal.claim.pk
    assert apollo.claim.partition.key == "project:apollo"
    again = memory_save(access=_access(owner, "project:apollo"), key="k", value="other", event_id="ev-1")
    assert again.deduplicated is True and again.claim.pk == apollo.claim.pk


def _with_a_held_value(owner: Persona, alice: Any) -> tuple[Any, Claim]:
    """Key "k" with a current value and a quarantined one waiting for review."""
    personal = Partition.objects.get(owner=alice, key="memory:personal")
    access = _access(owner)
    memory_save(access=access, key="k", value="first")
    held = Claim.objects.create(
        owner=alice, partition=personal, statement="k: held", key="k", value="held", kind="note", status="quarantined"
    )
    return access, held


def test_confirming_a_quarantined_value_while_a_save_of_its_key_is_in_flight(owner: Persona, alice: Any) -> None:
    """The confirmation waits for the save (one lock per key for every writer), then replaces its value."""
    from memory.services.claims import claim_confirm

    access, held = _with_a_held_value(owner, alice)
    race(
        holder=lambda: memory_save(access=access, key="k", value="second"),
        contender=lambda: claim_confirm(access=access, claim_id=held.pk),
    )
    assert list(Claim.objects.filter(key="k", status=ClaimStatus.ACTIVE).values_list("value", flat=True)) == ["held"]


def test_confirming_a_value_that_a_correction_just_replaced_is_a_conflict(owner: Persona, alice: Any) -> None:
    """The confirmation checks the claim's status only once it holds the key's lock."""
    from memory.errors import Conflict
    from memory.services.claims import claim_confirm, claim_correct

    access, held = _with_a_held_value(owner, alice)
    race(
        holder=lambda: claim_correct(access=access, claim_id=held.pk, statement="k: fixed", value="fixed"),
        contender=lambda: claim_confirm(access=access, claim_id=held.pk),
        allowed=(Conflict,),
    )
    assert list(Claim.objects.filter(key="k", status=ClaimStatus.ACTIVE).values_list("value", flat=True)) == ["fixed"]
    held.refresh_from_db()
    assert held.status == ClaimStatus.SUPERSEDED
    assert Claim.objects.get(pk=held.superseded_by_id).superseded_by_id is None
