"""Request and answer shapes (DRF serializers) with their fields bound once per shape and process.

A new serializer deep-copies every declared field, nested shapes' fields included, the first time it looks at them:
~0.1-0.5 ms a call on this project's shapes, paid by every REST call and MCP tool twice (the request, then the
answer). `shaped()` makes the serializer as before (its data, its errors, its `initial_data` for a `validate()` that
reads the raw body) but hands it the fields of one instance made earlier. Checking and writing keep no state on the
fields, so the serializers of concurrent calls may share them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from rest_framework import serializers

Shape = TypeVar("Shape", bound=serializers.Serializer)


@cache
def _fields(shape: type[serializers.Serializer]) -> Any:
    return shape().fields


def shaped(shape: type[Shape], *args: Any, **kwargs: Any) -> Shape:
    """`shape(*args, **kwargs)`, with the fields bound once for this shape. Not for a serializer given a `context`:
    the shared fields would read the first instance's (empty) one."""
    assert "context" not in kwargs, "a shape with a context needs fields of its own"
    made = shape(*args, **kwargs)
    made.__dict__["fields"] = _fields(shape)  # DRF's `fields` is a cached_property: this is its cached value
    return made
