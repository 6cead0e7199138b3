"""The service's parts as an operator starts them: `make web`, `make worker`, `make beat`, each its own process
group with its own log, configured only through the environment docs/deploy.md lists."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make") or "make"


@dataclass
class Part:
    name: str
    target: str  # the make target
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [MAKE, "--no-print-directory", self.target], cwd=ROOT, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def pids(self) -> set[int]:
        """Every live process of this part's group (make, the Python process, pool children)."""
        if self.process is None:
            return set()
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getpgid(int(entry.name)) == self.process.pid:
                        found.add(int(entry.name))
                except ProcessLookupError:
                    continue
        return found

    def resident_mb(self) -> float:
        """Resident memory of the whole group (RSS summed; shared pages counted in each process)."""
        total_kb = 0
        for pid in self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
            total_kb += int(found.group(1)) if found else 0
        return total_kb / 1024

    def kill(self) -> None:
        """SIGKILL to the whole group: no shutdown handler runs, as when a host dies or the OOM killer strikes."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM to the group (a graceful stop), then SIGKILL after `timeout`."""
        if not self.running or self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        except ProcessLookupError:
            pass

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def wait_healthy(url: str, part: Part, timeout: float = 180) -> float:
    """Seconds until `url`/healthz answers 200; fails if the part exits first."""
    started = time.monotonic()
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        if not part.running:
            raise RuntimeError(f"{part.name} exited; see {part.log}")
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"{part.name} not healthy after {timeout:.0f} s; see {part.log}")
        time.sleep(0.5)
