"""LoCoMo evidence recall: do the turns that answer a question come back in the top k?

    .venv/bin/python bench/locomo.py ../shared/bench/locomo-dev.json [--reuse] [--variant hybrid keyword vector]
        [--protocol results evidence] [--path inprocess rest] [--roles-only]

The data file is read from where it lies (its licence allows evaluation only; it is never copied here).
Each conversation goes into its own user's memory through the real ingestion service and pipeline (one
conversation per session; message id = dia id; speaker_a speaks as the memory's owner, with the session's
date and time). Every question of categories 1-4 is asked along two paths (`--path`, both by default):
`inprocess` calls the search service, `rest` sends `POST /query/search` with `{"query", "limit"}` and one read
token per user (issued by the token service) to a real uvicorn on a free loopback port on the same data
directory (bench/serving.py), as an assistant would; the keyword and vector variants are in-process only (REST
always searches with both legs). Both paths map the results to dia ids with one function, in rank order (a
claim gives its evidence messages, a chunk its message, a node card none), duplicates dropped, and score the
first k ids:

- all@k: every evidence turn of the question is among them; any@k: at least one is;
- frac@k: the share of its evidence turns that are (the headline number).

Two protocols (`--protocol`): `results` (the default and the primary number) asks for 10 results, as an
assistant sees them, and scores the message ids of the first k *results*; `evidence` is the old protocol,
20 results asked and the first k distinct message ids among them scored. Each run (variant, protocol, path)
prints its per-category table, the median latency per question (the search call in-process, the round trip
over REST) and the share of the top-10 slots taken by each result type (claim, chunk, node, ...); then one
summary row per run, and the questions whose in-process and REST rankings differ (there should be none).

Beside it, the same script computes two baselines over single turns: plain BM25 (Okapi, k1 1.5, b 0.75,
lower-cased words) and the same with the stop words of our keyword leg removed (the stronger of the two).
Uses its own embedded data directory (var/bench-locomo); `--reuse` asks again without ingesting again.
`--roles-only` sends the turns without speaker names, as a chat host that knows only roles would (in a store of
its own: MEMORY_DATA_DIR=var/bench-locomo-roles).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import headline  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

KS = (5, 10)
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_WORD = re.compile(r"\w+")


def dia_ids(raw: list[str]) -> list[str]:
    """Normalised evidence ids: "D8:6; D9:17" is two ids, "D30:05" is D30:5."""
    found = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            if match := re.fullmatch(r"D(\d+):(\d+)", part.strip()):
                found.append(f"D{int(match[1])}:{int(match[2])}")
    return list(dict.fromkeys(found))


def asked_qa(sample: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """The questions every benchmark asks of a sample: categories 1-4, each with evidence, and that evidence's ids
    normalised (`dia_ids`)."""
    asked = []
    for qa in sample["qa"]:
        evidence = dia_ids(qa.get("evidence", []))
        if qa["category"] in CATEGORIES and evidence:
            asked.append((qa, evidence))
    return asked


def sample_named(data: Path, name: str) -> dict[str, Any]:
    """The sample `name` (its sample_id) of the LoCoMo file `data`; an unknown name ends the run with the known ones."""
    samples = {sample["sample_id"]: sample for sample in json.loads(data.read_text())}
    if name not in samples:
        raise SystemExit(f"no sample {name!r} in {data}: {sorted(samples)}")
    return samples[name]


def session_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def sessions(conversation: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    numbers = sorted(int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key))
    return [
        (n, session_time(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"])
        for n in numbers
        if conversation.get(f"session_{n}")
    ]


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    k1, b = 1.5, 0.75

    def __init__(self, documents: list[tuple[str, str]], *, stopwords: frozenset[str] = frozenset()) -> None:
        self.stopwords = stopwords
        self.ids = [doc_id for doc_id, _ in documents]
        self.docs = [Counter(self.words(text)) for _, text in documents]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.average = sum(self.lengths) / len(self.lengths)
        frequency = Counter(word for doc in self.docs for word in doc)
        n = len(self.docs)
        self.idf = {word: math.log(1 + (n - df + 0.5) / (df + 0.5)) for word, df in frequency.items()}

    def words(self, text: str) -> list[str]:
        return [word for word in tokens(text) if word not in self.stopwords]

    def top(self, query: str, k: int) -> list[str]:
        words = self.words(query)
        scores = []
        for index, doc in enumerate(self.docs):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.average)
            score = sum(self.idf.get(w, 0) * doc[w] * (self.k1 + 1) / (doc[w] + norm) for w in words if w in doc)
            scores.append((score, -index))
        best = sorted(scores, reverse=True)[:k]
        return [self.ids[-index] for _, index in best]


def score(found: list[str], evidence: list[str]) -> tuple[float, float, float]:
    """all, any and frac of the evidence turns among `found` (already cut to what is scored)."""
    top = set(found)
    hits = sum(1 for item in evidence if item in top)
    return float(hits == len(evidence)), float(hits > 0), hits / len(evidence)


def ingest(sample: dict[str, Any], *, roles_only: bool = False) -> Any:
    """One sample's conversation in a new user's memory, processed; `roles_only` sends no speaker names (a chat
    host that knows only "user" and "other"), which takes the names the questions use away from the memory."""

    from memory.access import access_for_user
    from memory.models import Operation, User
    from memory.pipeline.runner import run_operation
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation
    from memory.services.planner_statistics import planner_statistics_refresh

    username = f"locomo-{sample['sample_id']}"
    User.objects.filter(username=username).delete()
    user = User.objects.create(username=username, first_name=sample["conversation"]["speaker_a"])
    access = access_for_user(user=user)
    owner = sample["conversation"]["speaker_a"]
    for number, started, turns in sessions(sample["conversation"]):
        start = started.replace(tzinfo=UTC)
        messages = [
            MessageIn(
                id=turn["dia_id"],
                content=turn["text"],
                role="user" if turn["speaker"] == owner else "other",
                speaker="" if roles_only else turn["speaker"],
                timestamp=start + timedelta(seconds=30 * index),
            )
            for index, turn in enumerate(turns)
        ]
        conversation = ConversationIn(id=f"session_{number}", messages=messages)
        receipt = ingest_conversation(access=access, conversation=conversation)
        run_operation(receipt.operation.pk)
        planner_statistics_refresh()  # as the worker's task does after each job: the store is searched planned
    failed = Operation.objects.filter(owner=user).exclude(status="completed").count()
    if failed:
        raise SystemExit(f"{failed} receipts of {username} did not complete")
    return user


def message_ids(results: Iterable[Mapping[str, Any]]) -> list[str]:
    """The message ids of `results` (as `/query/search` returns them) in rank order: each result's evidence
    messages in their order, repeats dropped; a node card has no evidence and gives none."""
    ids: dict[str, None] = {}
    for result in results:
        for evidence in result["evidence"]:
            if evidence.get("messageId"):
                ids.setdefault(evidence["messageId"])
    return list(ids)


def scored_ids(
    results: Sequence[Mapping[str, Any]], *, protocol: str, cuts: Iterable[int] = KS
) -> dict[int, list[str]]:
    """Per cut k, the message ids scored: those of the first k results (`results`), or the first k distinct ids
    of all results (`evidence`)."""
    if protocol == "results":
        return {k: message_ids(results[:k]) for k in cuts}
    ids = message_ids(results)
    return {k: ids[:k] for k in cuts}


def limit_of(protocol: str) -> int:
    return max(KS) if protocol == "results" else max(KS) * 2


def ask_in_process(access: Any, question: str, protocol: str, variant: str) -> tuple[list[dict[str, Any]], float]:
    """The results of the search service, as REST would show them, and the seconds the search took."""
    from memory.recall.search import SearchRequest, search

    begun = time.perf_counter()
    request = SearchRequest(
        query=question, limit=limit_of(protocol), use_vector=variant != "keyword", use_keyword=variant != "vector"
    )
    results = list(search(access, request))
    elapsed = time.perf_counter() - begun
    return [result.as_json() for result in results], elapsed


def ask_rest(client: Any, question: str, protocol: str) -> tuple[list[dict[str, Any]], float]:
    """The results of one `POST /query/search` (the body an assistant sends) and the round trip's seconds."""
    begun = time.perf_counter()
    response = client.post("/query/search", json={"query": question, "limit": limit_of(protocol)})
    elapsed = time.perf_counter() - begun
    response.raise_for_status()
    return list(response.json()["searchResults"]), elapsed


