"""How fast the local MiniLM embedder runs on this machine: throughput per batch size and query latency.

    .venv/bin/python bench/embedding_speed.py

Embeds ~2,000 synthetic memory-like sentences with batch sizes 1, 16 and 64 (median of 3 runs each), then times
200 single queries. Prints a Markdown table ready for docs/benchmarks.md, with the machine it ran on.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

# Run as a script, the repository root is not on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BATCH_SIZES = (1, 16, 64)
RUNS = 3
SENTENCES = 2_000
QUERIES = 200
SEED = 20_240_601  # fixed, so every run embeds the same texts

# Sentence templates of the kind people ask an assistant to remember, filled from the slots below.
_TEMPLATES = [
    "{person} moved to {city} {when}.",
    "{person} is allergic to {allergen}.",
    "Remind me to {chore} {when}.",
    "{person} prefers {drink} over {other_drink}, except {when}.",
    "The {meeting} was moved to {when} because {reason}.",
    "{person} started learning {hobby} {when} and practises {count} times a week.",
    "Project {project} ships in Q{quarter} if {condition}.",
    "{person} said the {event} costs about {amount} euros, which is {comparison} than we planned.",
    "We agreed that {person} owns the {work} until {deadline}.",
    "{person} {feeling} {dislike}.",
    "Note: {person} asked for the {work} notes before the {meeting}.",
    "{person} will be in {city} for the {event} {when}; book a table near the station.",
]
_SLOTS = {
    "person": ["My sister", "Alice", "Bob", "Our team lead", "My landlord", "The client", "Grandpa", "Priya", "Tom"],
    "city": ["Berlin", "Lisbon", "Osaka", "Toronto", "Nairobi", "Montreal", "Porto", "Seoul"],
    "when": [
        "yesterday",
        "last week",
        "on Monday",
        "every morning",
        "since 2019",
        "in March",
        "tonight",
        "next Friday",
    ],
    "allergen": ["peanuts", "cats", "penicillin", "pollen", "shellfish", "latex"],
    "chore": ["call the dentist", "renew my passport", "water the plants", "pay rent", "back up the laptop"],
    "drink": ["tea", "coffee", "sparkling water", "oat milk"],
    "other_drink": ["juice", "beer", "soda", "red wine"],
    "meeting": ["budget review", "design sync", "offsite", "launch review", "one-on-one"],
    "reason": ["the numbers are late", "half the team is away", "legal needs another pass", "the room is booked"],
    "hobby": ["Japanese", "the cello", "Rust", "pottery", "chess", "bouldering"],
    "count": ["two", "three", "four", "five"],
    "project": ["Falcon", "Atlas", "Juniper", "Nimbus", "Orca"],
    "quarter": ["1", "2", "3", "4"],
    "condition": ["the API freeze holds", "QA signs off", "the vendor delivers on time", "hiring goes to plan"],
    "event": ["wedding", "conference", "birthday party", "move", "school trip"],
    "amount": [str(hundreds * 100) for hundreds in range(2, 90)],
    "comparison": ["more", "less"],
    "work": ["hiring plan", "roadmap", "database migration", "quarterly report"],
    "deadline": ["the end of the quarter", "the reorg", "Priya is back from leave", "the board meeting"],
    "feeling": ["hates", "loves", "cannot stand", "is fine with"],
    "dislike": ["early meetings", "spicy food", "long flights", "jazz", "open-plan offices"],
}
_QUESTIONS = [
    "where does {person} live now?",
    "what is {person} allergic to?",
    "what did we decide about the {meeting}?",
    "when does project {project} ship?",
    "what does {person} like to drink?",
    "who owns the {work}?",
]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(**{slot: rng.choice(values) for slot, values in _SLOTS.items()})


def sentences(count: int, rng: random.Random) -> list[str]:
    """`count` distinct, varied sentences (dict keys keep the first-seen order)."""
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen[_fill(rng.choice(_TEMPLATES), rng)] = None
    return list(seen)


def queries(count: int, rng: random.Random) -> list[str]:
    return [_fill(rng.choice(_QUESTIONS), rng) for _ in range(count)]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.test_settings")
    import django

    django.setup()  # settings only: no database or Redis is started

    import onnxruntime

    from memory.embeddings.minilm import MiniLMEmbedder

    rng = random.Random(SEED)  # noqa: S311 (reproducible sample text, not a secret)
    texts = sentences(SENTENCES, rng)
    asked = queries(QUERIES, rng)

    started = time.perf_counter()
    MiniLMEmbedder().embed_query("warm up")  # loads and verifies the model once for the whole process
    load_s = time.perf_counter() - started

    throughput: dict[int, float] = {}
    for batch_size in BATCH_SIZES:
        embedder = MiniLMEmbedder(batch_size=batch_size)
        runs = []
        for _ in range(RUNS):
            started = time.perf_counter()
            embedder.embed_documents(texts)
            runs.append(len(texts) / (time.perf_counter() - started))
        throughput[batch_size] = statistics.median(runs)

    embedder = MiniLMEmbedder()
    latencies_ms = []
    for query in asked:
        started = time.perf_counter()
        embedder.embed_query(query)
        latencies_ms.append((time.perf_counter() - started) * 1000)
    latencies_ms.sort()

    words = statistics.mean(len(text.split()) for text in texts)
    print(
        f"Embedding speed: {embedder.model_id} ({embedder.dimensions} dims), "
        f"{len(texts)} sentences of {words:.1f} words on average"
    )
    print(
        f"Machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, onnxruntime {onnxruntime.__version__}"
    )
    print(f"Model load and checksum: {load_s:.2f} s")
    print()
    print(f"| batch size | sentences/s (median of {RUNS}) |")
    print("|-----------:|--------------------------:|")
    for batch_size, rate in throughput.items():
        print(f"| {batch_size:>10} | {rate:>25.1f} |")
    print()
    p95 = latencies_ms[int(len(latencies_ms) * 0.95) - 1]
    print(f"Single query: median {statistics.median(latencies_ms):.2f} ms, p95 {p95:.2f} ms over {len(asked)} queries")


if __name__ == "__main__":
    main()
