"""Helpers shared by the benchmarks: timing, instruction counts, percentiles and one uniform ratio line."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

_COLLECTED = re.compile(r"Collected : (\d+)")


def rate(fn: Callable[[], None], *, seconds: float = 1.0, min_calls: int = 10) -> float:
    """Calls per second of ``fn``, measured for about ``seconds``."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= min_calls:
            return calls / elapsed


def instructions(argv: list[str], env: dict[str, str], *, check: bool = True) -> int:
    """The instructions ``argv`` executes, counted by callgrind (``valgrind`` must be installed).
    ``check``: a command that fails raises, rather than giving the count of how far it got."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode} under callgrind: {done.stderr[-500:]}")
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind reported no count for {argv}: {done.stderr[-500:]}")
    return int(found[1])


def percentile(samples: list[float], pct: float) -> float:
    """The ``pct`` percentile (0..100) of ``samples`` by nearest rank."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def report(name: str, value: float, baseline: float, *, target: str = "", unit: str = "/s") -> float:
    """Print ``name``, its value, the baseline and their ratio (with the target, if any)."""
    ratio = value / baseline if baseline else float("inf")
    suffix = f"  target {target}" if target else ""
    print(f"{name:<48} {value:>14,.1f}{unit}  baseline {baseline:>14,.1f}{unit}  ratio {ratio:6.3f}{suffix}")
    return ratio


def report_rounds(
    name: str, values: list[float], baselines: list[float], *, target: str = "", unit: str = "/s"
) -> float:
    """Like ``report``, for rounds that alternated value and baseline: the medians of each, and the
    ratio as the median of the rounds' own ratios (each round's value against the baseline measured
    next to it) with their min-max, so a slow spell of a shared machine weighs on both sides."""
    per_round = sorted(v / b for v, b in zip(values, baselines, strict=True) if b)
    ratio = median(per_round) if per_round else float("inf")
    spread = f" ({per_round[0]:.3f}-{per_round[-1]:.3f}, {len(per_round)} rounds)" if per_round else ""
    suffix = f"  target {target}" if target else ""
    value, baseline = median(values), median(baselines)
    figures = f"{value:>14,.1f}{unit}  baseline {baseline:>14,.1f}{unit}  ratio {ratio:6.3f}"
    print(f"{name:<48} {figures}{spread}{suffix}")
    return ratio


def peak_rss_kib(child: subprocess.Popen[bytes], *, every_s: float = 0.02) -> int:
    """Wait for ``child`` and return its peak RSS in KiB, read from its own ``VmHWM`` while it runs
    (``ru_maxrss`` would count the forking parent instead). Fails if the child exits non-zero."""
    peak, status = 0, Path(f"/proc/{child.pid}/status")
    while child.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (OSError, ValueError, IndexError):
            pass  # it exited between poll() and the read
        time.sleep(every_s)
    assert child.returncode == 0, (child.args, child.returncode)
    return peak