def table(title: str, rows: dict[str, dict[int, list[tuple[float, float, float]]]]) -> str:
    lines = [f"### {title}", "", "| category | n | " + " | ".join(
        f"all@{k} | any@{k} | frac@{k}" for k in KS) + " |", "|---|---|" + "---|" * 3 * len(KS)]  # fmt: skip
    for name, per_k in rows.items():
        cells = []
        for k in KS:
            scores = per_k[k]
            cells += [f"{statistics.fmean(s[i] for s in scores):.3f}" for i in range(3)]
        lines.append(f"| {name} | {len(per_k[KS[0]])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


Scores = dict[str, dict[int, list[tuple[float, float, float]]]]  # group (category, overall) -> k -> per question


def scores() -> Scores:
    return defaultdict(lambda: defaultdict(list))


@dataclass
class Run:
    """One variant, protocol and path (in-process or REST) over all questions."""

    rows: Scores = field(default_factory=scores)
    seconds: list[float] = field(default_factory=list)
    slots: Counter[str] = field(default_factory=Counter)

    def add(self, results: list[dict[str, Any]], seconds: float, protocol: str, evidence: list[str], name: str) -> None:
        self.seconds.append(seconds)
        self.slots.update(str(result["type"]) for result in results[: max(KS)])
        found = scored_ids(results, protocol=protocol)
        for k in KS:
            for group in (name, "overall (1-4)"):
                self.rows[group][k].append(score(found[k], evidence))


def ingest_all(samples: list[dict[str, Any]], reuse: bool, *, roles_only: bool = False) -> dict[str, Any]:
    """Each sample's user, ingested again unless `reuse` finds it."""
    from memory.models import Claim, User

    users = {}
    begun = time.perf_counter()
    ingested = 0
    for sample in samples:
        existing = User.objects.filter(username=f"locomo-{sample['sample_id']}").first()
        if reuse and existing:
            users[sample["sample_id"]] = existing
            continue
        users[sample["sample_id"]] = ingest(sample, roles_only=roles_only)
        ingested += sum(len(turns) for _, _, turns in sessions(sample["conversation"]))
    claims = Claim.objects.filter(owner__username__startswith="locomo-").count()
    print(f"ingested {ingested} turns in {time.perf_counter() - begun:.1f} s; {claims} claims in these memories")
    return users


def ranking_difference(question: str, answers: dict[str, list[dict[str, Any]]]) -> str:
    """Where the two paths' rankings part: the first rank that differs and what each path put there."""
    ranked = {path: _ranked(found) for path, found in answers.items()}
    rank = next((i for i, pair in enumerate(zip(*ranked.values(), strict=False)) if pair[0] != pair[1]), None)
    if rank is None:
        return f"{question!r}: " + ", ".join(f"{path} {len(found)} results" for path, found in ranked.items())
    shown = {
        path: {key: found[rank].get(key) for key in ("type", "id", "score", "boosts")}
        for path, found in answers.items()
    }
    return f"{question!r}, rank {rank + 1}: {shown}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--reuse", action="store_true", help="ask again without ingesting again")
    parser.add_argument("--variant", nargs="+", default=["hybrid"], choices=["hybrid", "keyword", "vector"])
    parser.add_argument("--protocol", nargs="+", default=["results", "evidence"], choices=["results", "evidence"])
    parser.add_argument("--path", nargs="+", default=["inprocess", "rest"], choices=["inprocess", "rest"])
    parser.add_argument("--roles-only", action="store_true", help="ingest without speaker names (use a new store)")
    options = parser.parse_args()
    os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-locomo"))

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.embedded import ensure_started

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    samples = json.loads(options.data.read_text())
    users = ingest_all(samples, options.reuse, roles_only=options.roles_only)
    if "rest" in options.path and set(options.variant) - {"hybrid"}:
        print("REST searches with both legs: the keyword and vector variants are measured in-process only")
    load = os.getloadavg()[0]
    runs, baselines, differences = ask_all(samples, users, options)

    from bench.search_latency import code_version, machine

    print(f"\nmachine: {machine()}, Python {platform.python_version()}, load average {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}; search code {code_version()}")  # fmt: skip
    for ranker_name, rows in baselines.items():
        print(table(f"BM25 over single turns, {ranker_name} (baseline)", rows))
        print()
    for (variant, protocol, path), run in runs.items():
        median_ms = statistics.median(run.seconds) * 1000
        print()
        print(table(f"memory search: {variant}, {protocol}, {path} (median {median_ms:.1f} ms per question)", run.rows))
        taken = sum(run.slots.values())
        shares = ", ".join(f"{kind} {count / taken:.1%}" for kind, count in run.slots.most_common())
        print(f"\nslots of the first {max(KS)} results: {shares}")
    print(summary(runs))
    goals = {"overall (1-4)": ">= 0.82", "multi-hop": ">= 0.55", "open-domain": ">= 0.60"}
    for (variant, protocol, path), run in runs.items():
        if (variant, protocol) == ("hybrid", "results"):  # the protocol: the first 10 results
            for group in ("overall (1-4)", *(CATEGORY_NAMES[c] for c in CATEGORIES)):
                frac = statistics.fmean(s[2] for s in run.rows[group][max(KS)])
                headline(f"LoCoMo dev frac@10, {group}, {path}", frac, "", goals.get(group, ""))
    if "rest" in options.path and "inprocess" in options.path:
        print(f"\nrankings that differ between in-process and REST: {len(differences)}")
        for line in differences[:10]:
            print(f"- {line}")


