"""What a few conversations leave in the memory when the real worker processes them with the default extractor,
read back through REST as a chat host would: whose tasks, which people, which facts about whom, which readings,
and what is left out. (Real PostgreSQL, Redis and Celery worker; committed data.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from tests.conftest import Api, Persona
from tests.memory.test_pipeline_worker import wait_for_status
from tests.process import celery_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]

MONDAY = "2026-06-01"  # "by Thursday" is 2026-06-04, "tomorrow" 2026-06-02

CONVERSATIONS: dict[str, list[tuple[str, str]]] = {
    "promises": [
        ("user", "I'll send the floor plan to Ingrid by Thursday."),
        ("user", "Bram will renew the parking permit tomorrow, and I need to ask Yusuf to water the plants."),
    ],
    "changes": [
        ("user", "I have to file the insurance claim by Thursday."),
        ("user", "Forget the insurance claim, it's been cancelled."),
        ("user", "Ik moet morgen de huur overmaken."),
    ],
    "people": [
        ("user", "My brother Tobias works at Philips."),
        ("user", "Mijn buurvrouw Greet woont in Haarlem."),
        ("user", 'Yesterday Tobias said "I really hate cilantro".'),
    ],
    "readings": [
        ("user", "Stepped on the scale this morning: 71.3 kg."),
        ("user", "My wife ran 12 km today."),
    ],
    "nothing": [
        ("user", "If the weather holds, maybe I'll repaint the shed."),
        ("assistant", "You probably prefer tea over coffee, right?"),
        ("user", "Should I move to Rotterdam?"),
    ],
}


def ingest(api: Api, persona: Persona, name: str, turns: list[tuple[str, str]]) -> str:
    messages = [
        {"id": f"{name}-m{n}", "role": role, "content": text, "timestamp": f"{MONDAY}T09:{n:02d}:00Z"}
        for n, (role, text) in enumerate(turns)
    ]
    body = {"conversation": {"id": name, "messages": messages}}
    response = api.post("/ingest/conversation", persona, body)
    assert response.status_code == 202, response.content
    return str(response.json()["operationId"])


def read(api: Api, persona: Persona, path: str, body: dict[str, Any] | None = None) -> Any:
    response = api.post(path, persona, body or {})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_worker_stores_what_a_careful_person_would(api: Api, owner: Persona) -> None:
    with celery_worker(connection.settings_dict["NAME"]):
        operations = [ingest(api, owner, name, turns) for name, turns in CONVERSATIONS.items()]
        for operation in operations:
            assert wait_for_status(api, owner, operation, {"completed", "failed"})["status"] == "completed"

    tasks = read(api, owner, "/commitments/list", {"status": ["pending", "in_progress", "completed", "abandoned"]})
    by_label = {task["label"]: task for task in tasks["commitments"]}
    assert {label: (t["status"], (t["owner"] or {}).get("label"), t["dueOn"]) for label, t in by_label.items()} == {
        "Send the floor plan to Ingrid": ("pending", None, "2026-06-04"),
        "Renew the parking permit": ("pending", "Bram", "2026-06-02"),
        "Ask Yusuf to water the plants": ("pending", None, None),
        "File the insurance claim": ("abandoned", None, "2026-06-04"),
        "De huur overmaken": ("pending", None, "2026-06-02"),
    }

    people = {node["label"] for node in read(api, owner, "/node/list", {"type": ["Person"]})["nodes"]}
    assert people == {"Ingrid", "Bram", "Yusuf", "Tobias", "Greet"}

    claims = read(api, owner, "/claim/list", {"limit": 100})["claims"]
    statements = {claim["statement"] for claim in claims if not claim["statement"].startswith(tuple(by_label))}
    assert any("Tobias" in s and "Philips" in s for s in statements), statements
    assert any("Greet" in s and "Haarlem" in s for s in statements), statements
    assert not any("cilantro" in s and "Tobias" not in s for s in statements), statements  # his words, not the user's
    assert not any(word in s.lower() for s in statements for word in ("shed", "tea", "rotterdam")), statements

    metrics = {metric["slug"]: metric for metric in read(api, owner, "/metrics/list")["metrics"]}
    assert list(metrics) == ["body_weight"]  # the wife's run is hers
    series = read(api, owner, "/metrics/series", {"slug": "body_weight"})
    assert [point["value"] for point in series["points"]] == [71.3]
