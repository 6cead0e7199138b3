"""Scale: one partition at 100,000 to 1,000,000 claims: the build, the table and index sizes, search latency
in-process and over HTTP, the ingestion rate into the full partition, and a halfvec index beside the vector one.

    .venv/bin/python bench/scale.py [--sizes 100000 300000] [--reuse] [--real 100000] [--no-halfvec]
    .venv/bin/python bench/scale.py --sizes 1000000          # the 1M run (about an hour on 2 cores)

The store is bench/search_latency.py's (its statements, nodes, sources, evidence and its build(), one data
directory per size under var/bench-scale), with one difference: only the first `--real` statements (100,000) get
real MiniLM vectors (cached in var/bench-scale/vectors.npy); every later claim's vector is GENERATED, a real
vector of a random earlier statement plus Gaussian noise, normalised, at a cosine of about 0.9 to it (embedding
a million statements would take over an hour here). So the vector index holds clustered vectors shaped like real
ones, but past `--real` a claim's vector does not describe its text: latency and sizes are meaningful, recall
is not.

Per size, after the build: pg_relation_size / pg_indexes_size of memory_claim and its two search indexes; search()
in-process (hybrid, both legs) and POST /query/search over HTTP, `--rounds` rounds of the same `--queries` queries
as search_latency.py (p50/p95 per round, median over rounds), and where a hybrid search spends its time
(search_latency.py's breakdown: embedding, each leg per corpus, hydration, SQL); then the ingestion rate into that
same partition: `--conversations` x `--messages` generated messages (bench/ingest_throughput.py's sentences)
accepted in process and processed by one real Celery worker, timed until every receipt completed. With halfvec
(default, sizes up to `--halfvec-max`, 300,000): a second HNSW index over `embedding::halfvec(384)`, its build time
and size, and for `--exact` vector-only queries the latency and overlap@10 with the exact top 10 of both indexes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from bench import search_latency as latency  # noqa: E402
from bench.report import headline  # noqa: E402
from bench.store_vectors import vectors_for  # noqa: E402

MODEL_WHERE = "embedding_model = 'minilm-l6-v2-int8'"
HALFVEC_INDEX = "bench_claim_embedding_halfvec_hnsw"


def relation_sizes() -> dict[str, int]:
    """Bytes on disk of the claim table (heap + TOAST), of all its indexes, and of each search index."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_table_size('memory_claim'), pg_indexes_size('memory_claim'), "
            "pg_relation_size('claim_embedding_minilm_hnsw'), pg_relation_size('claim_search_vector'), "
            "pg_total_relation_size('memory_evidence'), pg_database_size(current_database())"
        )
        row = cursor.fetchone() or ()
    names = ("claim table", "claim indexes", "HNSW (vector)", "GIN (full text)", "evidence, total", "database")
    return dict(zip(names, (int(value) for value in row), strict=True))


def timed_searches(access: Any, asked: list[str], rounds: int) -> list[list[float]]:
    from memory.recall.search import SearchRequest, search

    for query in asked[: latency.WARM_UP]:
        search(access, SearchRequest(query=query))
    timings = []
    for _ in range(rounds):
        spent = []
        for query in asked:
            began = time.perf_counter()
            search(access, SearchRequest(query=query))
            spent.append((time.perf_counter() - began) * 1000)
        timings.append(spent)
    return timings


def ingest_rate(user: Any, conversations: int, messages: int) -> dict[str, float]:
    """Messages per second through one real worker into `user`'s partition (ingest_throughput.py's workload)."""
    from bench.ingest_throughput import ingest_timed
    from memory.access import Actor, access_for_token
    from memory.services.tokens import token_issue

    token = token_issue(actor=Actor.system(), owner=user, label="bench-scale", scopes=["read", "write"]).token
    access = access_for_token(token=token, user_id=None, partition_key=None, workspace=False)
    environment = {**os.environ, "EMBEDDING_THREADS": str(os.cpu_count() or 1)}
    (timed,) = ingest_timed(access, random.Random(7), conversations, messages, 1, environment)  # noqa: S311
    total = conversations * messages
    return {"accept": total / timed["accepted"], "end_to_end": total / timed["finished"], "failed": timed["failed"]}


