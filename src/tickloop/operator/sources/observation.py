"""The values sources hand back: observations, failures, and the canonical JSON their hash covers.

Canonical JSON is part of the documented contract: keys sorted, separators ``,`` and ``:``, no
ASCII escaping, UTF-8, no NaN. ``content_hash`` is ``"sha256:" + hex`` of the canonical JSON of
``{"kind", "payload", "source"}``; the store deduplicates observations on it per profile.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tickloop.sha256 import sha256

#: an observation's payload may not exceed this many bytes of canonical JSON (a programming error)
MAX_PAYLOAD_BYTES = 65_536


def canonical_json(value: Any) -> bytes:
    """The canonical JSON encoding of ``value`` (sorted keys, compact, UTF-8)."""
    import json  # noqa: PLC0415  (an observe tick that finds nothing never loads json)

    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def content_hash(source: str, kind: str, payload: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of (source, kind, payload)."""
    digest = sha256(canonical_json({"source": source, "kind": kind, "payload": payload}))
    return "sha256:" + digest.hexdigest()


class Observation(msgspec.Struct, frozen=True):
    """One thing a source noticed. Outside content is tainted; only the operator's memory is not."""

    #: where it came from: ``git:/repo``, ``files:/dir``, ``calendar:...``, ``mail:imap:host/INBOX``
    source: str
    #: what happened: ``git.commit``, ``file.changed``, ``calendar.upcoming``, ``mail.new``, ...
    kind: str
    #: JSON-serialisable, size-bounded details
    payload: dict[str, Any]
    #: True for anything read from outside the operator (the default)
    tainted: bool = True
    #: ``sha256:<hex>`` of (source, kind, payload); computed, never passed
    content_hash: str = ""

    def __post_init__(self) -> None:
        size = len(canonical_json(self.payload))
        if size > MAX_PAYLOAD_BYTES:
            raise ValueError(
                f"{self.kind} payload from {self.source} is {size} bytes (max {MAX_PAYLOAD_BYTES})"
            )
        msgspec.structs.force_setattr(
            self, "content_hash", content_hash(self.source, self.kind, self.payload)
        )

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for persisting (the store's row shape)."""
        return {
            "source": self.source,
            "kind": self.kind,
            "tainted": self.tainted,
            "payload": self.payload,
            "contentHash": self.content_hash,
        }


class SourceFailure(msgspec.Struct, frozen=True):
    """A source that could not be read this run; the others still ran."""

    #: the failing source's id (as in ``Observation.source``)
    source: str
    #: what went wrong and what to do, one line
    message: str
