"""The observe tick: cheap deltas from outside (no model), tainted at the edge, deduplicated by hash.

Cursors (what each source saw last) live in a small state file per profile on the host that has the
sources, written atomically. Losing it costs one baseline observation per source, never a flood:
the store deduplicates observations by content hash.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from tickloop.config import secret, section
from tickloop.operator.domain import Outcome
from tickloop.operator.runner import TickContext, TickResult

if TYPE_CHECKING:
    from tickloop.operator.sources import Observation, SourceFailure


def run(ctx: TickContext) -> TickResult:
    path = cursor_path(ctx.profile)
    observations, cursors, failures = _collect(ctx, load_cursors(path))
    now = ctx.clock.now()
    new = sum(
        ctx.store.add_observation(
            ctx.profile,
            source=o.source,
            content_hash=o.content_hash,
            payload=o.payload,
            now=now,
            tainted=o.tainted,
        )
        is not None
        for o in observations
    )
    save_cursors(path, cursors)
    for failure in failures:
        ctx.log(f"observe: source {failure.source}: {failure.message}")
    detail = f"observations={new} duplicates={len(observations) - new} source_errors={len(failures)}"
    errors = "; ".join(f"{f.source}: {f.message}" for f in failures)[:2000]
    return TickResult(Outcome.DONE if new else Outcome.NOOP, detail=detail, error=errors)


def _collect(
    ctx: TickContext, cursors: dict[str, Any]
) -> tuple[Sequence[Observation], Mapping[str, object], Sequence[SourceFailure]]:
    """What every configured source saw since its cursor: the observations, the new cursors and the
    failures. No ``[sources]`` table configures none, so the source modules are not even imported."""
    if not ctx.settings.sources:
        return (), {}, ()
    from tickloop.operator.sources import SourcesSettings, collect  # noqa: PLC0415

    sources = section(ctx.settings, "sources", SourcesSettings)
    found = collect(sources, cursors, ctx.clock.now(), secret=lambda n: secret(n, ctx.settings, ctx.env))
    return found.observations, found.cursors, found.errors


def cursor_path(profile: str) -> str:
    """``$XDG_STATE_HOME/tickloop/observe/session-<escaped profile>.json``: a safe, injective name.

    A ``str``, as every path of this tick: it never imports pathlib (tickloop.dirs says why)."""
    from tickloop.dirs import user_dir  # noqa: PLC0415
    from tickloop.filenames import session_file_name  # noqa: PLC0415

    name = os.path.splitext(session_file_name(profile))[0] + ".json"
    return os.path.join(user_dir("state"), "observe", name)


def load_cursors(path: str) -> dict[str, Any]:
    """The saved cursors; a missing or unreadable file starts fresh (each source records a baseline)."""
    try:
        with open(path, "rb") as handle:
            value = msgspec.json.decode(handle.read())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def save_cursors(path: str, cursors: Mapping[str, object]) -> None:
    """Write atomically (temp file, fsync, rename), so a crash leaves the old or the new file."""
    os.makedirs(os.path.dirname(path), exist_ok=True, mode=0o700)
    tmp = os.path.splitext(path)[0] + ".tmp"
    with open(tmp, "wb") as handle:
        handle.write(msgspec.json.encode(cursors, order="sorted"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
