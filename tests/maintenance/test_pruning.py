"""Stale-node pruning over REST (seeds/000): the score's terms as stored data makes them, every never-prune
rule, preview equals apply, changed nodes skipped, paging, personas and bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from commitments.services import status_set, task_create
from maintenance import pruning
from maintenance.pruning import Thresholds, assess, prune_stale_preview, qualifying
from memory.access import Actor, access_for_user
from memory.errors import ValidationFailed
from memory.models import Claim, Evidence, MemoryEvent, Node, Partition, Source, User
from memory.pipeline.runner import run_operation
from memory.services.graph import self_node
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory

pytestmark = pytest.mark.django_db
PATH = "/maintenance/prune-stale-nodes"


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


def personal(user: User) -> Partition:
    return Partition.objects.get(owner=user, key="memory:personal")


def stale(user: User, label: str, *, days: int = 400, type: str = "Person", **fields: Any) -> Node:
    """A node last seen `days` ago."""
    node = NodeFactory.create(owner=user, label=label, type=type, **fields)
    Node.objects.filter(pk=node.pk).update(last_seen_at=timezone.now() - timedelta(days=days))
    node.refresh_from_db()
    return node


def claim(user: User, subject: Node, **fields: Any) -> Claim:
    return ClaimFactory.create(owner=user, partition=subject.partition, subject=subject, **fields)


def preview(api: Api, persona: Persona, **body: Any) -> dict[str, Any]:
    return ok(api.post(PATH, persona, body))


def every_candidate(api: Api, persona: Persona, **body: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = preview(api, persona, **body, **({"cursor": cursor} if cursor else {}))
        ids += page["nodeIds"]
        cursor = page["nextCursor"]
        assert page["hasMore"] is (cursor is not None)
        if cursor is None:
            return ids


def test_a_stale_node_from_old_chats_is_listed_with_its_reason_and_deleted_on_apply(
    api: Api, owner: Persona, alice: User
) -> None:
    """Through the real pipeline: a person mentioned only in a chat 14 months ago is stale; one mentioned
    today is not (last seen is when they were mentioned, not when the chat was processed)."""
    old = (timezone.now() - timedelta(days=430)).replace(microsecond=0)
    for conversation, when, text in [
        ("old-chat", old, "I met Jorge at the conference in Berlin."),
        ("new-chat", timezone.now().replace(microsecond=0), "I met Lena at the conference in Porto."),
    ]:
        message = {"id": f"{conversation}-m1", "role": "user", "content": text, "timestamp": when.isoformat()}
        response = api.post(
            "/ingest/conversation", owner, {"conversation": {"id": conversation, "messages": [message]}}
        )
        assert response.status_code == 202, response.content
        run_operation(response.json()["operationId"])
    jorge = Node.objects.get(owner=alice, label="Jorge")
    assert jorge.last_seen_at == old

    found = preview(api, owner)
    assert found["dryRun"] is True and found["minScore"] == 0.65 and found["candidateCount"] == 1
    (item,) = found["nodes"]
    assert (item["nodeId"], item["type"], item["label"]) == (jorge.pk, "Person", "Jorge")
    assert item["reason"] == "not seen for 14 months; linked to nothing; no claims"
    assert item["terms"] == {"staleness": 1.0, "isolation": 1.0, "weakProvenance": 1.0, "claimDecay": 1.0}
    assert item["score"] == 1.0 and item["idleDays"] == 430

    applied = ok(api.post(PATH, owner, {"dryRun": False, "nodeIds": found["nodeIds"]}))
    assert (applied["deleted"], applied["skipped"], applied["deletedCount"]) == ([jorge.pk], [], 1)
    assert not Node.objects.filter(pk=jorge.pk).exists()
    assert Node.objects.filter(owner=alice, label="Lena").exists()
    event = MemoryEvent.objects.get(action="node.prune", target_id=jorge.pk)
    assert event.after == {"claims": 0, "rule": "stale", "score": 1.0, "minScore": 0.65}


def test_each_term_is_read_off_the_nodes_claims(api: Api, owner: Persona, alice: User) -> None:
    marcel = stale(alice, "Marcel")
    falcon = stale(alice, "Falcon", type="Project")
    # One current inferred claim linking Marcel to Falcon; two outdated ones; one in review (left out).
    claim(alice, marcel, object_node=falcon, origin="assistant_inferred", statement="Marcel works on Falcon.")
    claim(alice, marcel, origin="user_stated", status="superseded", statement="Marcel lives in Gent.")
    claim(alice, marcel, origin="assistant_inferred", status="retracted", statement="Marcel likes golf.")
    claim(alice, marcel, origin="assistant_inferred", status="suggested", statement="Marcel likes tennis.")
    item = next(node for node in preview(api, owner, minScore=0)["nodes"] if node["nodeId"] == marcel.pk)
    assert item["terms"] == {"staleness": 1.0, "isolation": 0.5, "weakProvenance": 1.0, "claimDecay": 0.6667}
    assert item["score"] == round(0.40 + 0.125 + 0.20 + 0.15 * 2 / 3, 4)
    assert item["reason"] == (
        "not seen for 13 months; linked to 1 node; 1 of 1 current claims inferred; 2 of 3 claims no longer current"
    )
    # A trusted claim read recently makes it fresh and well-sourced; a past expires_at makes a claim past.
    claim(alice, marcel, origin="user_stated", statement="Marcel is my cousin.",
          last_accessed_at=timezone.now() - timedelta(days=73))  # fmt: skip
    claim(alice, marcel, origin="user_stated", statement="Lunch with Marcel.",
          expires_at=timezone.now() - timedelta(days=100))  # fmt: skip
    item = next(node for node in preview(api, owner, minScore=0, minIdleDays=0)["nodes"] if node["nodeId"] == marcel.pk)
    assert item["terms"] == {"staleness": 0.2, "isolation": 0.5, "weakProvenance": 0.5, "claimDecay": 0.6}
    assert item["idleDays"] == 73


def test_evidence_counts_as_a_sign_of_life(api: Api, owner: Persona, alice: User) -> None:
    anna = stale(alice, "Anna", days=500)
    said = claim(alice, anna, origin="user_stated", statement="Anna moved to Leiden.")
    source = Source.objects.create(owner=alice, partition=personal(alice), kind="note", external_id="n1",
                                   content="Anna moved to Leiden.", occurred_at=timezone.now())  # fmt: skip
    Evidence.objects.create(owner=alice, claim=said, source=source, excerpt="Anna moved to Leiden.",
                            authored_at=timezone.now() - timedelta(days=10))  # fmt: skip
    assert preview(api, owner, minScore=0, minIdleDays=0)["nodes"][0]["idleDays"] == 10
    assert preview(api, owner, minScore=0)["candidateCount"] == 0  # seen within 30 days


def protected_nodes(alice: User) -> dict[str, Node]:
    """One node per never-prune rule, each stale and isolated enough to be pruned otherwise."""
    me = self_node(alice, personal(alice))
    Node.objects.filter(pk=me.pk).update(last_seen_at=timezone.now() - timedelta(days=900))
    recent = stale(alice, "Seen last week", days=7)
    task, _ = task_create(owner=alice, partition=personal(alice), label="Fix the gate", actor=Actor.system())
    Node.objects.filter(pk=task.pk).update(last_seen_at=timezone.now() - timedelta(days=400))
    owner_of_task = stale(alice, "Pieter")
    ClaimFactory.create(owner=alice, subject=task, predicate="OWNED_BY", object_node=owner_of_task,
                        origin="assistant_inferred", statement="Pieter owns Fix the gate.")  # fmt: skip
    Claim.objects.filter(subject=task).update(recorded_at=timezone.now() - timedelta(days=400))
    pinned = stale(alice, "Grandma")
    claim(alice, pinned, pinned=True, origin="assistant_inferred", status="superseded", statement="Grandma is 90.")
    reference = stale(alice, "RFC 9110", type="Document", scope="reference")
    target = stale(alice, "Bram")
    merged = stale(alice, "Bram B.", merged_into=target)
    return {"self": me, "recent": recent, "openTask": task, "taskOwner": owner_of_task, "pinned": pinned,
            "reference": reference, "merged": merged, "prunable": target}  # fmt: skip


def test_never_pruned_nodes_stay_out_of_the_preview_and_apply_skips_them_with_why(
    api: Api, owner: Persona, alice: User
) -> None:
    nodes = protected_nodes(alice)
    assert every_candidate(api, owner, minScore=0) == [nodes["prunable"].pk]
    with_reference = every_candidate(api, owner, minScore=0, includeReference=True)
    assert sorted(with_reference) == sorted([nodes["prunable"].pk, nodes["reference"].pk])

    names = [name for name in nodes if name != "prunable"]
    applied = ok(api.post(PATH, owner, {"dryRun": False, "minScore": 0, "nodeIds": [nodes[n].pk for n in names]}))
    assert [name for name in names if nodes[name].pk in applied["deleted"]] == []
    reasons = {item["nodeId"]: item["reason"] for item in applied["skipped"]}
    assert {name: reasons[nodes[name].pk] for name in names} == {
        "self": "the self node",
        "recent": "seen within 30 days",
        "openTask": "an open task",
        "taskOwner": "linked to an open task",
        "pinned": "has a pinned claim",
        "reference": "reference material (includeReference is false)",
        "merged": "merged into another node (kept as a pointer)",
    }
    assert Node.objects.filter(pk__in=[node.pk for node in nodes.values()]).count() == len(nodes)

    # A finished task is no longer protected, and neither is the person it was owned by.
    status_set(nodes["openTask"], "completed", actor=Actor.system(), origin="user_stated")
    Claim.objects.filter(subject=nodes["openTask"]).update(recorded_at=timezone.now() - timedelta(days=400))
    assert nodes["taskOwner"].pk in every_candidate(api, owner, minScore=0, minIdleDays=0)


def test_apply_deletes_exactly_the_previewed_set(api: Api, owner: Persona, alice: User) -> None:
    keep = [stale(alice, f"Fresh {n}", days=5) for n in range(2)]
    doomed = [stale(alice, f"Old {n}") for n in range(6)]
    linked = stale(alice, "Linked", days=200)  # linked and trusted: below the medium floor
    claim(alice, linked, object_node=keep[0], origin="user_stated", statement="Linked knows Fresh 0.")
    previewed = every_candidate(api, owner, limit=4)
    assert sorted(previewed) == sorted(node.pk for node in doomed)
    claims_before = Claim.objects.count()
    applied = ok(api.post(PATH, owner, {"dryRun": False, "nodeIds": previewed}))
    assert sorted(applied["deleted"]) == sorted(previewed) and applied["skipped"] == []
    assert set(Node.objects.filter(owner=alice).values_list("pk", flat=True)) == {n.pk for n in [*keep, linked]}
    assert Claim.objects.count() == claims_before
    assert MemoryEvent.objects.filter(action="node.prune").count() == len(previewed)


def test_nodes_that_changed_since_the_preview_are_skipped_and_reported(
    api: Api, owner: Persona, other: Persona, alice: User, bob: User
) -> None:
    seen_again, pinned, gone, untouched = (stale(alice, label) for label in ("Seen again", "Pinned", "Gone", "Same"))
    bobs = stale(bob, "Bob's old friend")
    previewed = preview(api, owner)["nodeIds"]
    assert sorted(previewed) == sorted(node.pk for node in (seen_again, pinned, gone, untouched))
    Node.objects.filter(pk=seen_again.pk).update(last_seen_at=timezone.now())
    claim(alice, pinned, pinned=True, statement="Pinned matters.")
    Node.objects.filter(pk=gone.pk).delete()
    body = {"dryRun": False, "nodeIds": [*previewed, bobs.pk, "node_nonexistent"]}
    applied = ok(api.post(PATH, owner, body))
    assert applied["deleted"] == [untouched.pk]
    assert {item["nodeId"]: item["reason"] for item in applied["skipped"]} == {
        seen_again.pk: "seen within 30 days",
        pinned.pk: "has a pinned claim",
        gone.pk: "not found (deleted or out of reach)",
        bobs.pk: "not found (deleted or out of reach)",
        "node_nonexistent": "not found (deleted or out of reach)",
    }
    assert Node.objects.filter(pk__in=[seen_again.pk, pinned.pk, bobs.pk]).count() == 3
    # A stricter floor at apply time skips what no longer reaches it.
    later = stale(alice, "Later")
    claim(alice, later, object_node=pinned, origin="user_stated", statement="Later knows Pinned.")
    applied = ok(api.post(PATH, owner, {"dryRun": False, "nodeIds": [later.pk], "aggressiveness": "low"}))
    assert applied["skipped"] == [{"nodeId": later.pk, "reason": "score 0.525 is below 0.775"}]


def test_paging_covers_every_candidate_once(api: Api, owner: Persona, alice: User) -> None:
    nodes = [stale(alice, f"Old {n}", days=100 + 40 * n) for n in range(7)]
    pages = []
    cursor = None
    while True:
        page = preview(api, owner, minScore=0.5, limit=3, **({"cursor": cursor} if cursor else {}))
        pages.append(page)
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert [len(page["nodes"]) for page in pages] == [3, 3, 1]
    assert [page["hasMore"] for page in pages] == [True, True, False]
    assert {page["candidateCount"] for page in pages} == {7}
    assert {page["asOf"] for page in pages} == {pages[0]["asOf"]}  # every page scores at the same moment
    listed = [item for page in pages for item in page["nodes"]]
    assert sorted(item["nodeId"] for item in listed) == sorted(node.pk for node in nodes)
    assert [item["score"] for item in listed] == sorted((item["score"] for item in listed), reverse=True)


def test_a_token_limited_to_one_partition_prunes_only_there(api: Api, alice: User) -> None:
    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    mine = stale(alice, "Personal old friend")
    theirs = stale(alice, "Apollo old contact", partition=apollo)
    limited = issue(alice, "apollo", scopes=["read", "maintenance"], partition_keys=["project:apollo"],
                    default_partition_key="project:apollo")  # fmt: skip
    assert preview(api, limited)["nodeIds"] == [theirs.pk]
    applied = ok(api.post(PATH, limited, {"dryRun": False, "nodeIds": [mine.pk, theirs.pk]}))
    assert applied["deleted"] == [theirs.pk]
    assert applied["skipped"] == [{"nodeId": mine.pk, "reason": "not found (deleted or out of reach)"}]
    assert Node.objects.filter(pk=mine.pk).exists()


def test_personas(api: Api, owner: Persona, other: Persona, outsider: Persona, revoked: Persona, alice: User) -> None:
    old = stale(alice, "Old friend")
    assert preview(api, other)["candidateCount"] == 0
    assert preview(api, other, userId="bob")["nodes"] == []
    response = api.post(PATH, other, {"userId": "alice"})
    assert (response.status_code, error_code(response)) == (404, "NOT_FOUND")
    for persona, code in [(None, "AUTH_REQUIRED"), (outsider, "TOKEN_INVALID"), (revoked, "TOKEN_REVOKED")]:
        response = api.post(PATH, persona, {"dryRun": False, "nodeIds": [old.pk]})
        assert (response.status_code, error_code(response)) == (401, code)
    reader = issue(alice, "reader", scopes=["read"])
    assert preview(api, reader)["nodeIds"] == [old.pk]
    response = api.post(PATH, reader, {"dryRun": False, "nodeIds": [old.pk]})
    assert (response.status_code, error_code(response)) == (403, "SCOPE_REQUIRED")
    assert response.json()["error"]["details"] == {"requiredScope": "maintenance"}
    editor = issue(alice, "editor", scopes=["read", "write", "edit"])
    assert api.post(PATH, editor, {"dryRun": False, "nodeIds": [old.pk]}).status_code == 403
    assert Node.objects.filter(pk=old.pk).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"aggressiveness": "extreme"}, "aggressiveness"),
        ({"aggressiveness": 1.5}, "aggressiveness"),
        ({"aggressiveness": True}, "aggressiveness"),
        ({"minScore": 2}, "minScore"),
        ({"minIdleDays": -1}, "minIdleDays"),
        ({"minIdleDays": 36501}, "minIdleDays"),
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "WzEsIDJd"}, "cursor"),  # [1, 2]: valid base64 JSON of the wrong shape
        ({"dryRun": False}, "nodeIds"),
        ({"dryRun": False, "nodeIds": []}, "nodeIds"),
        ({"nodeIds": ["node_x"]}, "nodeIds"),
        ({"dryRun": False, "nodeIds": ["n"] * 501}, "nodeIds"),
        ({"dryRun": False, "nodeIds": "node_x"}, "nodeIds"),
        ({"includeReference": "sometimes"}, "includeReference"),
    ],
)
def test_bad_input_is_a_validation_error_naming_the_field(
    api: Api, owner: Persona, alice: User, body: dict[str, Any], field: str
) -> None:
    old = stale(alice, "Old friend")
    response = api.post(PATH, owner, body)
    assert (response.status_code, error_code(response)) == (400, "VALIDATION_ERROR"), response.content
    assert field in response.json()["error"]["details"]
    assert Node.objects.filter(pk=old.pk).exists()


def test_numbers_and_names_of_aggressiveness_set_the_same_floor(api: Api, owner: Persona) -> None:
    assert preview(api, owner, aggressiveness="high")["minScore"] == 0.525
    assert preview(api, owner, aggressiveness=0.75)["minScore"] == 0.525
    assert preview(api, owner, aggressiveness="low", minScore=0.3)["minScore"] == 0.3


def test_a_second_stale_chat_keeps_last_seen_moving_forward_only(api: Api, owner: Persona, alice: User) -> None:
    """Processing an older chat after a newer one does not make a person look less recently seen."""
    for conversation, when in [
        ("newer", datetime(2026, 6, 1, tzinfo=UTC)),
        ("older", datetime(2025, 1, 1, tzinfo=UTC)),
    ]:
        message = {"id": f"{conversation}-1", "role": "user", "content": "I met Jorge at the market.",
                   "timestamp": when.isoformat()}  # fmt: skip
        response = api.post(
            "/ingest/conversation", owner, {"conversation": {"id": conversation, "messages": [message]}}
        )
        run_operation(response.json()["operationId"])
    assert Node.objects.get(owner=alice, label="Jorge").last_seen_at == datetime(2026, 6, 1, tzinfo=UTC)


def test_a_nodes_claims_are_counted_once_whichever_end_it_is(alice: User) -> None:
    """The counts are PostgreSQL's, per end of each claim: a claim about a node and pointing at it counts once,
    a link made twice is one linked node, a claim pointing at the node counts as its own (with or without a
    subject), an expired or retracted claim is past whichever end the node is, a pinned claim protects the node it
    points at, and only a current link to an open task protects."""
    hub, ben, cleo, dora, eve, finn, gus = (
        stale(alice, name) for name in ("Hub", "Ben", "Cleo", "Dora", "Eve", "Finn", "Gus")
    )
    claim(alice, hub, object_node=hub, origin="assistant_inferred", statement="Hub is Hub.")
    claim(alice, hub, object_node=ben, origin="assistant_inferred", statement="Hub knows Ben.")
    claim(alice, hub, object_node=ben, origin="assistant_inferred", statement="Hub works with Ben.")
    claim(alice, cleo, object_node=hub, origin="user_stated", statement="Cleo knows Hub.")
    ClaimFactory.create(owner=alice, subject=None, object_node=hub, origin="assistant_inferred", statement="Met Hub.")
    claim(alice, hub, object_node=dora, origin="assistant_inferred", statement="Hub met Dora.",
          expires_at=timezone.now() - timedelta(days=1))  # fmt: skip
    claim(alice, dora, object_node=hub, origin="assistant_inferred", status="retracted", statement="Dora met Hub.")
    claim(alice, ben, origin="assistant_inferred", statement="Ben likes tea.", last_accessed_at=timezone.now())
    claim(alice, cleo, object_node=eve, pinned=True, status="superseded", statement="Cleo was Eve's coach.")
    task, _ = task_create(owner=alice, partition=personal(alice), label="Paint the shed", actor=Actor.system())
    claim(alice, task, predicate="OWNED_BY", object_node=gus, statement="Gus owns Paint the shed.")
    claim(alice, task, predicate="SENT_TO", object_node=finn, statement="Paint the shed went to Finn.",
          expires_at=timezone.now() - timedelta(days=1))  # fmt: skip
    assessed = {item.node.pk: item for item in assess(access_for_user(user=alice), now=timezone.now(),
                                                      thresholds=Thresholds(min_score=0))}  # fmt: skip
    hub_facts, ben_facts, dora_facts = (assessed[node.pk].facts for node in (hub, ben, dora))
    assert (hub_facts.current_claims, hub_facts.current_trusted, hub_facts.past_claims) == (5, 1, 2)
    assert hub_facts.linked_nodes == 2  # Ben and Cleo: not itself, not Dora (no current claim), not the subjectless
    assert (ben_facts.current_claims, ben_facts.linked_nodes, int(ben_facts.idle_days)) == (3, 1, 0)
    assert (dora_facts.current_claims, dora_facts.past_claims, dora_facts.linked_nodes) == (0, 2, 0)
    assert {node.label: assessed[node.pk].protected for node in (eve, gus, finn)} == {
        "Eve": "has a pinned claim", "Gus": "linked to an open task", "Finn": "",
    }  # fmt: skip


def test_the_preview_costs_the_same_queries_for_ten_nodes_as_for_two(alice: User) -> None:
    access = access_for_user(user=alice)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            prune_stale_preview(access=access, thresholds=Thresholds(min_score=0.5))
        return len(captured)

    def grow(count: int) -> None:
        for n in range(count):
            node = stale(alice, f"Grown {Node.objects.count()} {n}")
            said = claim(alice, node, origin="assistant_inferred", statement=f"Fact {node.pk}.")
            source = Source.objects.create(owner=alice, partition=node.partition, kind="note", external_id=node.pk,
                                           content="x", occurred_at=timezone.now())  # fmt: skip
            Evidence.objects.create(owner=alice, claim=said, source=source, excerpt="x")

    grow(2)
    few = queries()
    grow(8)
    assert queries() == few


def said_on(user: User, node: Node, days_ago: int) -> Claim:
    """A claim about `node` whose evidence was authored `days_ago`."""
    said = claim(user, node, origin="assistant_inferred", statement=f"{node.label} said something.")
    source = Source.objects.create(owner=user, partition=node.partition, kind="note", external_id=node.pk,
                                   content="x", occurred_at=timezone.now())  # fmt: skip
    Evidence.objects.create(owner=user, claim=said, source=source, excerpt="x",
                            authored_at=timezone.now() - timedelta(days=days_ago))  # fmt: skip
    return said


def asked_of(monkeypatch: pytest.MonkeyPatch, step: str) -> list[set[str]]:
    """The labels of the nodes each later call of pruning's `step` (`_tallies`, `_newest_evidence`) reads."""
    calls: list[set[str]] = []
    original = getattr(pruning, step)

    def recorded(access: Any, nodes: Any, *rest: Any) -> Any:
        calls.append(set(Node.objects.filter(nodes).values_list("label", flat=True)))
        return original(access, nodes, *rest)

    monkeypatch.setattr(pruning, step, recorded)
    return calls


