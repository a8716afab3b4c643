"""Helpers shared by the benchmarks: timing, percentiles and one uniform ratio line."""

from __future__ import annotations

import time
from collections.abc import Callable


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
    """``report`` on the medians of paired rounds, then the per-round ratios' min-max."""
    ratios = sorted(v / b for v, b in zip(values, baselines, strict=True) if b)
    ratio = report(name, sorted(values)[len(values) // 2], sorted(baselines)[len(baselines) // 2],
                   target=target, unit=unit)  # fmt: skip
    print(f"{'':<48} ratio per round min-max {ratios[0]:.3f}-{ratios[-1]:.3f} over {len(ratios)} rounds")
    return ratio
