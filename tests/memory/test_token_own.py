"""token_issue_own (a person mints their own MCP token) and token_of_person (one of their own tokens)."""

from __future__ import annotations

import pytest

from memory import selectors
from memory.access import Actor, access_for_user
from memory.errors import NotFound, ValidationFailed
from memory.models import AccessToken, MemoryEvent
from memory.services.tokens import token_issue_own
from tests.factories import PartitionFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_mints_an_mcp_token_starting_in_the_first_chosen_partition_and_audits_it() -> None:
    alice = UserFactory.create()
    PartitionFactory.create(owner=alice, key="project:apollo")
    issued = token_issue_own(
        actor=Actor.person(alice), owner=alice, label=" Laptop ", scopes=["read"], profile="full",
        partition_keys=["project:apollo"],
    )  # fmt: skip
    token = issued.token
    assert (token.label, token.surface, token.scopes, token.default_partition_key) == (
        "Laptop", "mcp", ["read"], "project:apollo"
    )  # fmt: skip
    assert MemoryEvent.objects.filter(action="token.issue", owner=alice, actor_user=alice).exists()
    assert selectors.token_of_person(access_for_user(user=alice), token.pk) == token


def test_refuses_another_persons_partition_and_an_empty_label() -> None:
    alice, bob = UserFactory.create(), UserFactory.create()
    PartitionFactory.create(owner=bob, key="project:bobs")
    with pytest.raises(ValidationFailed) as refused:
        token_issue_own(
            actor=Actor.person(alice), owner=alice, label="x", scopes=["read"], profile="assistant",
            partition_keys=["project:bobs"],
        )  # fmt: skip
    assert "partitionKeys" in refused.value.details
    with pytest.raises(ValidationFailed):
        token_issue_own(actor=Actor.person(alice), owner=alice, label="  ", scopes=["read"], profile="assistant")
    assert not AccessToken.objects.exists()


def test_another_persons_token_is_not_found() -> None:
    alice, bob = UserFactory.create(), UserFactory.create()
    issued = token_issue_own(actor=Actor.person(alice), owner=alice, label="x", scopes=["read"], profile="assistant")
    with pytest.raises(NotFound):
        selectors.token_of_person(access_for_user(user=bob), issued.token.pk)