def candidates(access: Any, thresholds: Thresholds) -> list[str]:
    """The preview's candidates, checked against those of every node assessed in full."""
    found = [item.node.pk for item in qualifying(access, now=timezone.now(), thresholds=thresholds)]
    every = assess(access, now=timezone.now(), thresholds=thresholds)
    assert found == [item.node.pk for item in every if item.qualifies(thresholds)]
    return found


def test_the_preview_reads_evidence_only_for_nodes_it_could_make_qualify(
    alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evidence only makes a node that has a sign of life fresher: one a pinned claim protects is not a candidate
    whatever its evidence says, and the preview does not read it. A node never seen is idle since it was made, unless
    its evidence is older: read. Either list of ids may name them (the shorter): both are taken here."""
    access, thresholds = access_for_user(user=alice), Thresholds(min_score=0.5)

    def pinned(label: str) -> Node:
        node = stale(alice, label, days=400)
        said_on(alice, node, 400)
        claim(alice, node, pinned=True, origin="assistant_inferred", statement=f"{label} is kept.")
        return node

    pinned("Pinned")
    read = asked_of(monkeypatch, "_newest_evidence")
    assert candidates(access, thresholds) == [] and read == [{"Pinned"}]  # the full assessment's only
    never_seen = NodeFactory.create(owner=alice, label="Never seen")  # made now, no sighting
    said_on(alice, never_seen, 400)
    said_on(alice, stale(alice, "Said lately", days=400), 5)
    for _more_pinned in (0, 2):  # the undecided named by leaving one out, then by their own two ids
        for n in range(_more_pinned):
            pinned(f"Pinned {n}")
        read.clear()
        assert candidates(access, thresholds) == [never_seen.pk]
        assert read[0] == {"Never seen", "Said lately"}  # the preview's; then the full assessment's, of every node


def test_the_preview_tallies_no_node_seen_too_lately_to_qualify(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    """At medium (0.65) a node alone, with nothing current, reaches the floor once idle about 45.6 days: one seen 46
    days ago is a candidate and tallied; one seen 45 days ago is not tallied, nor one seen yesterday with old
    evidence. Likewise where the idle days decide (46)."""
    access = access_for_user(user=alice)
    stale(alice, "Seen 45 days ago", days=45)
    later = stale(alice, "Seen 46 days ago", days=46)
    said_on(alice, stale(alice, "Seen yesterday", days=1), 400)
    tallied = asked_of(monkeypatch, "_tallies")
    for thresholds in (Thresholds(min_score=0.65), Thresholds(min_score=0.5, min_idle_days=46)):
        tallied.clear()
        assert candidates(access, thresholds) == [later.pk]
        assert tallied[0] == {"Seen 46 days ago"}  # the preview's; then the full assessment's, of every node


def test_the_service_refuses_idle_days_past_its_bound_whoever_calls_it(alice: User) -> None:
    """The preview computes the moment before which a candidate is idle: past a hundred years it would overflow, so the
    service refuses it itself, as its surfaces (REST, MCP, the form, the command) refuse it first."""
    for days in (-1, 800_000):
        with pytest.raises(ValidationFailed) as refused:
            prune_stale_preview(access=access_for_user(user=alice), thresholds=Thresholds(0.5, min_idle_days=days))
        assert refused.value.details == {"minIdleDays": ["From 0 to 36500."]}