def ask_all(
    samples: list[dict[str, Any]], users: dict[str, Any], options: argparse.Namespace
) -> tuple[dict[tuple[str, str, str], Run], dict[str, Scores], list[str]]:
    """Every question of categories 1-4 through each variant, protocol and path, and the BM25 baselines; also
    the questions whose in-process and REST rankings differ."""
    import httpx

    from bench.serving import bearer, read_token, served
    from memory.access import access_for_user
    from memory.recall.terms import STOPWORDS

    baselines = {name: scores() for name in ("plain", "stop words removed")}
    runs: dict[tuple[str, str, str], Run] = defaultdict(Run)
    differences = []
    with contextlib.ExitStack() as stack:
        clients = {}
        if "rest" in options.path:
            url = stack.enter_context(served())
            for sample_id, user in users.items():
                headers = bearer(read_token(user, "bench-locomo"))
                clients[sample_id] = stack.enter_context(httpx.Client(base_url=url, headers=headers, timeout=60))
        asked = 0
        for sample in samples:
            documents = [(t["dia_id"], t["text"]) for _, _, ts in sessions(sample["conversation"]) for t in ts]
            rankers = {"plain": BM25(documents), "stop words removed": BM25(documents, stopwords=STOPWORDS)}
            access = access_for_user(user=users[sample["sample_id"]])
            for qa, evidence in asked_qa(sample):
                name = CATEGORY_NAMES[qa["category"]]
                asked += 1
                for variant in options.variant:
                    paths = [p for p in options.path if p == "inprocess" or variant == "hybrid"]
                    # Alternate which path asks first, so caches the first one fills favour neither.
                    paths = paths if asked % 2 else paths[::-1]
                    for protocol in options.protocol:
                        answers = {}
                        for path in paths:
                            if path == "inprocess":
                                found, seconds = ask_in_process(access, qa["question"], protocol, variant)
                            else:
                                found, seconds = ask_rest(clients[sample["sample_id"]], qa["question"], protocol)
                            runs[(variant, protocol, path)].add(found, seconds, protocol, evidence, name)
                            answers[path] = found
                        if len(answers) == 2 and _ranked(answers["inprocess"]) != _ranked(answers["rest"]):
                            differences.append(f"{protocol}: " + ranking_difference(qa["question"], answers))
                for ranker_name, ranker in rankers.items():
                    top = ranker.top(qa["question"], max(KS))
                    for k in KS:
                        for group in (name, "overall (1-4)"):
                            baselines[ranker_name][group][k].append(score(top[:k], evidence))
    return runs, baselines, differences


def _ranked(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(result["type"], result["id"]) for result in found]


def summary(runs: dict[tuple[str, str, str], Run]) -> str:
    """One Markdown row per run, for docs/benchmarks.md: frac@10 overall and per category, median latency."""
    k = max(KS)
    names = [CATEGORY_NAMES[c] for c in CATEGORIES]
    lines = [
        f"\n| variant | protocol | path | overall frac@{k} | " + " | ".join(names) + " | median ms |",
        "|---|---|---|---:|" + "---:|" * len(names) + "---:|",
    ]
    for (variant, protocol, path), run in runs.items():
        fracs = [statistics.fmean(s[2] for s in run.rows[group][k]) for group in ("overall (1-4)", *names)]
        cells = " | ".join(f"{value:.3f}" for value in fracs)
        lines.append(f"| {variant} | {protocol} | {path} | {cells} | {statistics.median(run.seconds) * 1000:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
