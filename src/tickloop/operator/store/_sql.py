"""The narrow connector the SQL backends share: named queries from ``.sql`` files, one
transaction object (``Tx``) with three calls, and parameter checks before anything is bound."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any, NoReturn, Protocol

from tickloop.errors import StoreError, ValidationError
from tickloop.operator.domain import check_text
from tickloop.operator.store._rows import Row

_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_INT64 = (-(2**63), 2**63 - 1)
#: The package's SQL files. A plain path, not importlib.resources: that module costs a one-shot tick
#: tempfile, shutil and zipfile at start-up, and tickloop is always installed as files. A str, as
#: a one-shot tick never imports pathlib (tickloop.dirs says why).
_SQL_DIR = os.path.join(os.path.dirname(__file__), "sql")


@functools.cache  # read once per process: tests open thousands of stores; nobody mutates the dict
def load_queries(dialect: str) -> dict[str, str]:
    """The shared ``queries.sql`` overlaid with ``sql/<dialect>/queries.sql``, by name."""
    queries = _split(_read(os.path.join(_SQL_DIR, "queries.sql")))
    queries.update(_split(_read(os.path.join(_SQL_DIR, dialect, "queries.sql"))))
    return queries


def _split(text: str) -> dict[str, str]:
    """Each ``-- name: NAME`` line's query, up to the next such line (str methods: a regex split of
    the files is 1% of a one-shot tick)."""
    queries = {}
    for chunk in f"\n{text}".split("\n-- name: ")[1:]:
        name, _, body = chunk.partition("\n")
        queries[name.strip()] = body.strip()
    return queries


def to_pyformat(sql: str) -> str:
    """``:name`` -> ``%(name)s`` for psycopg (``::type`` casts are left alone)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def migrations(dialect: str, *, after: int = 0) -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` for every ``NNNN_name.sql`` of the dialect above version ``after``, in
    order: an up-to-date store reads none of the files."""
    folder = os.path.join(_SQL_DIR, dialect)
    found = []
    for name in os.listdir(folder):
        match = re.fullmatch(r"(\d{4})_(\w+)\.sql", name)
        if match and int(match[1]) > after:
            found.append((int(match[1]), match[2], _read(os.path.join(folder, name))))
    return sorted(found)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def check_params(params: Mapping[str, Any], adapt_time: Callable[[datetime], Any]) -> dict[str, Any]:
    """Every text parameter checked (valid UTF-8, no NUL, size); enums as their values; times adapted."""
    out: dict[str, Any] = {}
    for key, raw in params.items():
        value = raw.value if isinstance(raw, Enum) else raw
        if isinstance(value, str):
            value = check_text(key, value)
        elif isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
            raise ValidationError(f"{key}: {value} is out of range for a 64-bit integer")
        elif isinstance(value, datetime):
            value = adapt_time(value)
        out[key] = value
    return out


class Cursor(Protocol):
    """The part of a DB-API cursor we use."""

    rowcount: int

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The part of a sqlite3 / psycopg connection we use."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...


class Tx:
    """One open transaction: run named queries with bound parameters, nothing else."""

    def __init__(
        self,
        conn: Connection,
        queries: Mapping[str, str],
        adapt_time: Callable[[datetime], Any],
        translate: Callable[[Exception, Mapping[str, Any]], StoreError | None],
    ) -> None:
        self._conn = conn
        self._queries = queries
        self._adapt_time = adapt_time
        self._translate = translate

    def _execute(self, query: str, params: Mapping[str, Any]) -> Cursor:
        bound = check_params(params, self._adapt_time)
        try:
            cursor: Cursor = self._conn.execute(self._queries[query], bound)
        except Exception as exc:  # noqa: BLE001  (re-raised by _reraise: translated, or as it was)
            self._reraise(exc, params)
        return cursor

    def _reraise(self, exc: Exception, params: Mapping[str, Any]) -> NoReturn:
        """The store's own error for ``exc`` when there is one, else ``exc`` itself as it was."""
        error = self._translate(exc, params)
        if error is None:
            raise exc
        raise error from exc

    def rows(self, query: str, /, **params: Any) -> list[Row]:
        """All rows of the query (RETURNING rows for a write)."""
        cursor = self._execute(query, params)
        try:  # a statement can also fail while it steps (a read interrupted at its deadline)
            return list(cursor.fetchall())
        except Exception as exc:  # noqa: BLE001  (re-raised by _reraise: translated, or as it was)
            self._reraise(exc, params)

    def one(self, query: str, /, **params: Any) -> Row | None:
        """The first row, or None."""
        found = self.rows(query, **params)
        return found[0] if found else None

    def run(self, query: str, /, **params: Any) -> int:
        """Run a write without RETURNING; the number of rows it changed."""
        return self._execute(query, params).rowcount
