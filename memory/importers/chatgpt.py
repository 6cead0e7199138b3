"""The ChatGPT data export (`conversations.json`): a list of conversations, each a tree of message nodes.

A conversation's `mapping` holds every node ever written, including answers regenerated and messages edited
away; `current_node` is the leaf of the branch the person last saw. Only that branch is imported (walked from
the leaf up through `parent`), and only what the two people said: system prompts, tool calls and their
output, hidden context, images and empty turns are skipped and counted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.importers.base import (
    ImportFormatError,
    ImportPlan,
    clean_text,
    epoch_time,
    expect,
    external_id,
    refuse_other_export,
)
from memory.services.ingestion_shapes import MessageIn

ORIGIN = "chatgpt-export"
ROLES = {"user": "user", "assistant": "assistant"}
TEXT_CONTENT = ("text", "multimodal_text")


def parse_chatgpt(data: Any) -> ImportPlan:
    """Every conversation of the export as a ConversationIn (`chatgpt:<conversation id>`, message ids kept)."""
    refuse_other_export(data, "chatgpt")
    plan = ImportPlan()
    items = expect(data, list, "A ChatGPT export (conversations.json)")
    for index, item in enumerate(items, start=1):
        where = f"conversation {index}"
        item = expect(item, dict, where)
        conversation_id = external_id(item.get("conversation_id") or item.get("id"), f"{where}: conversation_id")
        where = f"conversation {conversation_id}"
        mapping = expect(item.get("mapping"), dict, f"{where}: mapping")
        branch = _active_branch(mapping, item.get("current_node"), where)
        started = epoch_time(item.get("create_time"), f"{where}: create_time")
        messages = _messages(branch, started, plan, where)
        on_branch = {id(node) for node in branch}
        plan.skipped["off the active branch (edited or regenerated)"] += sum(
            1
            for node in mapping.values()
            if isinstance(node, dict) and node.get("message") and id(node) not in on_branch
        )
        plan.add_conversation(
            origin=ORIGIN, prefix="chatgpt", conversation_id=conversation_id, name=item.get("title"), messages=messages
        )
    return plan


def _active_branch(mapping: dict[str, Any], current: Any, where: str) -> list[dict[str, Any]]:
    """The nodes from the root down to `current_node`."""
    if not isinstance(current, str) or current not in mapping:
        raise ImportFormatError(f"{where}: current_node must name a node of mapping.")
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = current
    while node_id is not None:
        if node_id in seen:
            raise ImportFormatError(f"{where}: the parents of node {node_id} form a loop.")
        if not isinstance(node_id, str) or node_id not in mapping:
            raise ImportFormatError(f"{where}: parent {node_id!r} is not a node of mapping.")
        seen.add(node_id)
        node = expect(mapping[node_id], dict, f"{where}: node {node_id}")
        branch.append(node)
        node_id = node.get("parent")
    branch.reverse()
    return branch


def _messages(branch: list[dict[str, Any]], started: datetime | None, plan: ImportPlan, where: str) -> list[MessageIn]:
    messages: list[MessageIn] = []
    seen: set[str] = set()
    for node in branch:
        message = node.get("message")
        if message is None:  # the root of every tree is an empty node
            continue
        message = expect(message, dict, f"{where}: node {node.get('id')}: message")
        message_id = external_id(message.get("id") or node.get("id"), f"{where}: message id")
        here = f"{where}: message {message_id}"
        author = expect(message.get("author"), dict, f"{here}: author")
        role = ROLES.get(author.get("role"))
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        if role is None or message.get("recipient", "all") != "all":
            plan.skipped[f"{author.get('role') or 'unknown'} message" if role is None else "tool call"] += 1
            continue
        if metadata.get("is_visually_hidden_from_conversation"):
            plan.skipped["hidden context message"] += 1
            continue
        text = _text(message, here, plan)
        if text is None:
            continue
        if message_id in seen:
            continue
        seen.add(message_id)
        timestamp = epoch_time(message.get("create_time"), f"{here}: create_time") or started
        messages.append(MessageIn(id=message_id, content=text, role=role, timestamp=timestamp))
    return messages


def _text(message: dict[str, Any], where: str, plan: ImportPlan) -> str | None:
    """The message's text, or None (counted) when it has none worth keeping."""
    content = expect(message.get("content"), dict, f"{where}: content")
    content_type = content.get("content_type")
    if content_type not in TEXT_CONTENT:
        plan.skipped[f"non-text content ({content_type or 'unknown'})"] += 1
        return None
    parts = expect(content.get("parts", []), list, f"{where}: content.parts")
    read = [_part_text(part) for part in parts]
    plan.skipped["image, audio or file part"] += read.count(None)
    text = clean_text("\n\n".join(part for part in read if part is not None and part.strip())).strip()
    if not text:
        plan.skipped["empty message"] += 1
        return None
    return text


def _part_text(part: Any) -> str | None:
    """A part's words: a string, or what voice mode transcribed; None for images, audio and files."""
    if isinstance(part, str):
        return part
    if (
        isinstance(part, dict)
        and part.get("content_type") == "audio_transcription"
        and isinstance(part.get("text"), str)
    ):
        return str(part["text"])
    return None
