"""Search latency at 10,000 and 100,000 claims: in-process (the search service) and over HTTP (/query/search).

    .venv/bin/python bench/search_latency.py [--sizes 10000 100000] [--reuse] [--queries 200] [--rounds 3]
        [--real N] [--variants NAME ...]

Each size lives in a data directory of its own (MEMORY_DATA_DIR, default var/bench-search, then claims-<N>),
so one size never shares tables or indexes with another. Its one user has one partition holding N generated
claims: varied statements about a few hundred people and projects, each with a subject node (Person, Project or
the Self node, each last seen when its newest claim was said, as the pipeline sets it), a kind, an importance,
stated_at spread over two years, one evidence row pointing at a conversation source, and a real MiniLM vector
(with --real N, only the first N statements' vectors are real and the rest generated near them:
bench/store_vectors.py; `make bench` passes --real 10000). The chunk table stays empty: claims are what is
measured. Vectors are cached in the base directory (vectors.npy), so a larger size
embeds only the statements it adds. Without --reuse a size's memory tables are emptied and built again (COPY with
the two search indexes dropped, then rebuilt, then one VACUUM ANALYZE), and each phase's seconds printed.

Then ~200 queries (exact words, paraphrased questions, names) are timed for several rounds after a warm-up:
search() in-process with both legs, keyword only, vector only, both legs excluding Project nodes and both legs
with the word statistics not cached (--variants picks some), then POST /query/search against a real uvicorn on a
free loopback port. Also printed: where the time of a hybrid search goes, per leg, and EXPLAIN (ANALYZE,
BUFFERS) of the claim legs, exactly as search() sent them. Ends with a Markdown table for docs/benchmarks.md.
Percentiles are per round; the table gives the median over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import headline  # noqa: E402
from bench.store_vectors import vectors_for  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

SEED = 20_250_301  # fixed: every run and every size generates the same statements and queries
USERNAME = "bench-search"
# Dropped for the load, then rebuilt: the search's indexes (dear to keep during a COPY), and the lists' b-trees (built
# once after it, they are as compact as a memory that grew in time order makes them).
BULK_INDEXES = (
    "claim_embedding_minilm_hnsw", "claim_search_vector", "claim_owner_recent", "claim_owner_changed",
    "claim_kind_origin",
)  # fmt: skip
CONVERSATION_CLAIMS = 40  # claims drawn from one conversation source
WARM_UP = 20
# The keyword leg caches the number of rows in reach (N) and each word's row count (memory.recall.word_statistics);
# on a large memory a count of rows held is kept a day and marked fresh for ten minutes from its count. Every variant
# runs with them cached and fresh (the warm-up asks every query once; a run is shorter than ten minutes), except the
# cold ones: before each of their first COLD_QUERIES queries COLD drops them all (a reach's first search),
# NEW_WORDS every count but N's (words new to the reach, or not asked in a day), STALE the marks and what is kept a
# minute (every count of 0, the owner's rows): a search after ten minutes, which uses the counts it finds, counts its
# zeros again, and hands its words to a thread to count again once no search runs. The search's counts reach Redis
# from that thread: each forgetting waits for it first, so neither is timed (nor overlaps the next search, as it
# could on a server never idle).
STATS_KEYS = "recall:df:"
COLD = "hybrid, N and df not cached"
NEW_WORDS = "hybrid, df not cached"
STALE = "hybrid, N and df cached, over ten minutes old"
FORGOTTEN: dict[str, Callable[[bytes, bytes | None], bool]] = {  # which cached keys (and values) each drops
    COLD: lambda key, value: True,
    NEW_WORDS: lambda key, value: not key.endswith(b":"),  # N's counts and mark end so: the digest of "" is ""
    STALE: lambda key, value: b":df:fresh:" in key or value == b"0" or key.endswith(b":owner"),
}
COLD_QUERIES = 60


def _words(text: str) -> list[str]:
    return text.split()


_FIRST = _words(
    "Priya Tom Alice Bob Marta Yusuf Lena Kenji Sofia Omar Ines Raj Chloe Diego Hannah Mateo Aisha Lars "
    "Nora Felix Zara Ivan Elena Malik Julia Ravi Sara Pedro Mei Jonas Amara Luca Freya Hugo Leila Noah "
    "Ada Theo Yara Emil Rosa Kofi Vera Sam Anton Maya Kai Lotte Ben Greta"
)
_LAST = _words(
    "Shah Berg Novak Okafor Tanaka Silva Weber Haddad Kowalski Laurent Moreau Jansen Costa Ali Fischer "
    "Rossi Dubois Nakamura Pereira Larsen Ivanova Mensah Kaur Schmidt Garcia Olsen Petrov Chen Bakker "
    "Osei"
)
_NAMES = [f"{first} {last}" for first in _FIRST for last in _LAST]
PEOPLE = random.Random(SEED).sample(_NAMES, 300)  # noqa: S311 (reproducible test data, not secrets)
PROJECTS = _words(
    "Falcon Atlas Juniper Nimbus Orca Aurora Basalt Cobalt Delta Ember Fjord Granite Harbor Iris Jade "
    "Kestrel Lumen Magnolia Nova Onyx Pinecone Quartz Raven Sierra Tundra Umbra Vortex Willow Xenon "
    "Yarrow Zephyr Acorn Beacon Cedar Dune Echo Flint Glacier Helix Indigo Jasper Kite Lotus Meridian "
    "Nebula Oasis Prism Quill Ripple Saffron Tidal Unity Vega Wren Yonder Zenith Bramble Comet Drift "
    "Everest"
)

# (kind, subject slot, template): the subject slot names the claim's subject node ("self": the Self node).
_TEMPLATES = [
    ("fact", "person", "{person} moved to {city} {when}."),
    ("fact", "person", "{person} is allergic to {allergen}."),
    ("task_status", "self", "Remind me to {chore} {when}."),
    ("preference", "person", "{person} prefers {drink} over {other_drink}, except {when}."),
    ("decision", "project", "The {meeting} for {project} was moved to {when} because {reason}."),
    ("fact", "person", "{person} started learning {hobby} {when} and practises {count} times a week."),
    ("project_context", "project", "Project {project} ships in Q{quarter} if {condition}."),
    ("fact", "person", "{person} said the {event} costs about {amount} euros, {comparison} than we planned."),
    ("agreement", "person", "We agreed that {person} owns the {work} for {project} until {deadline}."),
    ("preference", "person", "{person} {feeling} {dislike}."),
    ("note", "person", "{person} asked for the {work} notes before the {meeting}."),
    ("fact", "person", "{person} will be in {city} for the {event} {when}; book a table near the station."),
    ("preference", "self", "I prefer {drink} in the morning and {other_drink} after {hour}."),
    ("rule", "self", "Never schedule a {meeting} before {hour} on {weekday}s."),
    ("incident", "project", "The {system} of {project} went down {when} after {cause}."),
    ("decision", "project", "We decided to use {tech} for the {work} in {project}."),
    ("fact", "person", "{person}'s birthday is on {month} {day}."),
    ("fact", "person", "{person} works at {company} as a {role}."),
    ("working_context", "project", "Currently debugging the {system} of {project}; the {tech} logs point at {cause}."),
    ("handoff", "project", "Handoff for {project}: {person} picks up the {work} {when}."),
    ("fact", "self", "My {relative} lives in {city} and visits {when}."),
    ("preference", "person", "{person} likes {cuisine} food, especially {dish}."),
    ("task_status", "project", "The {work} for {project} is {status}."),
    ("fact", "person", "{person} has {count} kids and a dog called {pet}."),
    ("note", "self", "Book {event} tickets for {person} before {month}."),
    ("fact", "person", "{person} recommended the book '{book}' {when}."),
    ("incident", "self", "I missed the {meeting} {when} because {reason}."),
    ("agreement", "project", "{company} agreed to pay {amount} euros for {project} by {deadline}."),
]
_SLOTS: dict[str, list[str]] = {
    "person": PEOPLE, "project": PROJECTS,
    "city": _words(
        "Berlin Lisbon Osaka Toronto Nairobi Montreal Porto Seoul Utrecht Ghent Krakow Lyon Bilbao Accra "
        "Lima Oslo Tallinn Bergen Kyoto Hanoi Austin Denver Dublin Leeds Malmo Turin Zagreb Vilnius Quito "
        "Perth"
    ),
    "when": ["yesterday", "last week", "on Monday", "every morning", "since 2019", "in March", "tonight",
             "next Friday", "after the holidays", "this weekend", "two weeks ago", "at the end of the month"],
    "allergen": ["peanuts", "cats", "penicillin", "pollen", "shellfish", "latex", "gluten", "bee stings"],
    "chore": ["call the dentist", "renew my passport", "water the plants", "pay rent", "back up the laptop",
              "cancel the gym", "file the taxes", "order printer ink", "book the car service"],
    "drink": ["tea", "coffee", "sparkling water", "oat milk", "green tea", "espresso"],
    "other_drink": ["juice", "beer", "soda", "red wine", "kombucha", "herbal tea"],
    "meeting": ["budget review", "design sync", "offsite", "launch review", "one-on-one", "standup", "retro"],
    "reason": ["the numbers are late", "half the team is away", "legal needs another pass", "the room is booked",
               "the train was cancelled", "the client rescheduled"],
    "hobby": ["Japanese", "the cello", "Rust", "pottery", "chess", "bouldering", "sailing", "watercolour"],
    "count": ["two", "three", "four", "five"],
    "quarter": ["1", "2", "3", "4"],
    "condition": ["the API freeze holds", "QA signs off", "the vendor delivers on time", "hiring goes to plan"],
    "event": ["wedding", "conference", "birthday party", "move", "school trip", "concert", "marathon"],
    "amount": [str(hundreds * 100) for hundreds in range(2, 90)],
    "comparison": ["more", "less"],
    "work": ["hiring plan", "roadmap", "database migration", "quarterly report", "security audit", "onboarding docs",
             "pricing page", "data export"],
    "deadline": ["the end of the quarter", "the reorg", "the board meeting", "the summer break", "the launch"],
    "feeling": ["hates", "loves", "cannot stand", "is fine with"],
    "dislike": ["early meetings", "spicy food", "long flights", "jazz", "open-plan offices", "video calls"],
    "hour": ["9am", "10am", "noon", "3pm", "6pm"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "system": ["billing service", "search index", "login flow", "nightly export", "mobile app", "payment webhook"],
    "cause": ["a bad deploy", "an expired certificate", "a full disk", "a schema change", "a DNS change"],
    "tech": ["PostgreSQL", "Redis", "Kafka", "Django", "React", "Terraform", "Celery", "SQLite"],
    "month": _words(
        "January February March April May June July August September October November December"
    ),
    "day": [str(day) for day in range(1, 29)],
    "company": ["Acme", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Wayne Foods", "Hooli"],
    "role": ["designer", "data engineer", "product manager", "nurse", "teacher", "accountant", "architect"],
    "relative": ["sister", "brother", "mother", "father", "aunt", "cousin", "grandmother"],
    "cuisine": ["Thai", "Italian", "Ethiopian", "Mexican", "Korean", "Lebanese"],
    "dish": ["dumplings", "risotto", "tacos", "curry", "falafel", "ramen", "paella"],
    "status": ["blocked on legal", "done", "in review", "waiting for budget", "half finished"],
    "pet": ["Biscuit", "Luna", "Pepper", "Mochi", "Rex", "Olive"],
    "book": ["Thinking in Systems", "The Mythical Man-Month", "Piranesi", "Educated", "Dune", "Deep Work"],
}  # fmt: skip
_QUESTIONS = [
    "where does {person} live now?", "what is {person} allergic to?", "when does project {project} ship?",
    "who is responsible for the {work} of {project}?", "what food does {person} like?", "what did we pick for "
    "{project}?", "why was the {meeting} postponed?", "what do I have to do {when}?", "what does {person} do for a "
    "living?", "when is {person}'s birthday?", "how much does the {event} cost?", "what went wrong with {project}?",
    "what does {person} like to drink?", "which book did {person} recommend?", "what is the status of the {work}?",
]  # fmt: skip
Statement = tuple[str, str, str, str]  # text, kind, subject type, subject label


def statements(count: int) -> list[Statement]:
    """The first `count` distinct statements of the fixed sequence: a larger count extends a smaller one."""
    rng = random.Random(SEED)  # noqa: S311 (reproducible test data, not secrets)
    seen: dict[str, Statement] = {}
    while len(seen) < count:
        kind, subject, template = rng.choice(_TEMPLATES)
        values = {slot: rng.choice(choices) for slot, choices in _SLOTS.items()}
        text = template.format(**values)
        label = {"person": values["person"], "project": values["project"], "self": "me"}[subject]
        seen.setdefault(text, (text, kind, {"person": "Person", "project": "Project"}.get(subject, "Self"), label))
    return list(seen.values())


def queries(count: int, pool: list[Statement]) -> list[str]:
    """A third each: words of a stored statement as written, a paraphrased question, a name."""
    rng = random.Random(SEED + 1)  # noqa: S311 (reproducible test data, not secrets)
    asked = []
    for index in range(count):
        if index % 3 == 0:
            words = [w.strip(".,;'") for w in rng.choice(pool)[0].split() if len(w.strip(".,;'")) > 3]
            start = rng.randrange(max(1, len(words) - 2))
            asked.append(" ".join(words[start : start + rng.choice((2, 3, 4))]))
        elif index % 3 == 1:
            asked.append(rng.choice(_QUESTIONS).format(**{slot: rng.choice(c) for slot, c in _SLOTS.items()}))
        else:
            asked.append(rng.choice([rng.choice(PEOPLE), f"project {rng.choice(PROJECTS)}", rng.choice(_FIRST)]))
    return asked


def build(size: int, base: Path, vectors: Any = None, real: int | None = None) -> dict[str, float]:
    """Empty this size's memory tables and load `size` claims with their nodes, sources and evidence. `vectors`:
    one per statement; by default real MiniLM vectors for the first `real` statements (all by default) and
    generated ones past them (bench/store_vectors.py). Returns the seconds of each phase."""
    from django.db import connection

    from bench.bulk_load import copy_insert
    from memory.embeddings import get_embedder
    from memory.ids import new_id
    from memory.models import Claim, Evidence, Node, Partition, Source, User
    from memory.recall.caching import drop_cached_views

    began = time.perf_counter()
    rows = statements(size)
    spent = {"statements": time.perf_counter() - began}
    if vectors is None:
        vectors = vectors_for([row[0] for row in rows], base, real or size, SEED + 3)
    spent["vectors"] = time.perf_counter() - began - spent["statements"]
    began = time.perf_counter()
    with connection.cursor() as cursor:
        # This data directory belongs to the benchmark alone.
        cursor.execute("TRUNCATE memory_evidence, memory_claim, memory_node, memory_source CASCADE")
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(BULK_INDEXES)])
        definitions = [row[0] for row in cursor.fetchall()]
        for name in BULK_INDEXES:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
    user, _ = User.objects.get_or_create(username=USERNAME, defaults={"first_name": "Bench"})
    partition = Partition.objects.get(owner=user, key="memory:personal")
    model_id = get_embedder().model_id
    labels = [("Person", name) for name in PEOPLE] + [("Project", name) for name in PROJECTS]
    cards = get_embedder().embed_documents([f"{kind}: {label}" for kind, label in labels])
    nodes = {("Self", "me"): Node(id=new_id("node"), owner=user, partition=partition, type="Self", label="me",
                                  is_self=True)}  # fmt: skip
    for (kind, label), vector in zip(labels, cards, strict=True):
        nodes[(kind, label)] = Node(id=new_id("node"), owner=user, partition=partition, type=kind, label=label,
                                    embedding=vector, embedding_model=model_id)  # fmt: skip
    Node.objects.bulk_create(nodes.values())
    rng = random.Random(SEED + 2)  # noqa: S311 (reproducible test data, not secrets)
    start = datetime.now(UTC) - timedelta(days=730)
    stated = [start + timedelta(days=730 * (index + rng.random()) / size) for index in range(size)]
    sources = [
        Source(id=new_id("src"), owner=user, partition=partition, kind="conversation", external_id=f"chat-{n}",
               title=f"Chat {n}", occurred_at=stated[n * CONVERSATION_CLAIMS])
        for n in range((size + CONVERSATION_CLAIMS - 1) // CONVERSATION_CLAIMS)
    ]  # fmt: skip
    Source.objects.bulk_create(sources, batch_size=2000)
    for offset in range(0, size, 5000):
        claims, evidence = [], []
        for index in range(offset, min(size, offset + 5000)):
            text, kind, subject_type, label = rows[index]
            roll = rng.random()
            claim = Claim(
                id=new_id("claim"), owner=user, partition=partition, statement=text, kind=kind,
                subject_id=nodes[(subject_type, label)].pk, stated_at=stated[index],
                recorded_at=stated[index] + timedelta(minutes=rng.randint(1, 90)),
                status="superseded" if roll < 0.04 else "retracted" if roll < 0.05 else "active",
                importance=rng.choices((1, 2, 3, 4, 5), weights=(5, 15, 55, 18, 7))[0], pinned=rng.random() < 0.005,
                origin="user_stated" if rng.random() < 0.7 else "assistant_inferred", extractor="bench@1",
                confidence=round(rng.uniform(0.6, 1.0), 2), embedding=vectors[index], embedding_model=model_id,
            )  # fmt: skip
            claims.append(claim)
            evidence.append(Evidence(owner=user, claim_id=claim.pk, source_id=sources[index // CONVERSATION_CLAIMS].pk,
                                     excerpt=text, message_id=f"m{index % CONVERSATION_CLAIMS}",
                                     authored_at=stated[index]))  # fmt: skip
        copy_insert(Claim, claims)  # COPY, not INSERT: the same rows (tests/bench/test_bulk_load.py), 100k in seconds
        copy_insert(Evidence, evidence)
        print(f"  inserted {offset + len(claims)}/{size} claims", end="\r", flush=True)
    # Each node last seen when its newest claim was said, as the pipeline sets it (a mention moves it forward).
    for index, (_text, _kind, subject_type, label) in enumerate(rows):
        node = nodes[(subject_type, label)]
        node.last_seen_at = max(node.last_seen_at or stated[index], stated[index])
    Node.objects.bulk_update(nodes.values(), ["last_seen_at"])
    spent["insert"] = time.perf_counter() - began
    drop_cached_views(user.pk)  # what searches of an earlier build kept (this store's Redis outlives a rebuild)
    with connection.cursor() as cursor:
        # The HNSW graph is built in memory (about 2 KB per 384-dimension vector); past it the build slows down.
        cursor.execute(f"SET maintenance_work_mem = '{max(1024, size // 400)}MB'")
        for definition in definitions:
            cursor.execute(definition)
        cursor.execute("RESET maintenance_work_mem")
        spent["indexes"] = time.perf_counter() - began - spent["insert"]
        cursor.execute("VACUUM ANALYZE memory_claim, memory_node, memory_source, memory_evidence")
        spent["VACUUM ANALYZE"] = time.perf_counter() - began - spent["insert"] - spent["indexes"]
    print(
        f"built {size} claims, {len(nodes)} nodes, {len(sources)} sources in {sum(spent.values()):.0f} s: "
        + ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in spent.items())
    )
    return spent


def percentiles(samples: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50": statistics.median(samples), "p95": cuts[94], "p99": cuts[98]}


def summary(rounds: list[list[float]]) -> dict[str, float]:
    """The median over rounds of each round's percentiles, and the spread of p95 across rounds."""
    each = [percentiles(samples) for samples in rounds]
    found = {key: statistics.median(p[key] for p in each) for key in ("p50", "p95", "p99")}
    return found | {"p95_min": min(p["p95"] for p in each), "p95_max": max(p["p95"] for p in each)}


