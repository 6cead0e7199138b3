"""The drill's checks, in the order they run. Each takes the running topology and the drill's state, asserts
what an operator relies on, and returns one line saying what it saw."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from drill.client import Browser, DrillFailure, answer, mcp_call, post, receipt_until
from drill.fleet import Part
from drill.topology import Topology

QUESTION = "When is the quarterly report due?"


def conversation(conversation_id: str, lines: list[str]) -> dict[str, Any]:
    messages = [
        {"id": f"{conversation_id}-{n}", "role": "user" if n % 2 == 0 else "assistant", "content": text,
         "timestamp": f"2026-11-{1 + n // 1440 % 28:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00Z"}
        for n, text in enumerate(lines)
    ]  # fmt: skip
    return {"conversation": {"id": conversation_id, "messages": messages}}


FIRST = conversation(
    "drill-first",
    [
        "I promised Dana I will send her the quarterly report by Friday.",
        "Noted: you owe Dana the quarterly report by Friday.",
        "My sister Mira lives in Lisbon and works as a marine biologist.",
        "Got it, Mira is a marine biologist in Lisbon.",
    ],
)


@dataclass
class State:
    owner_token: str = ""


def check_no_embedded_runtime(topology: Topology, state: State) -> str:
    data = topology.root / "data"
    embedded = [name for name in ("postgres", "redis", "run", "leases.lock", "runtime.lock") if (data / name).exists()]
    if embedded:
        raise DrillFailure(f"the embedded runtime left {embedded} in {data}")
    roles = topology.postgres.sql("SELECT rolsuper FROM pg_roles WHERE rolname = 'memory'")
    if roles != [(False,)]:
        raise DrillFailure(f"the service's role should exist and not be a superuser: {roles}")
    applied = topology.postgres.sql("SELECT count(*), count(DISTINCT (app, name)) FROM django_migrations")
    if applied[0][0] != applied[0][1]:
        raise DrillFailure(f"a migration was recorded twice: {applied}")
    versions = topology.postgres.sql(
        "SELECT current_setting('server_version'), extversion FROM pg_extension WHERE extname = 'vector'"
    )
    return (f"PostgreSQL {versions[0][0]} + pgvector {versions[0][1]} on 127.0.0.1:{topology.postgres.port}, Redis "
            f"{topology.redis.version} on 127.0.0.1:{topology.redis.port}, over TCP with passwords; no embedded server "
            f"in {data}; {applied[0][0]} migrations, each applied once by two concurrent `make web`")  # fmt: skip


def check_ingest_a_receipt_b(topology: Topology, state: State) -> str:
    state.owner_token = topology.bootstrap_owner()
    a, b = topology.url("A"), topology.url("B")
    receipt = answer(a, "/ingest/conversation", state.owner_token, FIRST)
    started = time.monotonic()
    done = receipt_until(b, state.owner_token, receipt["operationId"], {"completed", "failed"})
    if done["status"] != "completed":
        raise DrillFailure(f"the receipt read through B ended {done['status']}: {done}")
    return f"accepted by A ({receipt['status']}), completed as read through B after {time.monotonic() - started:.1f} s"


def alike(one: list[dict[str, Any]], other: list[dict[str, Any]]) -> bool:
    """The same search results, each vector leg's score to 1e-5: a web process that ranks its held copy of a small
    memory's vectors (memory.recall.held_vectors) computes that score in numpy, one that sends the statement in
    pgvector, and the two may differ in the sixth place."""

    def apart(results: list[dict[str, Any]]) -> tuple[list[Any], list[float]]:
        scores = [leg["score"] for result in results for name, leg in result["legs"].items() if "vector" in name]
        rest = [
            {**result, "legs": {name: leg["rank"] if "vector" in name else leg for name, leg in result["legs"].items()}}
            for result in results
        ]
        return rest, scores

    (rest, scores), (other_rest, other_scores) = apart(one), apart(other)
    return rest == other_rest and all(abs(a - b) <= 1e-5 for a, b in zip(scores, other_scores, strict=True))


def check_same_answers(topology: Topology, state: State) -> str:
    seen = {}
    for name in ("A", "B"):
        url = topology.url(name)
        search = answer(url, "/query/search", state.owner_token, {"query": QUESTION})
        commitments = answer(url, "/commitments/open", state.owner_token, {})
        seen[name] = (search["searchResults"], commitments)
    if not alike(seen["A"][0], seen["B"][0]) or seen["A"][1] != seen["B"][1]:
        raise DrillFailure(f"A and B answer differently:\nA: {seen['A']}\nB: {seen['B']}")
    results, commitments = seen["A"]
    if not results or "quarterly report" not in results[0]["text"].lower():
        raise DrillFailure(f"search found nothing about the report: {results}")
    listed = str(commitments)
    if "quarterly report" not in listed.lower():
        raise DrillFailure(f"the promise to Dana is not an open commitment: {commitments}")
    return f"/query/search ({len(results)} results) and /commitments/open identical on A and B"


def check_mcp_on_both(topology: Topology, state: State) -> str:
    seen = {}
    for name in ("A", "B"):  # the answer's as_of stamp differs by the moment asked; the tools and results may not
        tools, found = mcp_call(topology.url(name), state.owner_token, "search_memory", {"query": QUESTION})
        seen[name] = (tools, found["searchResults"])
    if seen["A"][0] != seen["B"][0] or not alike(seen["A"][1], seen["B"][1]):
        raise DrillFailure(f"MCP answers differ between A and B:\nA: {seen['A']}\nB: {seen['B']}")
    tools, found = seen["A"]
    if "quarterly report" not in str(found).lower():
        raise DrillFailure(f"search_memory over MCP found nothing about the report: {found}")
    return f"MCP SDK client over /mcp: {len(tools)} tools and the same search_memory answer on A and B"


def check_revocation_reaches_b(topology: Topology, state: State) -> str:
    a, b = topology.url("A"), topology.url("B")
    secret = topology.manage("issue_token", "--user", "admin", "--label", "drill: revoke me", "--scopes", "read")
    secret = secret.strip()
    for url in (a, b, b):  # B has just used it (twice: anything it may cache about the token is warm)
        who = answer(url, "/whoami", secret)
    browser = Browser(a, "admin", topology.admin_password)
    try:
        revoked = browser.submit(f"/ui/tokens/{who['token']['id']}/revoke")
    finally:
        browser.close()
    if revoked.status_code != 200 or "Revoked" not in revoked.text:
        raise DrillFailure(f"revoking through A's web UI answered {revoked.status_code}")
    refused = post(b, "/whoami", secret)
    code = refused.json().get("error", {}).get("code") if refused.status_code == 401 else None
    if code != "TOKEN_REVOKED":
        raise DrillFailure(f"B's next request with the revoked token answered {refused.status_code}: {refused.text}")
    headers = {"Authorization": f"Bearer {secret}", "Accept": "application/json, text/event-stream"}
    mcp = httpx.post(f"{b}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
    if mcp.status_code != 401:
        raise DrillFailure(f"B's /mcp took the revoked token: {mcp.status_code} {mcp.text[:200]}")
    return "revoked in A's web UI; B's very next REST request and /mcp call answered 401 TOKEN_REVOKED"


def _task_ids(text: str, task: str, event: str) -> list[str]:
    return re.findall(rf"{re.escape(task)}\[([0-9a-f-]{{36}})\] {event}", text)


def check_beat_once(topology: Topology, state: State) -> str:
    """maintain-claims is due every minute in the drill: each time beat sends it, exactly one worker runs it."""
    task = "memory.maintain_claims"
    deadline = time.monotonic() + 150
    while True:  # a consistent reading: beat's count the same before and after the workers' logs were read
        sent = topology.beat.log_text().count(f"Sending due task maintain-claims ({task})")
        received = Counter(i for w in topology.workers for i in _task_ids(w.log_text(), task, "received"))
        done = Counter(i for w in topology.workers for i in _task_ids(w.log_text(), task, "succeeded"))
        stable = sent == topology.beat.log_text().count(f"Sending due task maintain-claims ({task})")
        if stable and sent and len(done) == sent:
            break
        if time.monotonic() > deadline:
            raise DrillFailure(f"beat sent {task} {sent} times; workers received {dict(received)}, ran {dict(done)}")
        time.sleep(1)
    senders = [
        part.name for part in topology.parts() if "Sending due task" in part.log_text() and part is not topology.beat
    ]
    if len(received) != sent or max(received.values()) > 1 or max(done.values()) > 1 or senders:
        raise DrillFailure(f"beat sent {sent}, workers received {dict(received)}, ran {dict(done)}, senders {senders}")
    by_worker = [len(_task_ids(worker.log_text(), task, "succeeded")) for worker in topology.workers]
    return f"beat sent maintain-claims {sent} time(s), run {sent} in all (per worker {by_worker}), no other sender"


def _answers_after(url: str, secret: str, timeout: float = 60) -> tuple[float, Counter[str]]:
    """Seconds until `url` answers a search again, and what it answered meanwhile (status and error code)."""
    started = time.monotonic()
    meanwhile: Counter[str] = Counter()
    while True:
        try:
            response = post(url, "/query/search", secret, {"query": QUESTION})
        except httpx.HTTPError as error:
            meanwhile[type(error).__name__] += 1
        else:
            if response.status_code == 200:
                return time.monotonic() - started, meanwhile
            meanwhile[f"{response.status_code} {response.json().get('error', {}).get('code')}"] += 1
        if time.monotonic() - started > timeout:
            raise DrillFailure(f"{url} did not answer a search within {timeout:.0f} s: {dict(meanwhile)}")
        time.sleep(0.2)


def check_postgres_restart(topology: Topology, state: State) -> str:
    topology.postgres.restart()
    seen = []
    for name in ("A", "B"):
        seconds, meanwhile = _answers_after(topology.url(name), state.owner_token)
        if any(not key.startswith("503") for key in meanwhile):
            raise DrillFailure(f"web {name} answered outside the outage shape while recovering: {dict(meanwhile)}")
        seen.append(f"{name} after {seconds:.1f} s ({sum(meanwhile.values())} answers 503 first)")
    if not all(part.running for part, _ in topology.webs.values()):
        raise DrillFailure("a web process exited during the PostgreSQL restart")
    return "PostgreSQL restarted (fast); both webs answered again without a restart: " + ", ".join(seen)


LONG = conversation(
    "drill-long",
    [f"Entry {n}: on day {n} I walked {n % 7 + 2} kilometres along the river with Mira, talked about her "
     f"research on seagrass meadows and planned the next trip to the coast." for n in range(400)],
)  # fmt: skip


def _runner_part(topology: Topology, runner: str) -> Part | None:
    pid = runner.rpartition(":")[2]
    return next((w for w in topology.workers if pid.isdigit() and int(pid) in w.pids()), None)


def check_worker_killed_mid_job(topology: Topology, state: State) -> str:
    a, b = topology.url("A"), topology.url("B")
    receipt = answer(a, "/ingest/conversation", state.owner_token, LONG)
    operation_id = receipt["operationId"]
    deadline = time.monotonic() + 120
    victim = None
    while victim is None:
        rows = topology.postgres.sql("SELECT status, runner, step FROM memory_operation WHERE id = %s", (operation_id,))
        status, runner, step = rows[0]
        if status == "completed":
            raise DrillFailure("the long job finished before a worker could be killed under it")
        if status == "processing" and runner and step:  # a step under way, not only taken off the queue
            victim = _runner_part(topology, runner)
        if time.monotonic() > deadline:
            raise DrillFailure(f"no worker picked up the long job: {rows}")
        time.sleep(0.05)
    victim.kill()
    killed_at = time.monotonic()
    survivor = next(w for w in topology.workers if w is not victim)
    interrupted = receipt_until(b, state.owner_token, operation_id, {"failed", "completed"}, timeout=60)
    if interrupted["status"] == "failed" and interrupted.get("errorCode") != "PROCESSING_INTERRUPTED":
        raise DrillFailure(
            f"the killed job's receipt is not PROCESSING_INTERRUPTED (the code to retry on): {interrupted}"
        )
    how = _finished_after_kill(topology, state, operation_id, killed_at)
    if interrupted["status"] == "failed":
        how = f"read PROCESSING_INTERRUPTED at once, {how}"
    runner = topology.postgres.sql("SELECT runner FROM memory_operation WHERE id = %s", (operation_id,))[0][0]
    if _runner_part(topology, runner) is not survivor:
        raise DrillFailure(f"the job was finished by {runner}, not by {survivor.name}")
    done = answer(b, "/source/processing/get", state.owner_token, {"operationId": operation_id})
    chunks = topology.postgres.sql(
        "SELECT count(*), count(DISTINCT (c.source_id, c.ordinal)) FROM memory_chunk c "
        "JOIN memory_source s ON s.id = c.source_id JOIN memory_operation o ON o.source_id IN (s.id, s.parent_id) "
        "WHERE o.id = %s", (operation_id,)
    )  # fmt: skip
    if done["status"] != "completed" or chunks[0][0] != chunks[0][1] or chunks[0][0] != done["counts"]["chunks"]:
        raise DrillFailure(f"after the kill: {done['status']}, chunks {chunks}, counts {done['counts']}")
    return f"{victim.name} killed (-9) during step {step!r}; {how}; {chunks[0][0]} chunks, none twice"


def _finished_after_kill(topology: Topology, state: State, operation_id: str, killed_at: float) -> str:
    """Wait for the other worker to take the job back (redelivery after QUEUE_VISIBILITY_TIMEOUT_S); if the
    receipt still reads interrupted well past that, retry it as a client would."""
    b = topology.url("B")
    redelivery_s = int(topology.env["QUEUE_VISIBILITY_TIMEOUT_S"]) + 30
    retried = False
    while True:
        receipt = answer(b, "/source/processing/get", state.owner_token, {"operationId": operation_id})
        waited = time.monotonic() - killed_at
        if receipt["status"] == "completed":
            how = "retried through B" if retried else "redelivered to the other worker without a retry"
            return f"{how}, completed {waited:.0f} s after the kill"
        if receipt["status"] == "failed" and waited > redelivery_s and not retried:
            retry = post(b, "/source/processing/retry", state.owner_token, {"operationId": operation_id})
            retried = retry.status_code == 200  # 409 when the redelivered job took it meanwhile
        if waited > redelivery_s + 240:
            raise DrillFailure(f"the killed job is still {receipt['status']} {waited:.0f} s later: {receipt}")
        time.sleep(0.5)


def check_web_a_stopped(topology: Topology, state: State) -> str:
    part, a = topology.webs["A"]
    b = topology.url("B")
    before = answer(b, "/query/search", state.owner_token, {"query": QUESTION})["searchResults"]
    part.stop()
    try:
        httpx.get(f"{a}/healthz", timeout=5)
    except httpx.ConnectError:
        pass
    else:
        raise DrillFailure("web A still answers after its stop")
    answer(b, "/whoami", state.owner_token)
    results = answer(b, "/query/search", state.owner_token, {"query": QUESTION})["searchResults"]
    if not alike(results, before):
        raise DrillFailure("B answers the search differently once A is gone")
    return "web A stopped (SIGTERM); B answers /whoami and the same search"


BACKED_UP = ("memory_source", "memory_chunk", "memory_claim", "memory_node", "memory_accesstoken", "memory_operation")


def check_backup_restores(topology: Topology, state: State) -> str:
    """A pg_dump taken while the service runs restores into a fresh database with every row and vector."""
    dump = topology.root / "memory.dump"
    topology.postgres.dump(dump)
    topology.postgres.restore(dump, "memory_restored")
    counted = {}
    for database in ("memory", "memory_restored"):
        counted[database] = [
            topology.postgres.sql(f"SELECT count(*) FROM {table}", database=database)[0][0]  # noqa: S608 (constants)
            for table in BACKED_UP
        ]
        counted[database].append(
            topology.postgres.sql("SELECT count(*) FROM memory_chunk WHERE embedding IS NOT NULL", database=database)[
                0
            ][0]
        )
    if counted["memory"] != counted["memory_restored"] or not all(counted["memory"]):
        raise DrillFailure(f"restored counts differ: {counted}")
    size = dump.stat().st_size / 1e6
    return (
        f"pg_dump of the live database ({size:.1f} MB) restored: the same rows in {len(BACKED_UP)} tables and vectors"
    )


CHECKS: list[tuple[str, Callable[[Topology, State], str]]] = [
    ("standalone servers, no embedded runtime", check_no_embedded_runtime),
    ("ingest through A, receipt through B", check_ingest_a_receipt_b),
    ("same answers on A and B", check_same_answers),
    ("MCP on both webs", check_mcp_on_both),
    ("a token revoked through A is refused by B", check_revocation_reaches_b),
    ("beat runs maintenance once", check_beat_once),
    ("PostgreSQL restart", check_postgres_restart),
    ("a worker killed mid-job", check_worker_killed_mid_job),
    ("backup and restore", check_backup_restores),
    ("web A stopped, B serves", check_web_a_stopped),
]
