"""The admin's lists of the large tables (the call log, the audit trail, claims, evidence) stay bounded at millions of
rows: filters offer the column's vocabulary instead of a DISTINCT over the table, an unfiltered list of a large table
counts from PostgreSQL's estimate, no list counts the whole table beside its matches, and searches go through an
index (exact ids and usernames; a claim's words). bench/ui_pages.py times them on a store with a history."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory import admin_base
from memory.access import Actor, access_for_user
from memory.admin import _tool_names
from memory.models import Chunk, Claim, Evidence, Operation, Source, ToolEvent, User
from memory.pipeline import runner
from memory.pipeline.steps import RECEIPT_ERROR_CODES, StepFailed
from memory.services.audit import audit_record
from memory.services.embeddings import CHUNK_MODELS_IN_USE
from metrics.services import observation_record
from tests.factories import ClaimFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def estimates_left_as_found() -> Iterator[None]:
    """ANALYZE writes a table's estimate in place, which the test's rollback does not undo: it is taken again on the
    empty table, so later tests do not list an estimated 200,000 calls."""
    yield
    ToolEvent.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_toolevent")


def listed(client: Client, url: str) -> tuple[Any, list[str]]:
    """The change list a page shows, and the SQL it sent."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return response.context_data["cl"], [query["sql"] for query in captured.captured_queries]  # type: ignore[index]


def calls(user: User, *tools: tuple[str, str]) -> None:
    for surface, tool in tools:
        ToolEvent.objects.create(owner=user, surface=surface, tool=tool, status_code=200, outcome="ok", duration_ms=4)


def test_the_call_log_filters_by_surface_and_tool_from_their_vocabulary(admin_client: Client, alice: User) -> None:
    calls(alice, ("rest", "claim.list"), ("rest", "claim.list"), ("mcp", "search_memory"))
    cl, sql = listed(admin_client, "/admin/memory/toolevent/")
    assert not [statement for statement in sql if "DISTINCT" in statement]  # no column read for its values
    choices = {spec.title: [choice["display"] for choice in spec.choices(cl)] for spec in cl.filter_specs}
    assert {"claim.list", "search_memory", "memory.get", "whoami"} <= set(choices["tool"])  # used or not yet
    assert choices["surface"] == ["All", "mcp", "rest"]
    cl, _ = listed(admin_client, "/admin/memory/toolevent/?tool=claim.list")
    assert [row.tool for row in cl.result_list] == ["claim.list", "claim.list"]
    cl, _ = listed(admin_client, "/admin/memory/toolevent/?surface=mcp")
    assert [row.tool for row in cl.result_list] == ["search_memory"]


def test_filters_offer_no_counts_of_every_choice(admin_client: Client, alice: User) -> None:
    calls(alice, ("rest", "claim.list"))
    page = admin_client.get("/admin/memory/toolevent/").content.decode()
    assert "Show counts" not in page
    _, sql = listed(admin_client, "/admin/memory/toolevent/?_facets=True")  # asked for by hand
    assert not [statement for statement in sql if "FILTER (WHERE" in statement]  # a count per tool: 5.6 s at 300k


def test_every_tool_a_call_can_name_is_offered() -> None:
    from django.urls import URLPattern, URLResolver, get_resolver

    from mcp_bridge.catalog import all_tools

    def views(patterns: list[URLPattern | URLResolver]) -> list[Any]:
        found = []
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                found += views(pattern.url_patterns)
            elif view := getattr(pattern.callback, "view_class", None):
                found.append(view)
        return found

    routed = {tool for view in views(get_resolver().url_patterns) if (tool := getattr(view, "tool", ""))}
    names = set(_tool_names())
    assert len(routed) > 50 and routed <= names  # every REST endpoint served, as its calls name it
    assert {spec.name for spec in all_tools()} <= names  # and every MCP tool


def test_the_audit_trail_filters_by_action_and_lists_newest_first(admin_client: Client, alice: User) -> None:
    claim = ClaimFactory.create(owner=alice)
    for action in ("claim.extract", "claim.pin", "claim.unpin", "claim.pin"):
        audit_record(actor=Actor.person(alice, "ui"), owner=alice, action=action, target=claim)
    cl, sql = listed(admin_client, "/admin/memory/memoryevent/?action=claim.pin")
    assert not [statement for statement in sql if "DISTINCT" in statement]
    assert [row.action for row in cl.result_list] == ["claim.pin", "claim.pin"]
    cl, _ = listed(admin_client, "/admin/memory/memoryevent/?q=" + claim.pk)
    assert [row.action for row in cl.result_list] == ["claim.pin", "claim.unpin", "claim.pin", "claim.extract"]
    actions = [choice["display"] for spec in cl.filter_specs if spec.title == "action" for choice in spec.choices(cl)]
    assert {"claim.pin", "review.accept", "token.issue"} <= set(actions)


