"""What a start-up learned about the config file, kept for the next one: its parse, and the sections
that passed the start-up check.

A one-shot tick runs every few minutes on a config file that rarely changes. Parsing it costs the
TOML parser (about a quarter of a bare interpreter's start-up), and checking its sections imports
each section's type (the notify channels; the attention gate and zoneinfo): about half as much
again. So both results are kept in one small file, ``config-cache.msgpack`` in the state dir
(``$TICKLOOP_STATE_DIR`` or ``$XDG_STATE_HOME/tickloop``), and a start on the same file needs neither.

- **Keyed by content.** The config file is read on every start anyway; its parse is reused only for
  exactly the bytes it was made from, and the check only for exactly the sections that passed. Time
  stamps and sizes are not used: an edit within one tick of the file system's clock, of the same
  size, is seen all the same.
- **Keyed by version.** Each entry names tickloop's, msgspec's and Python's versions; after an
  upgrade the file is parsed and checked again.
- **Only successes.** A file that does not parse, or a section that fails its check, is never kept:
  the next start parses and checks again and reports the same error, naming the key.
- **Never trusted blindly.** The file is msgpack (msgspec, imported anyway) decoded into a typed
  struct; one that does not decode, or does not match, is ignored and rewritten. It is written to a
  temporary file that is renamed over the old one (readers never see half of it), mode 0600 in a 0700
  dir; a state dir that cannot be written costs the next start a parse, nothing else.
"""

# No `from __future__ import annotations`: see config.py (msgspec would eval() every annotation).

import contextlib
import os
import sys
from typing import Any

import msgspec

import tickloop

CACHE_FILE = "config-cache.msgpack"
_STAMP = f"tickloop {tickloop.__version__} msgspec {msgspec.__version__} python {sys.hexversion:x}"


class _Cache(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    stamp: str
    #: the config file's bytes and their parse
    toml: bytes = b""
    data: dict[str, Any] = msgspec.field(default_factory=dict)
    #: the operator sections (msgpack) that last passed ``check_config``
    checked: bytes = b""


def cache_path() -> str:
    """``$TICKLOOP_STATE_DIR/config-cache.msgpack``, else in ``$XDG_STATE_HOME/tickloop``."""
    folder = os.environ.get("TICKLOOP_STATE_DIR")
    if not folder:
        from tickloop.dirs import user_dir  # noqa: PLC0415

        folder = user_dir("state")
    return os.path.join(folder, CACHE_FILE)  # noqa: PTH118  (str paths: no pathlib work per call)


def cached_parse(raw: bytes) -> dict[str, Any] | None:
    """The parse of ``raw`` a previous start kept, or None."""
    cache = _load()
    return cache.data if cache is not None and cache.toml == raw else None


def keep_parse(raw: bytes, data: dict[str, Any]) -> None:
    """Keep ``data`` as the parse of ``raw``, if msgpack gives it back exactly (a TOML date or a NaN
    would not: such a file is parsed on every start)."""
    if msgspec.msgpack.decode(msgspec.msgpack.encode(data)) != data:
        return
    old = _load()
    _save(_Cache(_STAMP, raw, data, old.checked if old is not None else b""))


def was_checked(sections: bytes) -> bool:
    """Whether exactly these sections passed the check at an earlier start."""
    cache = _load()
    return cache is not None and cache.checked == sections


def keep_checked(sections: bytes) -> None:
    """Remember that these sections passed the check."""
    old = _load()
    _save(
        _Cache(_STAMP, old.toml, old.data, sections) if old is not None else _Cache(_STAMP, checked=sections)
    )


def _load() -> _Cache | None:
    try:
        with open(cache_path(), "rb") as handle:  # noqa: PTH123
            cache = msgspec.msgpack.decode(handle.read(), type=_Cache)
    except (OSError, msgspec.DecodeError):  # absent, unreadable, truncated, not ours: a real parse
        return None
    return cache if cache.stamp == _STAMP else None


def _save(cache: _Cache) -> None:
    path = cache_path()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)  # noqa: PTH103, PTH120
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "wb") as handle:  # noqa: PTH123
            handle.write(msgspec.msgpack.encode(cache))
        os.replace(tmp, path)  # noqa: PTH105
    except OSError:  # a read-only or full state dir: the next start parses again
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # noqa: PTH108