VARIANTS: dict[str, dict[str, Any]] = {  # in-process search() variants: their SearchRequest options
    "hybrid": {},
    "keyword only": {"use_vector": False},
    "vector only": {"use_keyword": False},
    # A third of the claims are about Project nodes: the NOT EXISTS join to memory_node filters for real.
    "hybrid, excluding Project nodes": {"exclude_node_types": ("Project",)},
    COLD: {},
    NEW_WORDS: {},
    STALE: {},
}


# The keyword leg of the three corpora: one statement per candidate level (one in all, mostly), or none where the
# process holds a small reach's rows (memory.recall.held_vectors).
KEYWORD_STEP = "keyword, all corpora"
EMBEDDING_RUN = "embed query: the run (its own thread)"  # overlaps the request thread's steps


def in_process(access: Any, asked: list[str], rounds: int, names: list[str]) -> dict[str, list[list[float]]]:
    from memory.recall.search import SearchRequest, search
    from memory.recall.threads import drained
    from memory.recall.word_statistics import VOCABULARY

    variants = {name: options for name, options in VARIANTS.items() if name in names}
    for query in asked:
        search(access, SearchRequest(query=query))
    timings: dict[str, list[list[float]]] = defaultdict(list)
    for _ in range(rounds):
        for name, options in variants.items():  # interleaved, so a noisy minute hits every variant alike
            drained(VOCABULARY)
            cold = name in FORGOTTEN
            spent, kept = [], word_statistics_saved() if cold else {}
            for query in asked[:COLD_QUERIES] if cold else asked:
                if cold:
                    drained(VOCABULARY)
                    forget_word_statistics(FORGOTTEN[name])
                began = time.perf_counter()
                search(access, SearchRequest(query=query, **options))
                spent.append((time.perf_counter() - began) * 1000)
            drained(VOCABULARY)
            word_statistics_restored(kept)
            timings[name].append(spent)
    return timings


