"""LoCoMo evidence recall: do the turns that answer a question come back in the top k?

    .venv/bin/python bench/locomo.py ../shared/bench/locomo-dev.json [--reuse] [--variant hybrid keyword vector]

The data file is read from where it lies (its licence allows evaluation only; it is never copied here).
Each conversation goes into its own user's memory through the real ingestion service and pipeline (one
conversation per session; message id = dia id; speaker_a speaks as the memory's owner, with the session's
date and time). Every question of categories 1-4 is asked through the real search service; the results are
mapped back to dia ids in rank order (a claim gives its evidence messages, a chunk its message, a node
card none), duplicates dropped, and the first k ids scored:

- all@k: every evidence turn of the question is among them; any@k: at least one is;
- frac@k: the share of its evidence turns that are (the headline number).

Two protocols (`--protocol`): `results` (the default and the primary number) asks for 10 results, as an
assistant sees them, and scores the message ids of the first k *results*; `evidence` is the old protocol,
20 results asked and the first k distinct message ids among them scored. Each run also prints the share of
the top-10 slots taken by each result type (claim, chunk, node, ...).

Beside it, the same script computes two baselines over single turns: plain BM25 (Okapi, k1 1.5, b 0.75,
lower-cased words) and the same with the stop words of our keyword leg removed (the stronger of the two).
Uses its own embedded data directory (var/bench-locomo); `--reuse` asks again without ingesting again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMORY_DATA_DIR", str(ROOT / "var" / "bench-locomo"))
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


def ingest(sample: dict[str, Any]) -> Any:

    from memory.access import access_for_user
    from memory.models import Operation, User
    from memory.pipeline.runner import run_operation
    from memory.services.ingestion import ConversationIn, MessageIn, ingest_conversation

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
                speaker=turn["speaker"],
                timestamp=start + timedelta(seconds=30 * index),
            )
            for index, turn in enumerate(turns)
        ]
        conversation = ConversationIn(id=f"session_{number}", messages=messages)
        receipt = ingest_conversation(access=access, conversation=conversation)
        run_operation(receipt.operation.pk)
    failed = Operation.objects.filter(owner=user).exclude(status="completed").count()
    if failed:
        raise SystemExit(f"{failed} receipts of {username} did not complete")
    return user


def ask(
    access: Any, question: str, k: int, variant: str, protocol: str
) -> tuple[dict[int, list[str]], float, list[str]]:
    """Per k, the message ids scored; the time; the type of each of the first k results."""
    from memory.recall.search import SearchRequest, search

    begun = time.perf_counter()
    request = SearchRequest(
        query=question,
        limit=k if protocol == "results" else k * 2,
        use_vector=variant != "keyword",
        use_keyword=variant != "vector",
    )
    results = list(search(access, request))
    elapsed = time.perf_counter() - begun
    found: dict[int, list[str]] = {}
    for cut in KS:
        shown = results[:cut] if protocol == "results" else results
        ids: list[str] = []
        for result in shown:
            for evidence in result.evidence:
                if evidence["messageId"] and evidence["messageId"] not in ids:
                    ids.append(evidence["messageId"])
        found[cut] = ids if protocol == "results" else ids[:cut]
    return found, elapsed, [str(result.type) for result in results[:k]]


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--reuse", action="store_true", help="ask again without ingesting again")
    parser.add_argument("--variant", nargs="+", default=["hybrid"], choices=["hybrid", "keyword", "vector"])
    parser.add_argument("--protocol", nargs="+", default=["results", "evidence"], choices=["results", "evidence"])
    options = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.embedded import ensure_started
    from memory.access import access_for_user
    from memory.models import Claim, User

    ensure_started(settings.EMBEDDED_RUNTIME)
    call_command("migrate", verbosity=0)
    samples = json.loads(options.data.read_text())
    users = {}
    begun = time.perf_counter()
    ingested = 0
    for sample in samples:
        name = f"locomo-{sample['sample_id']}"
        existing = User.objects.filter(username=name).first()
        if options.reuse and existing:
            users[sample["sample_id"]] = existing
            continue
        users[sample["sample_id"]] = ingest(sample)
        ingested += sum(len(turns) for _, _, turns in sessions(sample["conversation"]))
    claims = Claim.objects.filter(owner__username__startswith="locomo-").count()
    print(f"ingested {ingested} turns in {time.perf_counter() - begun:.1f} s; {claims} claims in these memories")

    from memory.recall.terms import STOPWORDS

    baselines: dict[str, dict[str, dict[int, list[tuple[float, float, float]]]]] = {
        name: defaultdict(lambda: defaultdict(list)) for name in ("plain", "stop words removed")
    }
    runs = [f"{variant}, {protocol}" for variant in options.variant for protocol in options.protocol]
    ours: dict[str, dict[str, dict[int, list[tuple[float, float, float]]]]] = {
        run: defaultdict(lambda: defaultdict(list)) for run in runs
    }
    latencies: dict[str, list[float]] = defaultdict(list)
    slots: dict[str, Counter[str]] = defaultdict(Counter)
    for sample in samples:
        documents = [(t["dia_id"], t["text"]) for _, _, ts in sessions(sample["conversation"]) for t in ts]
        rankers = {"plain": BM25(documents), "stop words removed": BM25(documents, stopwords=STOPWORDS)}
        access = access_for_user(user=users[sample["sample_id"]])
        for qa in sample["qa"]:
            evidence = dia_ids(qa.get("evidence", []))
            if qa["category"] not in CATEGORIES or not evidence:
                continue
            name = CATEGORY_NAMES[qa["category"]]
            for variant in options.variant:
                for protocol in options.protocol:
                    run = f"{variant}, {protocol}"
                    found, elapsed, types = ask(access, qa["question"], max(KS), variant, protocol)
                    latencies[run].append(elapsed)
                    slots[run].update(types)
                    for k in KS:
                        for group in (name, "overall (1-4)"):
                            ours[run][group][k].append(score(found[k], evidence))
            for ranker_name, ranker in rankers.items():
                top = ranker.top(qa["question"], max(KS))
                for k in KS:
                    for group in (name, "overall (1-4)"):
                        baselines[ranker_name][group][k].append(score(top[:k], evidence))

    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    for ranker_name, rows in baselines.items():
        print(table(f"BM25 over single turns, {ranker_name} (baseline)", rows))
        print()
    for run, rows in ours.items():
        median_ms = statistics.median(latencies[run]) * 1000
        print()
        print(table(f"memory search: {run} (median {median_ms:.1f} ms per question, in-process)", rows))
        taken = sum(slots[run].values())
        shares = ", ".join(f"{kind} {count / taken:.1%}" for kind, count in slots[run].most_common())
        print(f"\nslots of the first {max(KS)} results: {shares}")


if __name__ == "__main__":
    main()
