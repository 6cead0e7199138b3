"""Tool input schemas (JSON Schema) read off the REST endpoints' request serializers, so a tool and its endpoint
can never disagree about a field. Agent tools (seeds/004) spell fields in snake_case and call the partition
`namespace`; assistant tools (seeds/000) keep the REST names."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

# Argument name of an agent tool → the endpoint's field name.
RENAMED = {"namespace": "partitionKey", "user_id": "userId"}


def snake(name: str) -> str:
    if name == "partitionKey":
        return "namespace"
    return re.sub(r"(?<!^)([A-Z])", lambda match: "_" + match.group(1).lower(), name)


def camel(name: str) -> str:
    if name in RENAMED:
        return RENAMED[name]
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _field_schema(field: serializers.Field) -> dict[str, Any]:
    if isinstance(getattr(field, "json_schema", None), dict):  # a field that says what it accepts itself
        return dict(field.json_schema)  # type: ignore[attr-defined]
    if isinstance(field, serializers.ListSerializer) and field.child is not None:
        return {"type": "array", "items": _field_schema(field.child)}
    if isinstance(field, serializers.Serializer):
        return object_schema(field, spelling=str)
    if isinstance(field, serializers.ChoiceField):
        return {"type": "string", "enum": [str(choice) for choice in field.choices]}
    if isinstance(field, serializers.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, serializers.IntegerField):
        return _bounded({"type": "integer"}, field)
    if isinstance(field, serializers.FloatField | serializers.DecimalField):
        return _bounded({"type": "number"}, field)
    if isinstance(field, serializers.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if isinstance(field, serializers.DateField):
        return {"type": "string", "format": "date"}
    if isinstance(field, serializers.ListField):
        return {"type": "array", "items": _field_schema(field.child)}
    if isinstance(field, serializers.DictField):
        return {"type": "object"}
    if isinstance(field, serializers.JSONField):
        return {}
    if isinstance(field, serializers.CharField):
        schema: dict[str, Any] = {"type": "string"}
        if field.max_length is not None:
            schema["maxLength"] = field.max_length
        return schema
    return {}


def _bounded(schema: dict[str, Any], field: Any) -> dict[str, Any]:
    if getattr(field, "min_value", None) is not None:
        schema["minimum"] = field.min_value
    if getattr(field, "max_value", None) is not None:
        schema["maximum"] = field.max_value
    return schema


def object_schema(serializer: serializers.Serializer, *, spelling: Any) -> dict[str, Any]:
    """The JSON Schema of a serializer's writable fields; `spelling` names each field for the caller."""
    properties: dict[str, Any] = {}
    required = []
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        schema = _field_schema(field)
        if field.help_text:
            schema["description"] = str(field.help_text)
        if not field.required and field.default is not serializers.empty and not callable(field.default):
            schema["default"] = field.default
        properties[spelling(name)] = schema
        if field.required:
            required.append(spelling(name))
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema
