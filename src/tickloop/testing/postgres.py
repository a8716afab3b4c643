"""Find a PostgreSQL server for tests, and give each test its own schema.

Order: ``TICKLOOP_TEST_DATABASE_URL`` if set; else ``127.0.0.1:5432`` (user ``postgres``, database
``test``) if it answers; else a throwaway server started from installed binaries (``initdb`` +
``pg_ctl`` in a temporary directory on a free port, stopped at exit); else None, and the caller
skips loudly. Each test gets a fresh schema named in the URL's ``search_path``, dropped after, so
parallel runs and reruns never collide.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ENV_URL = "TICKLOOP_TEST_DATABASE_URL"
LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass(slots=True)
class Found:
    """Where the server is, and why we didn't find one when we didn't."""

    url: str | None
    tried: list[str] = field(default_factory=list)


def answers(url: str, timeout: int = 2) -> str | None:
    """None if ``url`` accepts a connection, else the reason it didn't."""
    import psycopg  # noqa: PLC0415  (only tests that need PostgreSQL pay for it)

    try:
        with psycopg.connect(url, connect_timeout=timeout, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


def find_server() -> Found:
    """The first server that answers, in the documented order."""
    found = Found(None)
    if os.environ.get(ENV_URL):
        url = os.environ[ENV_URL]
        problem = answers(url)
        if problem is None:
            found.url = url
            return found
        found.tried.append(f"{ENV_URL}: {problem}")
        return found  # an explicit URL that fails is an error to report, not a cue to improvise
    problem = answers(LOCAL_URL)
    if problem is None:
        found.url = LOCAL_URL
        return found
    found.tried.append(f"{LOCAL_URL}: {problem}")
    started, why = start_throwaway()
    found.url = started
    if why:
        found.tried.append(why)
    return found


def _binaries() -> tuple[str, str] | None:
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        initdb, pg_ctl = Path(folder, "initdb"), Path(folder, "pg_ctl")
        if initdb.exists() and pg_ctl.exists():
            return str(initdb), str(pg_ctl)
    initdb_path, pg_ctl_path = shutil.which("initdb"), shutil.which("pg_ctl")
    return (initdb_path, pg_ctl_path) if initdb_path and pg_ctl_path else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user_prefix() -> list[str] | None:
    """``[]`` when we may run the server ourselves; ``runuser -u postgres --`` as root; else None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    import pwd  # noqa: PLC0415  (POSIX only)

    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None
    runuser = shutil.which("runuser")
    return None if runuser is None else [runuser, "-u", "postgres", "--"]


def start_throwaway() -> tuple[str | None, str]:
    """Start a private server from installed binaries; (url, "") or (None, why not)."""
    binaries, prefix = _binaries(), _server_user_prefix()
    if binaries is None:
        return None, "no initdb/pg_ctl found under /usr/lib/postgresql/*/bin or on PATH"
    if prefix is None:
        return None, "initdb refuses to run as root and there is no `postgres` user to run it as"
    initdb, pg_ctl = [*prefix, binaries[0]], [*prefix, binaries[1]]
    data = Path(tempfile.mkdtemp(prefix="tickloop-pg-"))
    if prefix:
        shutil.chown(data, user="postgres")
    port = _free_port()
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    try:
        _run([*initdb, "-D", str(data / "db"), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
        _run([*pg_ctl, "-D", str(data / "db"), "-o", options, "-l", str(data / "log"), "-w", "start"])
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(data, ignore_errors=True)
        return None, f"throwaway server did not start: {exc}"
    atexit.register(_stop, pg_ctl, data)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres", ""


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=120)  # noqa: S603  (installed binaries, no shell)


def _stop(pg_ctl: list[str], data: Path) -> None:
    stop = [*pg_ctl, "-D", str(data / "db"), "-m", "immediate", "stop"]
    subprocess.run(stop, capture_output=True, check=False)  # noqa: S603  (installed binary, no shell)
    shutil.rmtree(data, ignore_errors=True)


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose connections use ``schema`` first (libpq ``options`` parameter)."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


def create_schema(url: str) -> tuple[str, str]:
    """A fresh, uniquely named schema: (its name, a URL whose connections use it)."""
    import psycopg  # noqa: PLC0415

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    return schema, with_search_path(url, schema)


def drop_schema(url: str, schema: str) -> None:
    """Drop a schema made by ``create_schema`` and everything in it."""
    import psycopg  # noqa: PLC0415

    if not schema.startswith("t_") or not schema[2:].isalnum():
        raise ValueError(f"refusing to drop {schema!r}: not a test schema")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())