@contextmanager
def timed_parts(parts: dict[str, float]) -> Iterator[None]:
    """Adds the time of each step search() calls (embedding, each leg per corpus, hydration) to `parts`."""
    from unittest import mock

    from memory.recall import search as module

    def timed(target: Any, name: str, label: Callable[[tuple[Any, ...]], str]) -> Any:
        original = getattr(target, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                parts[label(args)] = parts.get(label(args), 0.0) + (time.perf_counter() - began) * 1000

        return mock.patch.object(target, name, wrapper)

    with (
        timed(module, "query_terms", lambda args: "query terms"),
        timed(module, "_query_run", lambda args: "embed query: tokens (the request's thread)"),
        timed(module, "_embedded", lambda args: EMBEDDING_RUN),
        timed(module, "keyword_hits_within", lambda args: KEYWORD_STEP),
        timed(module, "vector_hits_within", lambda args: "vector, all corpora (one statement)"),
        timed(module.held_vectors, "nearest_within", lambda args: "vector, held in process (a small reach)"),
        timed(module, "hydrated", lambda args: "hydrate"),
        timed(module.bookkeeping, "note_access", lambda args: "access bookkeeping (Redis)"),
    ):
        yield


def breakdown(access: Any, asked: list[str]) -> dict[str, dict[str, float]]:
    """Per step of a hybrid search: median and p95 over the queries, plus each query's keyword-claim time.
    Also the time spent waiting for SQL round trips across all steps (the rest is Python: ORM, fusion)."""
    from django.db import connection

    from memory.recall.search import SearchRequest, search

    per_step: dict[str, list[float]] = defaultdict(list)
    waited: list[float] = []

    def sql_timer(execute: Callable[..., Any], *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return execute(*args)
        finally:
            waited.append((time.perf_counter() - began) * 1000)

    for query in asked:
        parts: dict[str, float] = {}
        waited.clear()
        with timed_parts(parts), connection.execute_wrapper(sql_timer):
            began = time.perf_counter()
            search(access, SearchRequest(query=query))
            total = (time.perf_counter() - began) * 1000
        parts["rest (fusion, boosts)"] = total - sum(parts.values())
        parts["total"] = total
        parts["(of the total: waiting on SQL)"] = sum(waited)
        parts["(SQL statements)"] = len(waited)
        for step, spent in parts.items():
            per_step[step].append(spent)
    return {step: percentiles(spent) for step, spent in per_step.items()} | {
        "_keyword": dict(zip(asked, per_step[KEYWORD_STEP], strict=True))
    }


def explain(access: Any, query: str) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the statements that read claims, as search() sent them (captured with their
    values): each leg's statement scans the other corpora too."""
    from django.conf import settings
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from memory.recall.search import SearchRequest, search

    forget_word_statistics()  # so the statements that count N and df run (and are captured) too
    with CaptureQueriesContext(connection) as captured:
        search(access, SearchRequest(query=query))
    plans = {}
    for entry in captured.captured_queries:
        sql = entry["sql"]
        if "FROM memory_claim c" not in sql or ("<=>" not in sql and "search_vector @@" not in sql):
            continue
        if sql.startswith("EXPLAIN"):
            continue  # the planner's estimate of new words' rows (memory.recall.word_statistics): planned, not run
        leg = "vector" if "<=>" in sql else "keyword" if "ORDER BY score" in sql else "keyword statistics (N, df)"
        if sql.startswith("SELECT set_config("):
            sql = sql.split("; ", 1)[1]  # the vector legs come with their settings in one round trip (set below)
        with transaction.atomic(), connection.cursor() as cursor:  # the vector leg's settings, as legs.py sets them
            cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(settings.SEARCH_EF_SEARCH)])
            cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plans[leg] = "\n".join(row[0] for row in cursor.fetchall())
    return plans