def test_an_unfiltered_list_of_a_large_table_counts_from_the_estimate(
    admin_client: Client, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls(alice, *[("rest", "whoami")] * 3)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_toolevent")  # the estimate: 3 rows
    calls(alice, ("rest", "whoami"), ("mcp", "search_memory"))  # 5 now; the estimate stays until the next ANALYZE
    cl, sql = listed(admin_client, "/admin/memory/toolevent/")
    assert cl.result_count == 5  # a small table: counted
    assert [statement for statement in sql if "COUNT(*)" in statement]
    monkeypatch.setattr(admin_base, "ESTIMATED_FROM", 3)  # as past 100,000 rows
    cl, sql = listed(admin_client, "/admin/memory/toolevent/")
    assert cl.result_count == 3  # the estimate, without reading the table
    assert not [statement for statement in sql if "COUNT(" in statement]
    cl, sql = listed(admin_client, "/admin/memory/toolevent/?surface=mcp")
    assert cl.result_count == 1  # a filtered list counts its matches exactly
    assert [statement for statement in sql if "COUNT(*)" in statement] == [
        next(statement for statement in sql if "COUNT(*)" in statement and '"surface" = ' in statement)
    ]  # and only them: not the whole table beside them


def test_searches_of_the_audit_trail_and_evidence_are_exact(admin_client: Client, alice: User, bob: User) -> None:
    mine, theirs = ClaimFactory.create(owner=alice), ClaimFactory.create(owner=bob)
    for claim in (mine, theirs):
        audit_record(actor=Actor.system(), owner=claim.owner, action="claim.extract", target=claim)
    cl, _ = listed(admin_client, f"/admin/memory/memoryevent/?q={mine.pk}")
    assert [row.target_id for row in cl.result_list] == [mine.pk]
    cl, _ = listed(admin_client, "/admin/memory/memoryevent/?q=bob")
    assert {row.owner_id for row in cl.result_list} == {bob.pk}
    cl, _ = listed(admin_client, f"/admin/memory/memoryevent/?q={mine.pk[:-3]}")
    assert list(cl.result_list) == []  # a fragment of an id is not a match (it would read every row)
    source = Source.objects.create(owner=alice, partition=mine.partition, kind="note", external_id="n1",
                                   occurred_at=timezone.now())  # fmt: skip
    evidence = [Evidence.objects.create(owner=alice, claim=claim, source=source) for claim in (mine, theirs)]
    cl, _ = listed(admin_client, f"/admin/memory/evidence/?q={mine.pk}")
    assert [row.pk for row in cl.result_list] == [evidence[0].pk]
    cl, _ = listed(admin_client, f"/admin/memory/evidence/?q={source.pk}")
    assert {row.pk for row in cl.result_list} == {row.pk for row in evidence}


def test_claims_are_searched_by_their_words(admin_client: Client, alice: User) -> None:
    ClaimFactory.create(owner=alice, statement="Alice lives in Utrecht.")
    ClaimFactory.create(owner=alice, statement="Alice plays the cello.")
    cl, sql = listed(admin_client, "/admin/memory/claim/?q=utrecht")
    assert [row.statement for row in cl.result_list] == ["Alice lives in Utrecht."]
    assert not [statement for statement in sql if "LIKE" in statement]  # the text index, not every statement read
    cl, _ = listed(admin_client, '/admin/memory/claim/?q="plays the cello"')
    assert [row.statement for row in cl.result_list] == ["Alice plays the cello."]
    assert Claim.objects.count() == 2


def test_a_filtered_list_counted_past_its_budget_shows_the_planners_estimate(
    admin_client: Client, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_toolevent (owner_id, surface, tool, partition_key, status_code, outcome, error_code,"
            " duration_ms, request_bytes, response_bytes, created_at)"
            " SELECT %s, 'rest', CASE WHEN n %% 10 = 0 THEN 'claim.list' ELSE 'whoami' END, '', 200, 'ok', '', 3, 0, 0,"
            " now() FROM generate_series(1, 200000) AS n",
            [alice.pk],
        )
        cursor.execute("ANALYZE memory_toolevent")
    monkeypatch.setattr(admin_base, "ESTIMATED_FROM", 1000)
    monkeypatch.setattr(admin_base, "COUNT_BUDGET_MS", 60_000)
    cl, _ = listed(admin_client, "/admin/memory/toolevent/?tool=claim.list")
    assert cl.result_count == 20000  # counted within the budget: exact
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"  # the budget ended with the count
    monkeypatch.setattr(admin_base, "COUNT_BUDGET_MS", 1)  # no count of 200,000 rows ends within a millisecond
    cl, _ = listed(admin_client, "/admin/memory/toolevent/?tool=claim.list")
    estimate = json.loads(ToolEvent.objects.filter(tool="claim.list").explain(format="json"))[0]["Plan"]["Plan Rows"]
    assert cl.result_count == estimate and 10000 < estimate < 40000  # the planner's, near the 20,000 there are
    assert [row.tool for row in cl.result_list] == ["claim.list"] * 100  # the page itself is read as ever
    monkeypatch.setattr(admin_base, "LEAST_ESTIMATE", 500_000)  # as when the planner guesses a few rows
    cl, _ = listed(admin_client, "/admin/memory/toolevent/?tool=claim.list")
    assert cl.result_count == 500_000 and len(cl.result_list) == 100  # a page, never every match at once


@pytest.mark.parametrize(
    "query",
    ["?tool=not.a.tool", "?tool=claim.list%00", "?surface=host", "?action=claim.nothing", "?action=claim.pin%00"],
)
def test_a_filter_value_outside_its_vocabulary_is_the_admins_invalid_filter(
    admin_client: Client, alice: User, query: str
) -> None:
    calls(alice, ("rest", "claim.list"))
    model = "memoryevent" if "action" in query else "toolevent"
    response = admin_client.get(f"/admin/memory/{model}/{query}")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")  # not a 500, not a false empty list


@pytest.mark.parametrize("model", ["memoryevent", "evidence", "claim"])
def test_searches_with_odd_terms_answer(admin_client: Client, alice: User, model: str) -> None:
    ClaimFactory.create(owner=alice, statement="Alice lives in Utrecht.")
    for term in ("a%00b", "%22unclosed", "-", "or", "x" * 500, "%27%3B drop table"):
        assert admin_client.get(f"/admin/memory/{model}/?q={term}").status_code == 200, term


@pytest.mark.parametrize(
    "model",
    ["memory/toolevent", "memory/memoryevent", "memory/claim", "memory/evidence", "memory/operation",
     "memory/chunk", "metrics/observation"],
)  # fmt: skip
def test_the_large_lists_are_for_staff_with_the_permission_alone(client: Client, alice: User, model: str) -> None:
    url = f"/admin/{model}/"
    assert client.get(url).status_code == 302  # nobody signed in: to the admin's login
    client.force_login(alice)  # an owner, not staff
    assert "/admin/login/" in client.get(url)["Location"]
    client.force_login(UserFactory.create(username="helpdesk", is_staff=True))  # staff without the permission
    assert client.get(url).status_code == 403


def test_readings_are_searched_by_owner_exactly_and_filtered_by_the_definitions_slugs(
    admin_client: Client, alice: User, bob: User
) -> None:
    for owner, slugs in ((alice, ("weight", "steps")), (bob, ("weight",))):
        access = access_for_user(user=owner)
        for slug in slugs:
            observation_record(access, slug=slug, value=70.0, occurred_at=timezone.now(), note="after the run")
    cl, _ = listed(admin_client, "/admin/metrics/observation/")
    choices = {spec.title: [choice["display"] for choice in spec.choices(cl)] for spec in cl.filter_specs}
    assert choices["metric"] == ["All", "steps", "weight"]
    cl, _ = listed(admin_client, "/admin/metrics/observation/?definition__slug=weight")
    assert sorted(row.owner.username for row in cl.result_list) == ["alice", "bob"]
    cl, sql = listed(admin_client, "/admin/metrics/observation/?q=bob")
    assert [row.owner.username for row in cl.result_list] == ["bob"]
    assert not [statement for statement in sql if "LIKE" in statement]  # no substring read of every reading
    for fragment in ("weight", "after the run"):  # a slug (the filter's) or a note: no substring read of each reading
        cl, _ = listed(admin_client, f"/admin/metrics/observation/?q={fragment}")
        assert list(cl.result_list) == []
    response = admin_client.get("/admin/metrics/observation/?definition__slug=height")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")


def test_receipts_filter_by_the_error_codes_a_receipt_can_hold(admin_client: Client, alice: User) -> None:
    source = Source.objects.create(owner=alice, partition=alice.partitions.get(), kind="note", external_id="n1",
                                   occurred_at=timezone.now())  # fmt: skip
    for code in ("CONVERSION_FAILED", "", "PROCESSING_INTERRUPTED"):
        Operation.objects.create(owner=alice, partition=source.partition, source=source, source_version=1,
                                 status="failed" if code else "completed", error_code=code)  # fmt: skip
    cl, sql = listed(admin_client, "/admin/memory/operation/")
    assert not [statement for statement in sql if "DISTINCT" in statement]
    offered = [
        choice["display"] for spec in cl.filter_specs if spec.title == "error code" for choice in spec.choices(cl)
    ]
    assert offered == ["All", "CONFLICT", "CONVERSION_FAILED", "INTERNAL_ERROR", "PROCESSING_INTERRUPTED"]
    cl, _ = listed(admin_client, "/admin/memory/operation/?error_code=CONVERSION_FAILED")
    assert [row.error_code for row in cl.result_list] == ["CONVERSION_FAILED"]
    response = admin_client.get("/admin/memory/operation/?error_code=conversion_failed")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")


def test_every_error_code_the_pipeline_writes_is_offered() -> None:
    """The codes the runner finishes a receipt with and those a step fails with, read from the code: each is one
    the receipts' filter offers (and a step cannot fail with another: StepFailed refuses it)."""
    written = set()
    for source in Path(runner.__file__).parent.glob("*.py"):
        text = source.read_text()
        written |= set(re.findall(r'StepFailed\(\s*"([A-Z_]+)"', text))
        written |= set(re.findall(r'OperationStatus\.FAILED,\s*"([A-Z_]+)"', text))
    assert {"CONFLICT", "CONVERSION_FAILED", "INTERNAL_ERROR", "PROCESSING_INTERRUPTED"} <= written
    assert written <= set(RECEIPT_ERROR_CODES)
    with pytest.raises(ValueError, match="not a receipt's error code"):
        StepFailed("NOT_FOUND", "a code no receipt holds")


def test_chunks_filter_by_the_models_their_vectors_were_made_by_walking_the_index(
    admin_client: Client, alice: User
) -> None:
    bob = UserFactory.create(username="bob")
    made = [(alice, "minilm-a"), (alice, "minilm-a"), (alice, ""), (alice, "other-b"), (bob, "minilm-a"), (bob, "zz")]
    for ordinal, (owner, model) in enumerate(made):
        source = Source.objects.create(owner=owner, partition=owner.partitions.get(), kind="note",
                                       external_id=f"n{ordinal}", occurred_at=timezone.now())  # fmt: skip
        Chunk.objects.create(owner=owner, partition=source.partition, source=source, ordinal=0, text="words",
                             char_start=0, char_end=5, scope=source.scope, occurred_at=source.occurred_at,
                             embedding_model=model)  # fmt: skip
    cl, sql = listed(admin_client, "/admin/memory/chunk/")
    assert not [statement for statement in sql if "DISTINCT" in statement]  # no chunk read for its model
    offered = [
        choice["display"] for spec in cl.filter_specs if spec.title == "embedding model" for choice in spec.choices(cl)
    ]
    assert offered == ["All", "minilm-a", "other-b", "zz", "not embedded yet"]  # every owner's, none twice
    cl, _ = listed(admin_client, "/admin/memory/chunk/?embedding_model=minilm-a")
    assert sorted(row.owner.username for row in cl.result_list) == ["alice", "alice", "bob"]
    cl, _ = listed(admin_client, "/admin/memory/chunk/?embedding_model=(blank)")
    assert [(row.owner.username, row.embedding_model) for row in cl.result_list] == [("alice", "")]
    Chunk.objects.filter(embedding_model="").update(embedding_model="zz")
    cl, _ = listed(admin_client, "/admin/memory/chunk/")
    offered = [
        choice["display"] for spec in cl.filter_specs if spec.title == "embedding model" for choice in spec.choices(cl)
    ]
    assert offered == ["All", "minilm-a", "other-b", "zz"]  # no chunk waits for its vector
    for refused in ("(blank)", "nonsense", "MINILM-A"):  # not offered now: the admin's own invalid-filter answer
        response = admin_client.get(f"/admin/memory/chunk/?embedding_model={refused}")
        assert response.status_code == 302 and response["Location"].endswith("?e=1"), refused
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the plan a large table gets, on the test's small one
        cursor.execute("EXPLAIN " + CHUNK_MODELS_IN_USE)
        plan = "\n".join(row for (row,) in cursor.fetchall())
    assert plan.count("Index Only Scan using chunk_owner_model") == 2 and "Seq Scan" not in plan
