"""Request and answer shapes get their fields bound once per shape (memory.api.shapes.shaped): the same data, the
same errors and the same answers as a new serializer each call, without copying the fields again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework import serializers

from memory.api.ingest_serializers import ParticipantIn
from memory.api.serializers import PartitionListOut, WhoamiIn
from memory.api.shapes import shaped
from metrics.api import ObservationIn

CASES = [
    (WhoamiIn, {"userId": "u1", "partitionKey": "memory:personal"}),
    (WhoamiIn, {}),
    (WhoamiIn, {"bogus": 1}),  # an unknown field (StrictSerializer)
    (WhoamiIn, {"partitionKey": "x" * 65}),  # a field's own check
    (WhoamiIn, None),  # no body at all
    (WhoamiIn, ["not", "an", "object"]),
    (ParticipantIn, {"email": "ann@example.com", "name": "Ann"}),
    (ParticipantIn, {"name": "Ann"}),  # the shape's validate()
    (ObservationIn, {"metric": {"slug": "weight", "unit": "kg"}, "value": 71.5}),  # nested
    (ObservationIn, {"metric": {"slug": "weight"}, "unit": "kg", "value": 71.5}),  # validate() reads the raw body
    (ObservationIn, {"metric": {"slug": "Not A Slug"}, "value": "heavy"}),
]


def outcome(incoming: serializers.Serializer) -> tuple[bool, Any, Any]:
    valid = incoming.is_valid()
    return valid, dict(incoming.validated_data), incoming.errors


@pytest.mark.parametrize(("shape", "data"), CASES)
def test_a_request_is_checked_as_a_new_serializer_checks_it(shape: type[serializers.Serializer], data: Any) -> None:
    assert outcome(shaped(shape, data=data)) == outcome(shape(data=data))


def test_the_errors_of_one_call_do_not_reach_the_next() -> None:
    assert not shaped(WhoamiIn, data={"bogus": 1}).is_valid()

    incoming = shaped(WhoamiIn, data={"userId": "u2"})
    assert incoming.is_valid()
    assert dict(incoming.validated_data) == {"userId": "u2"}
    assert incoming.errors == {}


def partition(n: int, created: datetime) -> SimpleNamespace:
    active = n % 2 == 0
    return SimpleNamespace(
        id=f"p{n}", key=f"k{n}", label=f"L{n}", is_active=active, created_at=created,
        deactivated_at=None if active else created,
    )  # fmt: skip


def test_an_answer_is_written_as_a_new_serializer_writes_it() -> None:
    created = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
    result = {"partitions": [partition(n, created) for n in range(3)]}

    assert shaped(PartitionListOut, result).data == PartitionListOut(result).data
    assert shaped(PartitionListOut, {"partitions": []}).data == {"partitions": []}


def test_checking_and_writing_again_copies_no_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    shaped(WhoamiIn, data={}).is_valid()
    _ = shaped(PartitionListOut, {"partitions": []}).data
    copies = []
    deepcopy = serializers.Field.__deepcopy__

    def counted(field: serializers.Field, memo: dict[int, Any]) -> Any:
        copies.append(type(field).__name__)
        return deepcopy(field, memo)

    monkeypatch.setattr(serializers.Field, "__deepcopy__", counted)
    assert shaped(WhoamiIn, data={"userId": "u3"}).is_valid()
    _ = shaped(PartitionListOut, {"partitions": []}).data
    assert copies == []

    WhoamiIn(data={}).is_valid()  # what each call cost before: every declared field copied
    assert copies


def test_concurrent_calls_sharing_the_fields_each_get_their_own_data_and_errors() -> None:
    def call(n: int) -> list[tuple[bool, Any, Any]]:
        # Odd threads send an unknown field named after themselves, even ones a valid body of their own.
        bodies: list[dict[str, Any]] = [{"userId": f"u{n}-{i}"} if n % 2 == 0 else {f"bogus{n}": i} for i in range(200)]
        return [outcome(shaped(WhoamiIn, data=body)) for body in bodies]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(call, range(8)))

    for n, outcomes in enumerate(answers):
        for i, (valid, data, errors) in enumerate(outcomes):
            if n % 2 == 0:
                assert (valid, data, errors) == (True, {"userId": f"u{n}-{i}"}, {})
            else:
                assert (valid, data) == (False, {})
                assert list(errors) == [f"bogus{n}"]