def halfvec(asked: list[str], exact: int) -> dict[str, Any]:
    """A halfvec HNSW index beside the vector one: build time, size, and for `exact` queries each index's latency
    and overlap with the exact top 10 (a sequential scan of every vector). Dropped afterwards."""
    from django.conf import settings
    from django.db import connection, transaction

    from memory.embeddings import get_embedder

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM memory_claim WHERE {MODEL_WHERE}")  # noqa: S608 (constants only)
        rows = int((cursor.fetchone() or (0,))[0])
        cursor.execute(f"SET maintenance_work_mem = '{max(1024, rows // 800)}MB'")
        began = time.perf_counter()
        cursor.execute(f"DROP INDEX IF EXISTS {HALFVEC_INDEX}")
        cursor.execute(f"CREATE INDEX {HALFVEC_INDEX} ON memory_claim USING hnsw ((embedding::halfvec(384)) "
                       f"halfvec_cosine_ops) WHERE {MODEL_WHERE}")  # fmt: skip
        built = time.perf_counter() - began
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("SELECT pg_relation_size(%s), pg_relation_size('claim_embedding_minilm_hnsw')", [HALFVEC_INDEX])
        half_bytes, full_bytes = cursor.fetchone() or (0, 0)
    vectors = get_embedder().embed_documents(asked[:exact])
    statements = {
        "vector": "SELECT id FROM memory_claim WHERE {where} ORDER BY embedding::vector(384) <=> %s::vector(384) "
        "LIMIT 10",
        "halfvec": "SELECT id FROM memory_claim WHERE {where} ORDER BY embedding::halfvec(384) <=> "
        "%s::vector(384)::halfvec(384) LIMIT 10",
    }
    spent: dict[str, list[float]] = {"vector": [], "halfvec": []}
    overlap: dict[str, list[float]] = {"vector": [], "halfvec": []}
    for vector in vectors:
        literal = "[" + ",".join(f"{value:.7f}" for value in vector) + "]"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")  # the exact answer: every vector compared
            cursor.execute(statements["vector"].format(where=MODEL_WHERE), [literal])
            truth = {row[0] for row in cursor.fetchall()}
        for kind, sql in statements.items():
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(settings.SEARCH_EF_SEARCH)])
                began = time.perf_counter()
                cursor.execute(sql.format(where=MODEL_WHERE), [literal])
                found = {row[0] for row in cursor.fetchall()}
                spent[kind].append((time.perf_counter() - began) * 1000)
            overlap[kind].append(len(found & truth) / max(1, len(truth)))
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {HALFVEC_INDEX}")
    return {
        "build_seconds": built, "halfvec_bytes": half_bytes, "vector_bytes": full_bytes, "queries": len(vectors),
        **{f"{kind}_p50": statistics.median(values) for kind, values in spent.items()},
        **{f"{kind}_overlap": statistics.fmean(values) for kind, values in overlap.items()},
    }  # fmt: skip


def run_size(size: int, base: Path, options: argparse.Namespace) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.embedded import ensure_started
    from memory.access import access_for_user
    from memory.models import Claim, User

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    user = User.objects.filter(username=latency.USERNAME).first()
    built: dict[str, float] = {}
    if not (options.reuse and user and Claim.objects.filter(owner=user).count() >= size):
        began = time.perf_counter()
        texts = [row[0] for row in latency.statements(size)]
        vectors = vectors_for(texts, base, options.real, latency.SEED + 3)
        built["vectors_seconds"] = time.perf_counter() - began
        began = time.perf_counter()
        latency.build(size, base, vectors)
        built["build_seconds"] = time.perf_counter() - began
        del vectors
        user = User.objects.get(username=latency.USERNAME)
    access = access_for_user(user=user)
    sizes = relation_sizes()
    asked = latency.queries(options.queries, latency.statements(min(size, 10_000)))
    load = [os.getloadavg()[0]]
    timings = {"in-process search(), hybrid": timed_searches(access, asked, options.rounds)}
    timings["HTTP POST /query/search"] = latency.over_http(user, asked, options.rounds)
    parts = latency.breakdown(access, asked)
    parts.pop("_keyword")
    load.append(os.getloadavg()[0])
    half = halfvec(asked, options.exact) if options.halfvec and size <= options.halfvec_max else {}
    load.append(os.getloadavg()[0])
    ingest = ingest_rate(user, options.conversations, options.messages)
    load.append(os.getloadavg()[0])
    return {"size": size, "built": built, "sizes": sizes, "load": load, "halfvec": half, "ingest": ingest,
            "parts": parts, "timings": {name: latency.summary(rounds) for name, rounds in timings.items()},
            "real": min(size, options.real), "code": latency.code_version()}  # fmt: skip