def _redis() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL)


def _stats_keys_held(client: Any) -> list[bytes]:
    """Every key of the keyword leg's counts and marks in Redis (STATS_KEYS: the only user's)."""
    return list(client.scan_iter(match=f"*{STATS_KEYS}*", count=1000))


def forget_word_statistics(forgotten: Callable[[bytes, bytes | None], bool] = FORGOTTEN[COLD]) -> None:
    """Drop the keyword leg's cached N and df (those `forgotten` picks by key and value)."""
    client = _redis()
    keys = _stats_keys_held(client)
    stale = [key for key, value in zip(keys, client.mget(keys) if keys else [], strict=True) if forgotten(key, value)]
    if stale:
        client.delete(*stale)


def word_statistics_held(asked: list[str]) -> dict[str, int]:
    """What the keyword leg's keys (STATS_KEYS: the only user's) hold in Redis, against the words the queries asked:
    keys, and bytes (MEMORY USAGE: key, value and Redis's own share), of the counts and of the marks of fresh counts
    (the rest: the owner's rows, a small reach's vocabulary guard). Counts of 0 and marks expire (a minute, ten):
    what a run leaves just after it."""
    from memory.recall.terms import query_terms

    client = _redis()
    keys = _stats_keys_held(client)
    pipeline = client.pipeline(transaction=False)
    for key in keys:
        pipeline.memory_usage(key)
    sizes = dict(zip(keys, pipeline.execute(), strict=True))
    marks = [key for key in keys if b":df:fresh:" in key]
    return {
        "keys": len(keys),
        "bytes": sum(size or 0 for size in sizes.values()),
        "marks": len(marks),
        "mark_bytes": sum(sizes[key] or 0 for key in marks),
        "words": len({word for query in asked for word in query_terms(query)}),
    }


