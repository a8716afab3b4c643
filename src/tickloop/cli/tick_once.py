"""``tickloop operator tick KIND``, parsed without click: the path every timer-driven tick takes.

``parse`` accepts exactly the plain forms (``KIND``, ``--profile P`` / ``--profile=P``, ``--day
YYYY-MM-DD``, ``--dry-run``, each at most once) and returns None for anything else, so that
``--help`` and every mistake go through the click command (``tickloop.cli.operator_tick``) and get
its usage message. ``run`` is shared by both paths. Exit codes: ``tickloop.operator.runner``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import NamedTuple

from tickloop.operator.runner import TICKS

PROFILE_ENV = "TICKLOOP_PROFILE"
DEFAULT_PROFILE = "default"
_VALUED = ("--profile", "--day")
#: The ticks that ask the model: a model name nothing defines fails them at start.
MODEL_TICKS = frozenset({"fast", "slow", "consolidate"})


class TickRequest(NamedTuple):
    """One tick to run: which kind, for whom, and the executor's flags."""

    kind: str
    profile: str
    day: date | None = None
    dry_run: bool = False


def parse(args: Sequence[str], env: Mapping[str, str] = os.environ) -> TickRequest | None:
    """The request ``args`` (after ``operator tick``) spell, or None to let click parse them."""
    kinds: list[str] = []
    values: dict[str, str] = {}
    flags: set[str] = set()
    tokens = iter(args)
    for arg in tokens:
        name, eq, inline = arg.partition("=")
        if name in _VALUED and name not in values:
            value = inline if eq else next(tokens, None)
            if value is None or (not eq and value.startswith("-")):
                return None
            values[name] = value
        elif arg == "--dry-run" and arg not in flags:
            flags.add(arg)
        elif arg in TICKS and not kinds:
            kinds.append(arg)
        else:  # --help, an unknown or repeated option, a second or unknown KIND: click says what is wrong
            return None
    if not kinds:
        return None
    day_text = values.get("--day")
    try:
        day = None if day_text is None else datetime.strptime(day_text, "%Y-%m-%d").date()  # noqa: DTZ007
    except ValueError:  # not a calendar day: click names the format
        return None
    if kinds[0] != "executor" and (day is not None or flags):
        return None
    profile = values["--profile"] if "--profile" in values else env.get(PROFILE_ENV) or DEFAULT_PROFILE
    return TickRequest(kinds[0], profile, day, bool(flags))


def run(request: TickRequest) -> int:
    """Run the tick, print its row's one-line summary, and return the process exit code."""
    from tickloop.cli.startup import paused_gc  # noqa: PLC0415

    with paused_gc():
        from tickloop.config import load_settings  # noqa: PLC0415
        from tickloop.config_sections import check_config  # noqa: PLC0415
        from tickloop.inert import inert  # noqa: PLC0415
        from tickloop.operator.runner import load_tick, run_tick  # noqa: PLC0415
        from tickloop.operator.service import open_configured_store  # noqa: PLC0415

        with contextlib.suppress(Exception):  # the tick's own modules: a failure is its row's error
            load_tick(request.kind)
    settings = load_settings()
    # Before any row: a configuration error is the process's start failing (exit 2, naming the key).
    check_config(settings, model=settings.model.name if request.kind in MODEL_TICKS else None)
    options: dict[str, object] = {"dry_run": request.dry_run}
    if request.day is not None:
        options["day"] = request.day
    kind = request.kind
    with open_configured_store() as store:
        store.get_profile(request.profile)
        code = run_tick(
            kind, store=store, profile=request.profile, settings=settings, env=os.environ, options=options
        )
        for row in store.recent_progress(request.profile, limit=1, tick_kind=kind):  # the row this tick wrote
            line = " ".join(part for part in (f"{kind}: {row.outcome}", row.detail, row.error) if part)
            print(inert(line, keep_newlines=False))  # detail and error may quote model output
    return code
