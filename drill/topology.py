"""The drilled topology: one PostgreSQL, one Redis, web A and web B, worker 1 and worker 2, one beat."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.serving import free_port
from drill.fleet import ROOT, Part, wait_healthy
from drill.servers import StandalonePostgres, StandaloneRedis

# Shorter than production so the drill sees each behaviour within minutes; every one is a documented setting.
DRILL_SETTINGS = {
    "MAINTENANCE_INTERVAL_MINUTES": "1",  # beat sends maintain-claims once a minute
    "QUEUE_VISIBILITY_TIMEOUT_S": "20",  # a lost worker's unacknowledged job goes back to the queue after this
    "WORKER_CONCURRENCY": "1",
    "LOG_LEVEL": "INFO",
}
# What docs/deploy.md tells an operator to set for every part (compose.yaml sets the same: tests/test_compose.py).
OPERATOR_SETTINGS = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")
# Everything the service could otherwise pick up from the caller's environment.
_INHERITED = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHON"}


@dataclass
class Topology:
    root: Path
    postgres: StandalonePostgres
    redis: StandaloneRedis
    webs: dict[str, tuple[Part, str]]  # name → (part, base URL)
    workers: list[Part]
    beat: Part
    admin_password: str

    @classmethod
    def plan(cls, root: Path) -> Topology:
        postgres = StandalonePostgres(root, free_port())
        redis = StandaloneRedis(root, free_port())
        env = {key: value for key, value in os.environ.items() if key in _INHERITED}
        env.update(DRILL_SETTINGS)
        admin_password = secrets.token_urlsafe(12)
        env.update(zip(OPERATOR_SETTINGS, (postgres.url, redis.url, secrets.token_urlsafe(50)), strict=True))
        env.update(
            MEMORY_DATA_DIR=str(root / "data"),  # blobs and beat's schedule; shared as a volume would be
            ADMIN_PASSWORD=admin_password,
        )
        logs = root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        webs = {}
        for name in ("A", "B"):
            port = free_port()
            webs[name] = (Part(f"web {name}", "web", {**env, "PORT": str(port)}, logs / f"web-{name}.log"),
                          f"http://127.0.0.1:{port}")  # fmt: skip
        workers = [
            Part(f"worker {n}", "worker", {**env, "WORKER_NAME": f"worker{n}@%h"}, logs / f"worker-{n}.log")
            for n in (1, 2)
        ]
        beat = Part("beat", "beat", env, logs / "beat.log")
        return cls(root, postgres, redis, webs, workers, beat, admin_password)

    @property
    def env(self) -> dict[str, str]:
        return self.beat.env

    def url(self, name: str) -> str:
        return self.webs[name][1]

    def parts(self) -> list[Part]:
        return [part for part, _ in self.webs.values()] + self.workers + [self.beat]

    def start(self) -> dict[str, float]:
        """Start the servers, then every part at once (two webs migrate concurrently: the advisory lock queues
        them); seconds until each web's /healthz answers."""
        self.postgres.start()
        self.redis.start()
        for part in self.parts():
            part.start()
        return {name: wait_healthy(url, part) for name, (part, url) in self.webs.items()}

    def bootstrap_owner(self) -> str:
        """The operator's first step: `manage.py bootstrap_owner`; returns the token it prints once."""
        printed = self.manage("bootstrap_owner")
        found = re.search(r"Access token\s*:\s*(\S+)", printed)
        if not found:
            raise RuntimeError(f"bootstrap_owner printed no token: {printed}")
        return found.group(1)

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def stop(self) -> None:
        for part in self.parts():
            part.stop()
        self.redis.stop()
        self.postgres.stop()
