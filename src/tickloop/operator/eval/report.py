"""The eval's numbers: per check, the rate with its 95% Wilson interval and the bar; per tick, the
tokens and the latency (median and min-max). Plain functions over the scored trials."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tickloop.operator.eval.checks import BAR
from tickloop.operator.eval.trial import Call, Trial

#: the normal quantile of a two-sided 95% interval
Z95 = 1.959963984540054


def wilson(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` out of ``total`` (0..1 both ends; (0, 1) for none)."""
    if total <= 0:
        return 0.0, 1.0
    if not 0 <= passed <= total:
        raise ValueError(f"passed={passed} is not within 0..{total}")
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    # Clamped to bracket the rate itself: rounding must not put 0/n's lower end above 0.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True, slots=True)
class CheckStats:
    """One row of the table."""

    check: str
    passed: int
    applied: int
    low: float
    high: float
    bar: float

    @property
    def rate(self) -> float | None:
        return self.passed / self.applied if self.applied else None

    @property
    def meets_bar(self) -> bool | None:
        rate = self.rate
        return None if rate is None else rate >= self.bar


def check_stats(verdicts: Sequence[Mapping[str, bool | None]]) -> list[CheckStats]:
    """Per check: how many trials it applied to, how many passed, and the interval."""
    rows = []
    for name, bar in BAR.items():
        seen = [v[name] for v in verdicts if v.get(name) is not None]
        passed = sum(1 for v in seen if v)
        low, high = wilson(passed, len(seen))
        rows.append(CheckStats(name, passed, len(seen), low, high, bar))
    return rows


@dataclass(frozen=True, slots=True)
class Spread:
    """Median and range of one per-tick figure."""

    median: float
    low: float
    high: float
    count: int


def spread(values: Sequence[float]) -> Spread | None:
    return Spread(statistics.median(values), min(values), max(values), len(values)) if values else None


def per_tick(trials: Sequence[Trial]) -> dict[str, Spread | None]:
    """Tokens in and out and the model's seconds per tick, over the ticks that asked a model. Tokens
    are the server's counts; when it counted none (llama-cpp-python streams no usage), they are
    estimated as UTF-8 bytes / 4 and ``tokens_estimated`` says so."""
    asked = [t for t in trials if t.calls]
    calls = [c for t in asked for c in t.calls]
    counted = bool(calls) and all(c.tokens_in is not None and c.tokens_out is not None for c in calls)
    tokens_in = [float(sum(_tokens(c, counted=counted, out=False) for c in t.calls)) for t in asked]
    tokens_out = [float(sum(_tokens(c, counted=counted, out=True) for c in t.calls)) for t in asked]
    seconds = [sum(c.seconds for c in t.calls) for t in asked]
    return {
        "tokens_in": spread(tokens_in),
        "tokens_out": spread(tokens_out),
        "model_seconds": spread(seconds),
        "tokens_estimated": None if counted or not calls else Spread(1, 1, 1, len(asked)),
    }


def _tokens(call: Call, *, counted: bool, out: bool) -> int:
    if counted:
        return (call.tokens_out if out else call.tokens_in) or 0
    return (len(call.text.encode("utf-8")) if out else call.prompt_bytes) // 4


def table_lines(stats: Sequence[CheckStats]) -> list[str]:
    """The per-check table, as aligned text lines."""
    lines = [f"{'check':<24} {'passed':>9} {'rate':>6}  {'95% Wilson':<11}  {'bar':>5}  verdict"]
    for row in stats:
        if row.applied == 0:
            lines.append(f"{row.check:<24} {'0/0':>9} {'-':>6}  {'-':<11}  {row.bar:>5.2f}  does not apply")
            continue
        verdict = "meets the bar" if row.meets_bar else "BELOW the bar"
        cell = f"{row.passed}/{row.applied}"
        interval = f"{row.low:.2f}-{row.high:.2f}"
        lines.append(
            f"{row.check:<24} {cell:>9} {row.rate or 0:>6.2f}  {interval:<11}  {row.bar:>5.2f}  {verdict}"
        )
    return lines


def tick_lines(figures: Mapping[str, Spread | None]) -> list[str]:
    names = {"tokens_in": "tokens in", "tokens_out": "tokens out", "model_seconds": "model seconds"}
    is_guess = figures.get("tokens_estimated") is not None
    lines = []
    for key, label in names.items():
        found = figures.get(key)
        if found is None:
            lines.append(f"per tick, {label}: no tick asked a model")
            continue
        fmt = "{:.2f}" if key == "model_seconds" else "{:.0f}"
        median, low, high = (fmt.format(v) for v in (found.median, found.low, found.high))
        guess = (
            " (estimated as UTF-8 bytes / 4: the server counted none)"
            if is_guess and key != "model_seconds"
            else ""
        )
        lines.append(f"per tick, {label}: median {median} (min-max {low}-{high}, {found.count} ticks){guess}")
    return lines
