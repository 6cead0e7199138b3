"""The optional `llm` extractor: any OpenAI-compatible `POST {url}/chat/completions` (Ollama, vLLM, llama.cpp
server, OpenAI) answering JSON under a schema (memory.extraction.llm_prompt).

All or nothing: a timeout, an HTTP error, a cut-off answer (`finish_reason: length`, the token budget), JSON
that does not match the schema, or an item citing a message it was not given or an excerpt that is not in
that message makes the whole answer worthless, so the extraction is empty with a `failure` reason. An
extractor only proposes; it never deletes or rewrites anything, and reconcile decides what is stored.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from jsonschema import Draft202012Validator

from memory.extraction.base import (
    SELF,
    ClaimCandidate,
    EvidenceRef,
    Extraction,
    NodeRef,
    ReadingCandidate,
    TaskCandidate,
    TextUnit,
)
from memory.extraction.llm_prompt import SCHEMA, build_messages, unit_ids
from memory.extraction.readings import canonical

logger = logging.getLogger("memory.extraction.llm")
_VALIDATOR = Draft202012Validator(SCHEMA)
_SPACE = re.compile(r"\s+")


class InvalidAnswer(Exception):
    """The model's answer cannot be trusted as a whole."""


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class LLMExtractor:
    name = "llm"

    def __init__(self, url: str, model: str, api_key: str = "", timeout_s: float = 60, max_tokens: int = 2048) -> None:
        self._endpoint = url.rstrip("/") + "/chat/completions"
        self._model = model
        self.version = model  # model attribution: every claim records which model proposed it
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._max_tokens = max_tokens

    def extract(self, units: list[TextUnit], *, timezone_name: str = "UTC") -> Extraction:
        if not units:
            return Extraction()
        try:
            answer = self._complete(build_messages(units, timezone_name))
            return _candidates(answer, unit_ids(units), ZoneInfo(timezone_name))
        except InvalidAnswer as problem:
            reason = str(problem).replace(self._api_key, "***") if self._api_key else str(problem)
            logger.warning("extraction.llm.failed", extra={"reason": reason, "model": self._model})
            return Extraction(failure=reason)

    def _complete(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body = {
            "model": self._model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self._max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "memory_extraction", "strict": True, "schema": SCHEMA},
            },
        }
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            with httpx.Client(timeout=self._timeout_s) as client:
                response = client.post(self._endpoint, json=body, headers=headers)
        except httpx.TimeoutException:
            raise InvalidAnswer(f"no answer within {self._timeout_s} s") from None
        except (httpx.HTTPError, httpx.InvalidURL, UnicodeEncodeError) as exc:
            raise InvalidAnswer(f"the endpoint cannot be reached ({type(exc).__name__})") from None
        if response.status_code >= 400:
            raise InvalidAnswer(f"the endpoint answered HTTP {response.status_code}")
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise InvalidAnswer("the answer is not a chat completion") from None
        if choice.get("finish_reason") == "length":
            raise InvalidAnswer("the answer was cut off at the token budget")
        try:
            answer = json.loads(content)
        except (TypeError, ValueError):
            raise InvalidAnswer("the completion is not JSON") from None
        if errors := sorted(_VALIDATOR.iter_errors(answer), key=lambda error: list(error.path)):
            where = "/".join(str(part) for part in errors[0].path) or "(root)"
            raise InvalidAnswer(f"the completion does not match the schema at {where}: {errors[0].message[:200]}")
        return answer


def _evidence(item: dict[str, Any], units: dict[str, TextUnit]) -> tuple[EvidenceRef, TextUnit]:
    unit = units.get(item["evidenceId"])
    if unit is None:
        raise InvalidAnswer(f"an item cites {item['evidenceId']}, which it was not given")
    if _plain(item["excerpt"]) not in _plain(unit.text):
        raise InvalidAnswer(f"an excerpt is not in {item['evidenceId']}")
    ref = EvidenceRef(
        source_id=unit.source_id,
        excerpt=item["excerpt"],
        message_id=unit.message_id,
        authored_at=unit.authored_at,
        chunk_id=unit.chunk_id,
    )
    return ref, unit


def _day(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidAnswer(f"{text!r} is not a date") from None


def _node(node: dict[str, Any] | None) -> NodeRef | None:
    if node is None:
        return None
    return SELF if node["type"] == "Self" else NodeRef(type=node["type"], label=node["label"].strip())


def _origin(stated: bool, unit: TextUnit) -> str:
    """Only the owner's own words are user-stated, whatever the model says."""
    return "user_stated" if stated and unit.by_owner else "assistant_inferred"


def _candidates(answer: dict[str, Any], units: dict[str, TextUnit], zone: ZoneInfo) -> Extraction:
    """The answer as candidates; any item that does not hold up rejects the whole answer."""
    found = Extraction(people=[NodeRef(type="Person", label=person["label"].strip()) for person in answer["people"]])
    for item in answer["claims"]:
        evidence, unit = _evidence(item, units)
        found.claims.append(
            ClaimCandidate(
                statement=item["statement"].strip(),
                kind=item["kind"],
                subject=_node(item["subject"]) or SELF,
                evidence=evidence,
                predicate=item["predicate"],
                object_node=_node(item["object"]),
                origin=_origin(item["userStated"], unit),
                confidence=float(item["confidence"]),
                importance=int(item["importance"]),
                reason=item["reason"].strip(),
            )
        )
    for item in answer["tasks"]:
        evidence, unit = _evidence(item, units)
        found.tasks.append(
            TaskCandidate(
                label=item["label"].strip(),
                evidence=evidence,
                owner=NodeRef(type="Person", label=item["owner"].strip()) if item["owner"] else None,
                people=tuple(NodeRef(type="Person", label=name.strip()) for name in item["mentions"] if name.strip()),
                due_on=_day(item["dueOn"]),
                due_removed=item["dueRemoved"],
                status=item["status"],
                origin=_origin(item["userStated"], unit),
            )
        )
    for item in answer["readings"]:
        evidence, unit = _evidence(item, units)
        if not unit.by_owner:
            continue  # someone else's numbers are not the owner's readings
        value, unit_name = canonical(float(item["value"]), item["unit"])
        day = _day(item["occurredOn"])
        occurred = datetime.combine(day, time(12), zone).astimezone(UTC) if day else unit.authored_at
        found.readings.append(ReadingCandidate(item["metric"], value, unit_name, evidence, occurred))
    return found