def word_statistics_saved() -> dict[bytes, tuple[int, bytes]]:
    client = _redis()
    return {key: (client.pttl(key), client.dump(key)) for key in _stats_keys_held(client)}


def word_statistics_restored(saved: dict[bytes, tuple[int, bytes]]) -> None:
    """Put back the statistics cached before a cold variant, so the variants after it find them again."""
    client = _redis()
    for key, (ttl_ms, value) in saved.items():
        if value is not None:  # None: it expired while being saved
            client.restore(key, max(ttl_ms, 0), value, replace=True)


def over_http(user: Any, asked: list[str], rounds: int) -> list[list[float]]:
    """Round trips of POST /query/search to a real uvicorn on this data directory."""
    import httpx

    from bench.serving import bearer, read_token, served

    secret = read_token(user, "bench-search")
    timings = []
    with served() as url, httpx.Client(base_url=url, headers=bearer(secret), timeout=60) as client:
        for query in asked[:WARM_UP]:
            client.post("/query/search", json={"query": query}).raise_for_status()
        for _ in range(rounds):
            spent = []
            for query in asked:
                began = time.perf_counter()
                client.post("/query/search", json={"query": query}).raise_for_status()
                spent.append((time.perf_counter() - began) * 1000)
            timings.append(spent)
    return timings


