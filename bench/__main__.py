"""``make bench``: run every ``bench/bench_*.py`` (or those named on the command line).

``python -m bench [--quick] [NAME ...]``: ``--quick`` shrinks sizes for a smoke run.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("-")]
    here = Path(__file__).parent
    modules = sorted(p.stem for p in here.glob("bench_*.py"))
    selected = [m for m in modules if not names or any(n in m for n in names)]
    for name in selected:
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        importlib.import_module(f"bench.{name}").run(quick=quick)
        print(f"--- {name}: {time.perf_counter() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
