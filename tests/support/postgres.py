"""A throwaway PostgreSQL server for tests and benchmarks.

``throwaway_postgres()`` runs ``initdb`` in a temporary directory, starts the server with
``pg_ctl`` on a free loopback port, yields its SQLAlchemy URL, and always stops it and deletes
the directory afterwards. As root, the server runs as the ``postgres`` system user, because
PostgreSQL refuses to run as root.

Command line (what ``make test`` uses)::

    python -m tests.support.postgres -- pytest -q

runs the command with ``ALMANAC_TEST_PG_URL`` set and stops the server however it ends
(normal exit, failure, Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

ENV_URL = "ALMANAC_TEST_PG_URL"
SEARCH_DIRS = (
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
)


def find_pg_bin(name: str) -> str:
    """Return the path of a PostgreSQL server binary (initdb, pg_ctl, ...)."""
    for folder in SEARCH_DIRS:
        candidate = Path(folder) / name
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"PostgreSQL binary {name!r} not found in PATH or {SEARCH_DIRS}")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


def _run(argv: list[str]) -> None:
    result = subprocess.run(_as_server_user(argv), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Start a private PostgreSQL server; yield ``postgresql+psycopg://...`` for it."""
    root = Path(tempfile.mkdtemp(prefix="almanac-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(sock, "postgres", "postgres")
    port = free_port()
    started = False
    try:
        _run(
            [
                find_pg_bin("initdb"),
                "-D",
                str(data),
                "-U",
                "almanac",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )
        options = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run(
            [
                find_pg_bin("pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        started = True
        _run(
            [
                find_pg_bin("createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "almanac",
                "almanac_test",
            ]
        )
        yield f"postgresql+psycopg://almanac@127.0.0.1:{port}/almanac_test"
    finally:
        if started:
            try:
                _run([find_pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
            except RuntimeError as exc:  # pragma: no cover - logged, the directory still goes
                log.warning("could not stop throwaway PostgreSQL: %s", exc)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def new_database(pg_url: str, prefix: str = "t") -> Iterator[str]:
    """A new, empty database on the server of ``pg_url``, dropped afterwards (connections
    or not); yields its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    if "--" in argv:
        argv = argv[argv.index("--") + 1 :]
    if not argv:
        print("usage: python -m tests.support.postgres -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_interrupt)
    with throwaway_postgres() as url:
        print(f"throwaway PostgreSQL at {url}", file=sys.stderr)
        env = {**os.environ, ENV_URL: url}
        child = subprocess.Popen(argv, env=env)
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.terminate()
            child.wait()
            return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