def reused_real(kept: Path, *, claims: int, size: int, real: int) -> int | None:
    """How many of a kept store's vectors are embedded, if it can be measured as asked; None: build it again.

    What the store holds is in `kept` (store.json). One with fewer claims than `size`, or fewer embedded vectors
    than `real`, is built again; one with more embedded vectors is measured as it is (and reported so)."""
    holds = json.loads(kept.read_text())["real"] if kept.exists() else size  # stores of older runs: all real
    return holds if claims == size and holds >= real else None


def run_size(size: int, base: Path, options: argparse.Namespace) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from config.embedded import ensure_started
    from memory.access import access_for_user
    from memory.embeddings import get_embedder
    from memory.models import Claim, User

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    if get_embedder().model_id != "minilm-l6-v2-int8":
        raise SystemExit("this benchmark measures the default MiniLM embedder and its HNSW index (EMBEDDER=minilm)")
    user, built = User.objects.filter(username=USERNAME).first(), {}
    real = min(size, options.real or size)
    kept = base / f"claims-{size}" / "store.json"
    claims = Claim.objects.filter(owner=user).count() if options.reuse and user else 0
    reused = reused_real(kept, claims=claims, size=size, real=real)
    if user is not None and reused is not None:
        real = reused
    else:
        built = build(size, base, real=real)
        kept.write_text(json.dumps({"size": size, "real": real}))
        user = User.objects.get(username=USERNAME)
    access = access_for_user(user=user)
    asked = queries(options.queries, statements(min(size, 10_000)))
    load, measured = os.getloadavg()[0], [time.perf_counter()]
    timings = dict(in_process(access, asked, options.rounds, options.variants))
    measured.append(time.perf_counter())
    held = word_statistics_held(asked)
    parts = breakdown(access, asked)
    measured.append(time.perf_counter())
    timings["HTTP POST /query/search"] = over_http(user, asked, options.rounds)
    measured.append(time.perf_counter())
    slowest = max(parts.pop("_keyword").items(), key=lambda item: item[1])
    plans = {query: explain(access, query) for query in (asked[1], slowest[0])}
    measured.append(time.perf_counter())
    steps = ("in-process", "breakdown", "HTTP (with uvicorn's start)", "EXPLAIN")
    spent = {step: end - start for step, start, end in zip(steps, measured[:-1], measured[1:], strict=True)}
    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        postgres, pgvector = cursor.fetchone() or ("", "")
    return {"size": size, "timings": {name: summary(rounds) for name, rounds in timings.items()}, "parts": parts,
            "plans": plans, "load": [load, os.getloadavg()[0]], "postgres": postgres.split(" on ")[0],
            "pgvector": pgvector, "slowest": slowest, "code": code_version(), "built": built,
            "real": real, "measured": spent, "held": held}  # fmt: skip


