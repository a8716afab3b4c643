"""``tickloop operator monitor``, parsed without click: the path the monitor's timer takes.

Like ``tick_once``: ``parse`` accepts exactly the plain forms (nothing, ``--all``, ``--profile P`` or
``--profile=P``, each once) and returns None for anything else, so ``--help`` and every mistake go
through the click command (``tickloop.cli.operator_monitor``), which runs the same ``run``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple

PROFILE_ENV = "TICKLOOP_PROFILE"


class MonitorRequest(NamedTuple):
    """Which profiles one monitor pass reads (None: every profile)."""

    profiles: tuple[str, ...] | None


def parse(args: Sequence[str], env: Mapping[str, str] | None = None) -> MonitorRequest | None:
    """The request for ``args`` (after ``operator monitor``), or None to let click handle them."""
    env = os.environ if env is None else env
    if list(args) == ["--all"]:
        # click warns when TICKLOOP_PROFILE is set too; let it say so
        return None if env.get(PROFILE_ENV) else MonitorRequest(None)
    if not args:
        profile = env.get(PROFILE_ENV)
    elif len(args) == 2 and args[0] == "--profile" and not args[1].startswith("-"):
        profile = args[1]
    elif len(args) == 1 and args[0].startswith("--profile=") and len(args[0]) > len("--profile="):
        profile = args[0].removeprefix("--profile=")
    else:
        return None
    return MonitorRequest(None if profile is None else (profile,))


def run(request: MonitorRequest) -> int:
    """ONE stall-monitor pass; the summary on stdout, everything else on stderr. Always 0."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from tickloop.cli.startup import paused_gc  # noqa: PLC0415

    with paused_gc():
        from tickloop.config import load_settings  # noqa: PLC0415
        from tickloop.operator.monitor import run_monitor  # noqa: PLC0415
        from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    report = run_monitor(
        open_store=open_configured_store,
        load_settings=load_settings,
        now=datetime.now(UTC),
        env=os.environ,
        profiles=None if request.profiles is None else list(request.profiles),
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    if report is not None:
        sent = sum(1 for _, _, ok in report.notices if ok)
        flagged, notices = report.profiles, len(report.notices)
        print(f"monitor: {flagged} profile(s) flagged, {notices} notice(s), {sent} delivered")
    return 0
