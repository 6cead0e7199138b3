"""factory_boy factories for the memory app."""

from __future__ import annotations

from typing import Any

import factory

from memory.models import Chunk, Claim, Node, Partition, Source, User


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.test")
    password = factory.django.Password("correct horse battery staple")


class PartitionFactory(factory.django.DjangoModelFactory[Partition]):
    class Meta:
        model = Partition

    owner = factory.SubFactory(UserFactory)
    key = factory.Sequence(lambda n: f"project:{n}")
    label = factory.LazyAttribute(lambda partition: partition.key.title())


class NodeFactory(factory.django.DjangoModelFactory[Node]):
    class Meta:
        model = Node

    owner = factory.SubFactory(UserFactory)
    partition = factory.LazyAttribute(lambda node: Partition.objects.get(owner=node.owner, key="memory:personal"))
    type = "Person"
    label = factory.Sequence(lambda n: f"Person {n}")


class ClaimFactory(factory.django.DjangoModelFactory[Claim]):
    class Meta:
        model = Claim

    owner = factory.SubFactory(UserFactory)
    partition = factory.LazyAttribute(lambda claim: Partition.objects.get(owner=claim.owner, key="memory:personal"))
    statement = factory.Sequence(lambda n: f"The user prefers option {n}.")
    kind = "preference"


def saved_chunk(source: Source, text: str, **fields: Any) -> Chunk:
    """The first chunk of `source`, saved: all of `text`, with its source's owner, partition, scope and time."""
    chunk = Chunk.of(source, ordinal=0, text=text, char_start=0, char_end=len(text), **fields)
    chunk.save()
    return chunk