def code_version() -> str:
    """Short hashes of the search code measured (it changes between runs; the numbers belong to one version)."""
    import hashlib

    files = [ROOT / "memory" / "recall" / f"{name}.py" for name in ("search", "legs", "terms")]
    return ", ".join(f"{path.name} {hashlib.sha256(path.read_bytes()).hexdigest()[:8]}" for path in files)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    kib = int(Path("/proc/meminfo").read_text().split()[1])
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, {kib / 2**20:.0f} GiB RAM"


def scans(plan: str) -> str:
    """How the statement reads memory_claim: each scan in plan order (CTEs and subqueries first), and its times."""
    kinds = r"Seq Scan on memory_claim|Bitmap Index Scan on \w+|Index (?:Only )?Scan using \w+ on memory_claim"
    timing = ", ".join(re.findall(r"(?:Planning|Execution) Time: [\d.]+ ms", plan))
    return f"Reads: {'; '.join(re.findall(kinds, plan))}. {timing}"


def stored(result: dict[str, Any]) -> str:
    """What the measured store holds and how long its build took, by phase."""
    size, real = result["size"], result.get("real", result["size"])
    vectors = "every vector embedded" if real >= size else f"{real:,} vectors embedded, {size - real:,} generated"
    phases = ", ".join(f"{phase} {seconds:.0f} s" for phase, seconds in result.get("built", {}).items())
    measured = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in result.get("measured", {}).items())
    built = f"built in {sum(result['built'].values()):.0f} s ({phases})" if phases else "reused"
    return f"{vectors}; {built}; measured in {sum(result.get('measured', {}).values()):.0f} s ({measured})"


