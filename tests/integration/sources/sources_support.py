"""Helpers shared by the source integration tests (the fixtures live in conftest.py)."""

from __future__ import annotations

import imaplib
import itertools
import os
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class Repo:
    """A real git repository the test drives with the git CLI."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV, "HOME": str(self.path.parent)}
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, env=env, check=True, timeout=120
        )
        return done.stdout.decode().strip()

    def commit(self, subject: str, name: str = "file.txt", content: str | None = None) -> str:
        (self.path / name).write_text(content if content is not None else subject, encoding="utf-8")
        self.git("add", name)
        self.git("commit", "-q", "-m", subject)
        return self.git("rev-parse", "HEAD")


def make_maildir(path: Path) -> Path:
    for sub in ("cur", "new", "tmp"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    return path


def deliver(maildir: Path, raw: bytes, key: str) -> None:
    """Drop a message into ``new/`` the way a delivery agent does (tmp, then rename)."""
    tmp = maildir / "tmp" / key
    tmp.write_bytes(raw)
    tmp.rename(maildir / "new" / key)


@dataclass
class HttpServer:
    """A local HTTP server: ``routes`` maps a path to (status, body); ``hits`` counts requests."""

    port: int
    routes: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@dataclass(frozen=True)
class Imap:
    """A running throwaway Dovecot: TLS on ``tls_port``, STARTTLS on ``plain_port``."""

    host: str
    tls_port: int
    plain_port: int
    user: str
    password: str
    ca_file: str

    def client(self) -> imaplib.IMAP4_SSL:
        context = ssl.create_default_context(cafile=self.ca_file)
        client = imaplib.IMAP4_SSL(self.host, self.tls_port, ssl_context=context, timeout=10)
        client.login(self.user, self.password)
        return client

    def append(self, raw: bytes, folder: str = "INBOX") -> None:
        with self.client() as client:
            status, data = client.append(folder, None, None, raw)
            assert status == "OK", data

    def new_folder(self) -> str:
        """A fresh, empty folder, so tests sharing the server don't see each other's mail."""
        name = f"t{next(_FOLDERS)}"
        with self.client() as client:
            status, data = client.create(name)
            assert status == "OK", data
        return name


_FOLDERS = itertools.count(1)
