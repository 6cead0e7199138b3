"""Vector upkeep over every kind (claims, nodes, metric definitions, chunks): status by model, a resumable,
throttled reindex, and semantic recall lost after an embedding model change and restored by reindexing.

The "other model" is a local OpenAI-compatible endpoint serving MiniLM vectors with their dimensions reversed:
a good model in its own space, and a space in which the stored MiniLM vectors mean nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from maintenance.vectors import vectors_reindex, vectors_status
from memory.embeddings import get_embedder, reset_embedder_cache
from memory.embeddings.minilm import MiniLMEmbedder
from memory.models import Claim, Node, Partition, Scope, Source, ToolProfile, User
from metrics.models import MetricDefinition
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory, saved_chunk
from tests.local_http import JsonHandler, serving
from tests.mcp.conftest import McpService, call, mcp_persona, rest

pytestmark = pytest.mark.django_db

MINILM = "minilm-l6-v2-int8"
OTHER = "openai:minilm-reversed"
ALLERGY = "The user is allergic to penicillin."
ALLERGY_QUESTION = "which antibiotics must be avoided"  # no word in common: only the vector leg finds it
DENTIST_QUESTION = "who fixes my teeth"


class ReversedMiniLM(JsonHandler):
    minilm = MiniLMEmbedder()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        vectors = self.minilm.embed_documents(body["input"])
        data = [{"object": "embedding", "index": i, "embedding": v[::-1]} for i, v in enumerate(vectors)]
        self.send_json(200, json.dumps({"object": "list", "data": data, "model": body["model"]}).encode())


@pytest.fixture
def switch_model(settings: Any) -> Iterator[Any]:
    """Call it to configure the other embedding model (as an operator would, in settings)."""
    with serving(ReversedMiniLM) as base:

        def switch() -> None:
            settings.EMBEDDER, settings.EMBEDDING_URL, settings.EMBEDDING_MODEL = (
                "openai",
                f"{base}/v1",
                "minilm-reversed",
            )
            reset_embedder_cache()

        yield switch
    reset_embedder_cache()


def memory_of(user: User) -> dict[str, Any]:
    """One row of each kind, without vectors."""
    partition = user.partitions.get(key="memory:personal")
    source = Source.objects.create(
        owner=user, partition=partition, kind="document", external_id="notes", title="notes",
        occurred_at=timezone.now(),
    )  # fmt: skip
    text = "Notes from the spring planting weekend."
    return {
        "claims": ClaimFactory.create(owner=user, statement=ALLERGY),
        "nodes": NodeFactory.create(owner=user, label="Greta", summary="My dentist in Hamburg"),
        "metrics": MetricDefinition.objects.create(owner=user, partition=partition, slug="weight", label="Weight"),
        "chunks": saved_chunk(source, text),
    }


def counts(owner_id: int | None = None) -> dict[str, tuple[int, int, int]]:
    status = vectors_status(embedder=get_embedder(), owner_id=owner_id)
    return {kind.kind: (kind.current, kind.other_model, kind.missing) for kind in status.kinds}


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


def found(api: Api, persona: Persona, query: str) -> list[str]:
    answer = ok(api.post("/query/search", persona, {"query": query}))
    return [result["id"] for result in answer["searchResults"]]


# --- status and reindex --------------------------------------------------------------------------------


def test_status_counts_each_kind_by_model(alice: User) -> None:
    rows = memory_of(alice)
    Claim.objects.filter(pk=rows["claims"].pk).update(embedding=[0.5] * 3, embedding_model="old-model")
    Claim.objects.create(owner=alice, partition=rows["claims"].partition, statement="Gone.", status="retracted")
    assert counts() == {"claims": (0, 1, 0), "nodes": (0, 0, 1), "metrics": (0, 0, 1), "chunks": (0, 0, 1)}
    status = vectors_status(embedder=get_embedder())
    assert status.model_id == MINILM and status.remaining == 4
    assert status.kinds[0].by_model == {"old-model": 1}
    assert status.kinds[1].by_model == {"(none)": 1}


def test_reindex_embeds_every_kind_and_deletes_nothing(alice: User) -> None:
    rows = memory_of(alice)
    result = vectors_reindex(embedder=get_embedder(), batch_size=8)
    assert result.embedded == {"claims": 1, "nodes": 1, "metrics": 1, "chunks": 1}
    assert result.total_remaining == 0
    assert counts() == {kind: (1, 0, 0) for kind in rows}
    for kind, row in rows.items():
        stored = type(row).objects.get(pk=row.pk)
        assert stored.embedding_model == MINILM and len(stored.embedding) == 384, kind
    assert vectors_reindex(embedder=get_embedder(), batch_size=8).total_embedded == 0
    assert (Claim.objects.count(), Node.objects.count(), Source.objects.count()) == (1, 1, 1)


def test_reindex_resumes_after_an_interruption_and_the_counts_add_up(alice: User) -> None:
    for n in range(5):
        ClaimFactory.create(owner=alice, statement=f"Fact number {n} about the garden.")
    stale_before = counts()["claims"][2]
    assert stale_before == 5

    class Stop(Exception):
        pass

    def crash(kind: str, done: int, stale: int) -> None:
        raise Stop  # the process dies right after its first committed batch

    with pytest.raises(Stop):
        vectors_reindex(embedder=get_embedder(), batch_size=2, kinds=["claims"], on_batch=crash)
    assert counts()["claims"] == (2, 0, 3)  # the first batch stayed; nothing half-written

    second = vectors_reindex(embedder=get_embedder(), batch_size=2, kinds=["claims"])
    assert (second.embedded["claims"], second.remaining["claims"]) == (3, 0)
    assert 2 + second.embedded["claims"] == stale_before
    assert counts()["claims"] == (5, 0, 0)


def test_limit_and_pause_throttle_a_run(alice: User, monkeypatch: Any) -> None:
    for n in range(5):
        ClaimFactory.create(owner=alice, statement=f"Fact number {n}.")
    slept: list[float] = []
    monkeypatch.setattr("maintenance.vectors.time.sleep", slept.append)
    batches: list[int] = []
    result = vectors_reindex(
        embedder=get_embedder(), batch_size=2, limit=3, pause_s=0.25, on_batch=lambda k, d, s: batches.append(d)
    )
    assert batches == [2, 3] and slept == [0.25]  # batches of at most 2, a pause between them, 3 in all
    assert (result.selected["claims"], result.embedded["claims"], result.remaining["claims"]) == (3, 3, 2)
    dry = vectors_reindex(embedder=get_embedder(), batch_size=2, dry_run=True)
    assert (dry.selected["claims"], dry.total_embedded, dry.total_remaining) == (2, 0, 2)
    assert counts()["claims"] == (3, 0, 2)


# --- the model switch --------------------------------------------------------------------------------


def test_switching_the_model_loses_semantic_recall_until_reindexed(
    api: Api, owner: Persona, alice: User, switch_model: Any
) -> None:
    rows = memory_of(alice)
    vectors_reindex(embedder=get_embedder(), batch_size=8)  # embedded by MiniLM, as a running install would be
    assert rows["claims"].pk in found(api, owner, ALLERGY_QUESTION)
    assert rows["nodes"].pk in found(api, owner, DENTIST_QUESTION)

    switch_model()
    assert get_embedder().model_id == OTHER
    assert counts(alice.pk) == {kind: (0, 1, 0) for kind in rows}  # all on another model now
    assert rows["claims"].pk not in found(api, owner, ALLERGY_QUESTION)
    assert rows["nodes"].pk not in found(api, owner, DENTIST_QUESTION)

    preview = ok(api.post("/maintenance/embeddings/reindex", owner, {}))
    assert (preview["dryRun"], preview["selected"], preview["embedded"], preview["remaining"]) == (True, 4, 0, 4)
    applied = ok(api.post("/maintenance/embeddings/reindex", owner, {"dryRun": False}))
    assert (applied["model"], applied["embedded"], applied["remaining"]) == (OTHER, 4, 0)

    assert counts(alice.pk) == {kind: (1, 0, 0) for kind in rows}
    assert rows["claims"].pk in found(api, owner, ALLERGY_QUESTION)
    assert rows["nodes"].pk in found(api, owner, DENTIST_QUESTION)
    status = ok(api.post("/maintenance/embeddings/status", owner, {}))
    assert status["model"] == OTHER and status["remaining"] == 0
    assert {kind["kind"]: kind["byModel"] for kind in status["kinds"]} == {
        kind: [{"model": OTHER, "count": 1}] for kind in rows
    }


# --- REST ----------------------------------------------------------------------------------------------


def test_rest_status_and_a_client_loop_over_limit(api: Api, owner: Persona, alice: User) -> None:
    for n in range(5):
        ClaimFactory.create(owner=alice, statement=f"Fact number {n}.")
    memory_of(alice)
    status = ok(api.post("/maintenance/embeddings/status", owner, {"kinds": ["claims", "metrics"]}))
    assert [kind["kind"] for kind in status["kinds"]] == ["claims", "metrics"]
    assert status["kinds"][0] == {
        "kind": "claims", "total": 6, "current": 0, "otherModel": 0, "missing": 6, "remaining": 6,
        "byModel": [{"model": "(none)", "count": 6}],
    }  # fmt: skip
    total, calls, remaining = 0, 0, 1
    while remaining > 0:
        answer = ok(api.post("/maintenance/embeddings/reindex", owner, {"dryRun": False, "limit": 4}))
        assert answer["embedded"] <= 4
        total, calls, remaining = total + answer["embedded"], calls + 1, answer["remaining"]
    assert (total, calls) == (9, 3)  # 6 claims, a node, a metric, a chunk


def test_rest_reindex_apply_needs_the_maintenance_scope(api: Api, alice: User) -> None:
    memory_of(alice)
    reader = issue(alice, "reader", scopes=[Scope.READ])
    assert ok(api.post("/maintenance/embeddings/status", reader, {}))["remaining"] == 4
    assert ok(api.post("/maintenance/embeddings/reindex", reader, {}))["selected"] == 4
    response = api.post("/maintenance/embeddings/reindex", reader, {"dryRun": False})
    assert response.status_code == 403 and error_code(response) == "SCOPE_REQUIRED"
    writer = issue(alice, "writer", scopes=[Scope.WRITE])
    assert error_code(api.post("/maintenance/embeddings/status", writer, {})) == "SCOPE_REQUIRED"
    assert counts()["claims"] == (0, 0, 1)


def test_rest_personas(api: Api, other: Persona, outsider: Persona, revoked: Persona, alice: User) -> None:
    memory_of(alice)
    assert ok(api.post("/maintenance/embeddings/status", other, {}))["remaining"] == 0  # bob's memory is empty
    answer = ok(api.post("/maintenance/embeddings/reindex", other, {"dryRun": False}))
    assert (answer["embedded"], answer["remaining"]) == (0, 0)
    for path in ("/maintenance/embeddings/status", "/maintenance/embeddings/reindex"):
        assert error_code(api.post(path, other, {"userId": alice.external_id})) == "NOT_FOUND"
        assert error_code(api.post(path, outsider, {})) == "TOKEN_INVALID"
        assert error_code(api.post(path, revoked, {})) == "TOKEN_REVOKED"
        assert error_code(api.post(path, None, {})) == "AUTH_REQUIRED"
    assert counts()["claims"] == (0, 0, 1)


def test_rest_reaches_only_the_partitions_of_the_token(api: Api, alice: User) -> None:
    memory_of(alice)
    work = Partition.objects.create(owner=alice, key="project:work", label="Work")
    ClaimFactory.create(owner=alice, partition=work, statement="Work fact.")
    scoped = issue(
        alice, "work-only", scopes=Scope.values, partition_keys=["project:work"], default_partition_key="project:work"
    )
    answer = ok(api.post("/maintenance/embeddings/reindex", scoped, {"dryRun": False}))
    assert (answer["embedded"], answer["remaining"]) == (1, 0)
    assert counts()["claims"] == (1, 0, 1)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/maintenance/embeddings/status", {"kinds": ["vectors"]}),
        ("/maintenance/embeddings/status", {"kinds": []}),
        ("/maintenance/embeddings/status", {"kinds": "claims"}),
        ("/maintenance/embeddings/status", {"model": "x"}),
        ("/maintenance/embeddings/reindex", {"limit": 0}),
        ("/maintenance/embeddings/reindex", {"limit": 5001}),
        ("/maintenance/embeddings/reindex", {"dryRun": "perhaps"}),
        ("/maintenance/embeddings/reindex", {"dryRun": False, "kinds": ["claims", "sources"]}),
    ],
)
def test_rest_bad_input(api: Api, owner: Persona, alice: User, path: str, body: dict[str, Any]) -> None:
    memory_of(alice)
    response = api.post(path, owner, body)
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert counts()["claims"] == (0, 0, 1)


def test_rest_an_unavailable_embedder_is_the_error_shape(api: Api, owner: Persona, settings: Any) -> None:
    settings.EMBEDDER = "nonsense"
    reset_embedder_cache()
    try:
        for path in ("/maintenance/embeddings/status", "/maintenance/embeddings/reindex"):
            response = api.post(path, owner, {"dryRun": False} if path.endswith("reindex") else {})
            assert response.status_code == 503 and error_code(response) == "EMBEDDER_UNAVAILABLE"
    finally:
        settings.EMBEDDER = "minilm"
        reset_embedder_cache()


# --- CLI -----------------------------------------------------------------------------------------------


def run(*args: str) -> str:
    out = StringIO()
    call_command("embeddings", *args, stdout=out)
    return out.getvalue()


def test_cli_covers_every_kind_and_one_user(alice: User, bob: User) -> None:
    memory_of(alice)
    memory_of(bob)
    status = run("status", "--user", "alice")
    for kind in ("claims", "nodes", "metrics", "chunks"):
        assert f"{kind}: 1, current model 0, other model 0, missing 1" in status
    assert run("reindex", "--dry-run", "--kind", "metrics").splitlines() == ["metrics: would embed 2"]
    assert "reindex complete: 4 row(s) embedded" in run("reindex", "--user", "alice", "--batch-size", "1")
    assert counts(alice.pk) == {kind: (1, 0, 0) for kind in ("claims", "nodes", "metrics", "chunks")}
    assert counts(bob.pk)["claims"] == (0, 0, 1)
    output = run("reindex", "--kind", "claims", "--limit", "1", "--pause", "0")
    assert "reindex complete: 1 row(s) embedded" in output and "3 remaining" not in output


def test_cli_refuses_bad_arguments(db: None) -> None:
    for args in (["reindex", "--batch-size", "0"], ["reindex", "--pause", "-1"], ["reindex", "--limit", "0"],
                 ["status", "--user", "nobody"], ["status", "--kind", "sources"], ["explode"]):  # fmt: skip
        with pytest.raises(CommandError):
            run(*args)


# --- MCP, over real HTTP -------------------------------------------------------------------------------


def test_mcp_embeddings_tools_answer_like_rest_and_loop_to_zero(
    mcp_service: McpService, mcp_owner: Persona, alice: User
) -> None:
    memory_of(alice)
    status = call(mcp_service, mcp_owner, "embeddings_status", {})
    assert status.payload == rest(mcp_service, mcp_owner, "/maintenance/embeddings/status")
    assert status.payload["remaining"] == 4
    preview = call(mcp_service, mcp_owner, "embeddings_reindex", {})
    assert (preview.payload["dryRun"], preview.payload["selected"], preview.payload["embedded"]) == (True, 4, 0)
    embedded, remaining = 0, 4
    while remaining > 0:
        answer = call(mcp_service, mcp_owner, "embeddings_reindex", {"dryRun": False, "limit": 3})
        assert not answer.is_error, answer.payload
        embedded, remaining = embedded + answer.payload["embedded"], answer.payload["remaining"]
    assert embedded == 4
    assert call(mcp_service, mcp_owner, "embeddings_status", {}).payload["remaining"] == 0


def test_mcp_embeddings_tools_refusals(mcp_service: McpService, mcp_other: Persona, alice: User) -> None:
    memory_of(alice)
    reader = mcp_persona(alice, "mcp-reader", scopes=[Scope.READ])
    assert call(mcp_service, reader, "embeddings_reindex", {"dryRun": False}).code == "SCOPE_REQUIRED"
    assert call(mcp_service, reader, "embeddings_status", {"kinds": ["sources"]}).code == "VALIDATION_ERROR"
    assert call(mcp_service, reader, "embeddings_reindex", {"limit": 0}).code == "VALIDATION_ERROR"
    for tool in ("embeddings_status", "embeddings_reindex"):
        assert call(mcp_service, mcp_other, tool, {"userId": alice.external_id}).code == "NOT_FOUND"
    assert call(mcp_service, mcp_other, "embeddings_reindex", {"dryRun": False}).payload["embedded"] == 0
    agent = mcp_persona(alice, "mcp-agent", profile=ToolProfile.AGENT)
    assert call(mcp_service, agent, "embeddings_status", {}).code == "NOT_FOUND"  # full profile only
    assert counts()["claims"] == (0, 0, 1)
