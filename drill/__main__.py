"""`make drill`: the production topology, proven. See drill/__init__.py."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from drill.checks import CHECKS, State
from drill.topology import Topology


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the data and logs directory even on success")
    arguments = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memory-drill-"))
    root.chmod(0o755)  # PostgreSQL runs as another account under root and must reach its data directory
    topology = Topology.plan(root)
    print(f"drill: standalone PostgreSQL + Redis, web A + web B, worker 1 + worker 2, one beat; logs in {root}/logs")
    failed = False
    started = time.monotonic()
    try:
        ready = topology.start()
        print("  ok    start: " + ", ".join(f"web {name} healthy after {s:.1f} s" for name, s in ready.items()))
        state = State()
        for index, (name, check) in enumerate(CHECKS):
            began = time.monotonic()
            try:
                seen = check(topology, state)
            except Exception as error:  # the drill reports every failure and stops
                failed = True
                print(f"  FAIL  {name}: {str(error)[:2000]}")
                traceback.print_exc(limit=3)
                for skipped, _ in CHECKS[index + 1 :]:
                    print(f"  skip  {skipped}")
                break
            print(f"  ok    {name}: {seen} ({time.monotonic() - began:.1f} s)")
        sizes = ", ".join(f"{part.name} {part.resident_mb():.0f} MB" for part in topology.parts() if part.running)
        print(f"  info  resident memory at the end (RSS per process group): {sizes}")
    except Exception as error:
        failed = True
        print(f"  FAIL  start: {error}")
    finally:
        topology.stop()
    print(f"drill: {'FAILED' if failed else 'passed'} in {time.monotonic() - started:.0f} s")
    if failed or arguments.keep:
        print(f"drill: logs kept in {root}/logs")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
