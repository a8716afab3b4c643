"""The ``tickloop`` command line: thin click commands over the library, loaded lazily.

``main`` is the console entry point. A one-shot operator tick (``tickloop operator tick KIND``) is
parsed without click (``tickloop.cli.tick_once``): it runs every few minutes as a fresh process, and
click is a sixth of its start-up. Any other command, and any tick invocation the plain parser does
not accept as-is (``--help``, a mistake), goes through the click application (``tickloop.cli.app``),
so usage errors and help read the same either way.

Exit codes: 0 success; 1 a check found a problem (``audit verify``, ``doctor``); 2 bad usage,
configuration or input (the message says what and where); 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tickloop.errors import TickloopError

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: library errors become a one-line message and exit code 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        fast = _without_click(args)
        if fast is not None:
            return fast
        from tickloop.cli.app import run  # noqa: PLC0415  (click, for everything else)

        return run(args)
    except TickloopError as exc:
        print(f"tickloop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tickloop: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _without_click(args: list[str]) -> int | None:
    """The exit code of a timer's command that runs without importing click, or None for the rest."""
    if args[:2] not in (["operator", "tick"], ["operator", "monitor"]):
        return None
    from tickloop.cli.startup import paused_gc  # noqa: PLC0415  (only these paths pay for it)

    if args[1] == "tick":
        with paused_gc():
            from tickloop.cli import tick_once  # noqa: PLC0415

        request = tick_once.parse(args[2:])
        return None if request is None else tick_once.run(request)
    with paused_gc():
        from tickloop.cli import monitor_once  # noqa: PLC0415  (the monitor's timer: no click either)

    wanted = monitor_once.parse(args[2:])
    return None if wanted is None else monitor_once.run(wanted)


if __name__ == "__main__":
    sys.exit(main())
