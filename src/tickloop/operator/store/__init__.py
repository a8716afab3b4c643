"""The operator store: one interface (``Store``), backends chosen by URL (``open_store``).

==========================  ===============================================================
URL                         backend
==========================  ===============================================================
(empty)                     SQLite file ``operator.sqlite3`` in the user data dir (tickloop.dirs)
``sqlite:///abs/path.db``   SQLite file at ``/abs/path.db`` (absolute: ``sqlite://rel.db`` is refused)
``postgresql://...``        PostgreSQL via psycopg 3 with a pool (``postgres://`` too)
``memory://``               SQLite in memory, private to this store; for tests and demos
==========================  ===============================================================
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from tickloop.errors import StoreError
from tickloop.operator.store.base import EPOCH, Ending, Store

if TYPE_CHECKING:  # a one-shot tick never imports pathlib (tickloop.dirs says why)
    from pathlib import Path

__all__ = ["EPOCH", "Ending", "Store", "default_sqlite_path", "open_store", "redact_url"]

# Pattern texts, compiled (and cached by ``re``) on the first URL that has a password to mask.
#: ``scheme://user:PASSWORD@host``: up to the last ``@`` before whitespace, so a raw ``@`` or ``/``
#: in the password is masked too (over-masking is the safe side); else a password with spaces.
_USERINFO_PASSWORD = r"(?P<head>://[^:/?#@\s]*:)(?:\S*|[^@/?#]*)@"  # noqa: S105  (a pattern, not a password)
#: ``?password=...`` / ``&sslpassword=...`` in a URL's query.
_QUERY_PASSWORD = r"(?i)(?P<head>[?&][^=&#\s]*password=)[^&#\s]*"  # noqa: S105  (a pattern, not a password)
#: libpq's keyword/value form: ``host=h password=SECRET`` or ``password = 'se cret\'s'``.
_KEYWORD_PASSWORD = r"(?is)(?P<head>(?:^|(?<=\s))[A-Za-z_]*password\s*=\s*)(?:'(?:[^'\\]|\\.)*(?:'|$)|\S+)"  # noqa: S105  (a pattern, not a password)


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe for messages and logs).

    Masks a URL's userinfo password, a ``password=`` (or ``sslpassword=``) query parameter, and a
    ``password=`` keyword of libpq's ``key=value`` form, quoted or not.
    """
    if "@" not in url and "password" not in url.casefold():  # what each pattern needs (casefold: as
        return url  # IGNORECASE, U+017F is an "s"); so opening a plain SQLite URL compiles none of them
    url = re.sub(_USERINFO_PASSWORD, r"\g<head>***@", url)
    url = re.sub(_QUERY_PASSWORD, r"\g<head>***", url)
    return re.sub(_KEYWORD_PASSWORD, r"\g<head>***", url)


def default_sqlite_path() -> Path:
    """Where the store lives when no URL is configured."""
    from pathlib import Path  # noqa: PLC0415

    return Path(_default_sqlite_file())


def _default_sqlite_file() -> str:
    from tickloop.dirs import user_dir  # noqa: PLC0415

    return os.path.join(user_dir("data"), "operator.sqlite3")


def open_store(url: str = "", *, migrate: bool = True, create: bool = True) -> Store:
    """Open the store ``url`` names; apply pending migrations unless ``migrate`` is False.

    ``create=False`` (every CLI command but ``init`` and ``migrate``): a missing SQLite file or
    directory is an error naming it, never made. A new SQLite file is 0600, new directories 0700.
    An unknown scheme, a malformed URL or an unreachable server raises ``StoreError`` naming the
    URL without its password.
    """
    safe = redact_url(url)
    if url == "":
        return _sqlite(_default_sqlite_file(), None, migrate=migrate, create=create)
    if url == "memory://" or url.startswith("memory://"):
        from tickloop.operator.store.sqlite import SQLiteMemoryStore  # noqa: PLC0415

        return SQLiteMemoryStore(url=safe, migrate=migrate)
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path or "?" in path or "#" in path:
            raise StoreError(f"malformed SQLite store URL {safe}: use sqlite:///absolute/path.db")
        if not path.startswith("/"):
            suggestion = f"sqlite://{os.path.join(os.getcwd(), path)}"
            raise StoreError(
                f"relative SQLite store URL {safe}: the path must be absolute, with three slashes: "
                f"sqlite:///abs/path.db (here perhaps {redact_url(suggestion)})"
            )
        return _sqlite(path, safe, migrate=migrate, create=create)
    if url.startswith(("postgresql://", "postgres://")):
        return _postgres(url, safe, migrate=migrate)
    raise StoreError(
        f"unknown store URL {safe}: use memory://, sqlite:///path/to/file.db or postgresql://... "
        "(set TICKLOOP_STORE or [store] url in the config file)"
    )


def _sqlite(path: str, safe: str | None, *, migrate: bool, create: bool) -> Store:
    from tickloop.operator.store.sqlite import SQLiteStore  # noqa: PLC0415

    return SQLiteStore(path, url=safe, migrate=migrate, create=create)


def _postgres(url: str, safe: str, *, migrate: bool) -> Store:
    # psycopg is imported only here: a tick on SQLite never pays for it at start-up.
    from psycopg import conninfo  # noqa: PLC0415

    from tickloop.operator.store.postgres import PostgresStore  # noqa: PLC0415

    try:
        conninfo.conninfo_to_dict(url)
    except Exception:  # noqa: BLE001  (psycopg raises several types; any means "malformed")
        raise StoreError(f"malformed PostgreSQL store URL {safe}") from None
    return PostgresStore(url, url=safe, migrate=migrate)