def report(results: list[dict[str, Any]]) -> None:
    mib = 2**20
    print(f"\n## Scale (`bench/scale.py`)\n\nMachine: {latency.machine()}, Python {platform.python_version()}. One "
          f"user, one partition; search code {results[0]['code']}. Vectors: real MiniLM for the first "
          f"{results[0]['real']:,} statements, generated past that (see the script).\n")  # fmt: skip
    print("| claims | build s (insert + indexes + VACUUM ANALYZE) | claim table MiB | claim indexes MiB | HNSW MiB | "
          "GIN MiB | database MiB | load average |\n|---:|---:|---:|---:|---:|---:|---:|---|")  # fmt: skip
    for r in results:
        s = r["sizes"]
        build = f"{r['built']['build_seconds']:.0f}" if r["built"] else "(reused)"
        print(f"| {r['size']:,} | {build} | {s['claim table'] / mib:.0f} | {s['claim indexes'] / mib:.0f} | "
              f"{s['HNSW (vector)'] / mib:.0f} | {s['GIN (full text)'] / mib:.0f} | {s['database'] / mib:.0f} | "
              f"{' -> '.join(f'{value:.1f}' for value in r['load'])} |")  # fmt: skip
    print("\n| claims | path | p50 ms | p95 ms (range over rounds) | p99 ms |\n|---:|---|---:|---:|---:|")
    for r in results:
        for name, t in r["timings"].items():
            print(f"| {r['size']:,} | {name} | {t['p50']:.1f} | {t['p95']:.1f} ({t['p95_min']:.1f}-{t['p95_max']:.1f})"
                  f" | {t['p99']:.1f} |")  # fmt: skip
    print("\nWhere an in-process hybrid search spends its time (ms, p50 / p95 over the queries):\n")
    print("| step | " + " | ".join(f"{r['size']:,}" for r in results) + " |\n|---|" + "---:|" * len(results))
    for step in results[0]["parts"]:
        cells = [r["parts"].get(step) for r in results]
        shown = [f"{c['p50']:.1f} / {c['p95']:.1f}" if c else "" for c in cells]
        print(f"| {step} | " + " | ".join(shown) + " |")
    first = results[0]["ingest"]["end_to_end"]
    print(f"\n| claims | ingest messages/s end to end | vs {results[0]['size']:,} | accept messages/s | failed |")
    print("|---:|---:|---:|---:|---:|")
    for r in results:
        i = r["ingest"]
        print(f"| {r['size']:,} | {i['end_to_end']:.0f} | {i['end_to_end'] / first:.0%} | {i['accept']:.0f} | "
              f"{i['failed']} |")  # fmt: skip
    for r in results:
        million = r["size"] >= 1_000_000
        http = next(t for name, t in r["timings"].items() if name.startswith("HTTP"))
        headline(f"search p95 over HTTP, {r['size']:,} claims", http["p95"], "ms", "<= 100" if million else "")
        headline(f"ingest at {r['size']:,} vs {results[0]['size']:,}", r["ingest"]["end_to_end"] / first * 100, "%",
                 ">= 80" if million else "")  # fmt: skip
    halves = [r for r in results if r["halfvec"]]
    if halves:
        print("\n| claims | HNSW vector MiB | HNSW halfvec MiB | halfvec build s | vector-only p50 ms, vector / "
              "halfvec | overlap@10 with exact, vector / halfvec |\n|---:|---:|---:|---:|---|---|")  # fmt: skip
        for r in halves:
            h = r["halfvec"]
            print(f"| {r['size']:,} | {h['vector_bytes'] / mib:.0f} | {h['halfvec_bytes'] / mib:.0f} | "
                  f"{h['build_seconds']:.0f} | {h['vector_p50']:.1f} / {h['halfvec_p50']:.1f} | "
                  f"{h['vector_overlap']:.3f} / {h['halfvec_overlap']:.3f} ({h['queries']} queries) |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--reuse", action="store_true", help="measure the data built by an earlier run")
    parser.add_argument("--real", type=int, default=100_000, help="statements with real MiniLM vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--messages", type=int, default=25)
    parser.add_argument("--exact", type=int, default=50, help="queries compared with the exact top 10 (halfvec)")
    parser.add_argument("--no-halfvec", dest="halfvec", action="store_false")
    parser.add_argument("--halfvec-max", type=int, default=300_000, help="the largest size that gets a halfvec index")
    parser.add_argument("--one-size", type=int, help=argparse.SUPPRESS)  # a child: this size's data directory
    options = parser.parse_args()
    base = Path(os.environ.get("MEMORY_DATA_DIR", "") or ROOT / "var" / "bench-scale").resolve()
    if options.one_size:
        result = run_size(options.one_size, base.parent, options)
        (base / "result.json").write_text(json.dumps(result, default=str))
        return
    arguments = [f"--{name.replace('_', '-')}={getattr(options, name)}" for name in
                 ("real", "queries", "rounds", "conversations", "messages", "exact", "halfvec_max")]  # fmt: skip
    flags = (["--reuse"] if options.reuse else []) + ([] if options.halfvec else ["--no-halfvec"])
    results = latency.sizes_in_children(__file__, base, options.sizes, [*arguments, *flags])
    report(results)


if __name__ == "__main__":
    main()
