"""The Claude.ai data export (`conversations.json`): a list of conversations with their `chat_messages`.

A message's words are its `text` content blocks (older exports carry only `text`); extended thinking, tool use
and tool results are not what the person and Claude said to each other and are skipped, as are attachments and
files (their extracted text is a pasted document, not conversation). Where an export records branches
(`parent_message_uuid` with the conversation's `current_leaf_message_uuid`) only the branch last seen is kept."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.importers.base import (
    ImportFormatError,
    ImportPlan,
    clean_text,
    expect,
    external_id,
    iso_time,
    refuse_other_export,
)
from memory.services.ingestion_shapes import MessageIn

ORIGIN = "claude-export"
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def parse_claude(data: Any) -> ImportPlan:
    """Every conversation of the export as a ConversationIn (`claude:<uuid>`, message uuids kept)."""
    refuse_other_export(data, "claude")
    plan = ImportPlan()
    items = expect(data, list, "A Claude export (conversations.json)")
    for index, item in enumerate(items, start=1):
        item = expect(item, dict, f"conversation {index}")
        conversation_id = external_id(item.get("uuid"), f"conversation {index}: uuid")
        where = f"conversation {conversation_id}"
        started = iso_time(item.get("created_at"), f"{where}: created_at")
        raw = [
            expect(m, dict, f"{where}: message")
            for m in expect(item.get("chat_messages"), list, f"{where}: chat_messages")
        ]
        kept = _active_branch(raw, item.get("current_leaf_message_uuid"), where)
        plan.skipped["off the active branch (edited or regenerated)"] += len(raw) - len(kept)
        messages = [m for message in kept if (m := _message(message, started, plan, where)) is not None]
        plan.add_conversation(
            origin=ORIGIN, prefix="claude", conversation_id=conversation_id, name=item.get("name"), messages=messages
        )
    return plan


def _active_branch(messages: list[dict[str, Any]], leaf: Any, where: str) -> list[dict[str, Any]]:
    """The messages from the first to the current leaf when the export records the tree, else all in order."""
    by_id = {m.get("uuid"): m for m in messages}
    if not isinstance(leaf, str) or leaf not in by_id or not any("parent_message_uuid" in m for m in messages):
        return messages
    branch: list[dict[str, Any]] = []
    current: Any = leaf
    while current in by_id:
        message = by_id.pop(current)  # popping also stops a loop of parents
        branch.append(message)
        current = message.get("parent_message_uuid")
    if not branch:
        raise ImportFormatError(f"{where}: current_leaf_message_uuid names no message.")
    return branch[::-1]


def _message(message: dict[str, Any], started: datetime | None, plan: ImportPlan, where: str) -> MessageIn | None:
    message_id = external_id(message.get("uuid"), f"{where}: message uuid")
    here = f"{where}: message {message_id}"
    role = ROLES.get(str(message.get("sender")))
    if role is None:
        plan.skipped[f"{message.get('sender') or 'unknown'} message"] += 1
        return None
    pasted = [message.get(key) for key in ("attachments", "files")]
    plan.skipped["attachment or file"] += sum(len(items) for items in pasted if isinstance(items, list))
    text = clean_text(_text(message, here, plan)).strip()
    if not text:
        plan.skipped["empty message"] += 1
        return None
    timestamp = iso_time(message.get("created_at"), f"{here}: created_at") or started
    return MessageIn(id=message_id, content=text, role=role, timestamp=timestamp)


def _text(message: dict[str, Any], where: str, plan: ImportPlan) -> str:
    blocks = message.get("content")
    if blocks is None:
        return str(expect(message.get("text", ""), str, f"{where}: text"))
    texts = []
    for block in expect(blocks, list, f"{where}: content"):
        block = expect(block, dict, f"{where}: content block")
        if block.get("type") == "text":
            texts.append(str(expect(block.get("text", ""), str, f"{where}: content block text")))
        else:
            plan.skipped[f"{block.get('type') or 'unknown'} block"] += 1
    if not any(t.strip() for t in texts) and isinstance(message.get("text"), str):
        return str(message["text"])
    return "\n\n".join(t for t in texts if t.strip())
