"""A private PostgreSQL cluster a test can stop and start again: ``initdb`` + ``pg_ctl`` from the
installed binaries, in a temporary directory, on a port of its own (never the shared server)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Cluster:
    """A running throwaway cluster: its URL, and ``pg_ctl`` to stop or start it."""

    url: str
    data: Path
    pg_ctl: list[str]
    options: str

    def stop(self) -> None:
        """Stop the server as an operator would (``-m fast``: sessions are ended, nothing waits)."""
        _run([*self.pg_ctl, "-D", str(self.data / "db"), "-m", "fast", "-w", "stop"])

    def start(self) -> None:
        log = str(self.data / "log")
        _run([*self.pg_ctl, "-D", str(self.data / "db"), "-o", self.options, "-l", log, "-w", "start"])


def _binaries() -> tuple[str, str]:
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return str(folder / "initdb"), str(folder / "pg_ctl")
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise AssertionError("the store-down tests need PostgreSQL's initdb and pg_ctl installed")
    return initdb, pg_ctl


def _as_server_user() -> list[str]:
    """initdb refuses root: as root, run the server as ``postgres``."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    assert runuser is not None, "running as root needs runuser to start PostgreSQL as postgres"
    return [runuser, "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """A fresh cluster (trust auth, fsync off), stopped and removed afterwards. Its directory is a
    new one under the system temp dir: a test's own tmp_path is private to root, and the server may
    run as ``postgres``."""
    prefix = _as_server_user()
    initdb, pg_ctl = _binaries()
    data = Path(tempfile.mkdtemp(prefix="tickloop-web-pg-"))
    if prefix:
        shutil.chown(data, user="postgres")
    port = _free_port()
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    _run([*prefix, initdb, "-D", str(data / "db"), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
    cluster = Cluster(f"postgresql://postgres@127.0.0.1:{port}/postgres", data, [*prefix, pg_ctl], options)
    try:
        cluster.start()
        yield cluster
    finally:
        stop = [*cluster.pg_ctl, "-D", str(data / "db"), "-m", "immediate", "stop"]
        subprocess.run(stop, capture_output=True, check=False, timeout=60)
        shutil.rmtree(data, ignore_errors=True)
