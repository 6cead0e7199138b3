"""partition_reactivate undoes partition_deactivate: audited once, idempotent, only the owner's partitions."""

from __future__ import annotations

import pytest

from memory.access import access_for_user
from memory.errors import NotFound
from memory.models import MemoryEvent, Partition, User
from memory.services.partitions import partition_deactivate, partition_reactivate

pytestmark = pytest.mark.django_db


def test_reactivate_undoes_deactivate_and_is_audited_once(alice: User) -> None:
    Partition.objects.create(owner=alice, key="work", label="Work")
    partition_deactivate(access=access_for_user(user=alice), key="work")
    for _ in range(2):
        partition = partition_reactivate(access=access_for_user(user=alice), key="work")
    assert partition.is_active and partition.deactivated_at is None
    assert access_for_user(user=alice, partition_key="work").partition == partition  # writable again
    assert MemoryEvent.objects.filter(action="partition.reactivate", target_id=partition.pk).count() == 1


def test_another_persons_partition_is_not_found(alice: User, bob: User) -> None:
    Partition.objects.create(owner=alice, key="work", label="Work", is_active=False)
    with pytest.raises(NotFound):
        partition_reactivate(access=access_for_user(user=bob), key="work")
    assert not Partition.objects.get(owner=alice, key="work").is_active