def report(results: list[dict[str, Any]]) -> None:
    for result in results:
        print(f"\n## {result['size']:,} claims (load average {result['load'][0]:.2f} -> {result['load'][1]:.2f})\n")
        print(f"{stored(result)}\n")
        print("Where a hybrid search spends its time (ms over the queries, in-process):\n")
        print("| step | p50 | p95 |\n|---|---:|---:|")
        for step, spent in result["parts"].items():
            print(f"| {step} | {spent['p50']:.1f} | {spent['p95']:.1f} |")
        for query, plans in result["plans"].items():
            for leg, plan in plans.items():
                plan = re.sub(r"'\[[-0-9.e,]+\]'", "'[384 numbers]'", plan)
                print(f"\n### EXPLAIN {leg} leg (claims, other corpora), query {query!r}\n\n{scans(plan)}\n\n{plan}")
        print(f"\nslowest keyword leg: {result['slowest'][1]:.1f} ms for {result['slowest'][0]!r}")
    first = results[0]
    print(
        f"\n## Search latency (`bench/search_latency.py`)\n\nMachine: {machine()}, Python "
        f"{platform.python_version()}, {first['postgres']}, pgvector {first['pgvector']}. One user, one "
        f"partition; search code {first['code']}. In ms: the median over rounds of each round's percentile "
        f"(the p95 range across rounds in brackets).\n"
    )
    print("| claims | path | p50 | p95 | p99 | load average |\n|---:|---|---:|---:|---:|---|")
    for result in results:
        for name, found in result["timings"].items():
            path = name if name.startswith("HTTP") else f"in-process search(), {name}"
            print(f"| {result['size']:,} | {path} | {found['p50']:.1f} | {found['p95']:.1f} "
                  f"({found['p95_min']:.1f}-{found['p95_max']:.1f}) | {found['p99']:.1f} | "
                  f"{result['load'][0]:.1f} -> {result['load'][1]:.1f} |")  # fmt: skip
    print("\n" + "\n".join(f"{result['size']:,} claims: {stored(result)}" for result in results))
    for result in results:
        if held := result.get("held"):
            print(f"\n{result['size']:,} claims, the keyword leg's keys in Redis after the in-process run: "
                  f"{held['keys']:,} keys, {held['bytes']:,} bytes for {held['words']:,} words asked "
                  f"({held['bytes'] / max(held['words'], 1):,.0f} bytes a word), of which marks of fresh counts "
                  f"{held['marks']:,} keys, {held['mark_bytes']:,} bytes")  # fmt: skip
    for result in results:
        at_100k = result["size"] >= 100_000
        timings = result["timings"]
        headline(f"search p95 in-process, hybrid, {result['size']:,} claims", timings["hybrid"]["p95"], "ms",
                 "<= 40" if at_100k else "")  # fmt: skip
        headline(f"search p95 over HTTP, {result['size']:,} claims", timings["HTTP POST /query/search"]["p95"], "ms",
                 "<= 50" if at_100k else "")  # fmt: skip


def sizes_in_children(script: str, base: Path, sizes: list[int], arguments: list[str]) -> list[dict[str, Any]]:
    """Run `script --one-size N` once per size, each in a process of its own on its own data directory (Django's
    settings are fixed once a process has set up), and gather each size's result.json."""
    base.mkdir(parents=True, exist_ok=True)
    results = []
    for size in sizes:
        environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        environment["MEMORY_DATA_DIR"] = str(base / f"claims-{size}")
        subprocess.run([sys.executable, script, "--one-size", str(size), *arguments], env=environment, check=True)
        results.append(json.loads((base / f"claims-{size}" / "result.json").read_text()))
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reuse", action="store_true", help="measure the data built by an earlier run")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--real", type=int, help="embed only the first N statements, generate the other vectors "
                        "(bench/store_vectors.py); default: every statement embedded")  # fmt: skip
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        metavar="NAME",
        help=f"in-process variants to time (default: all of {', '.join(map(repr, VARIANTS))})",
    )
    parser.add_argument("--one-size", type=int, help=argparse.SUPPRESS)  # a child: this size's data directory
    options = parser.parse_args()
    base = Path(os.environ.get("MEMORY_DATA_DIR", "") or ROOT / "var" / "bench-search").resolve()
    if options.one_size:
        result = run_size(options.one_size, base.parent, options)
        (base / "result.json").write_text(json.dumps(result, default=str))
        return
    arguments = ["--queries", str(options.queries), "--rounds", str(options.rounds)]
    arguments += ["--real", str(options.real)] if options.real else []
    arguments += ["--variants", *options.variants]
    results = sizes_in_children(__file__, base, options.sizes, [*arguments, *(["--reuse"] if options.reuse else [])])
    report(results)


if __name__ == "__main__":
    main()
