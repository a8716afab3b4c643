"""Issue 32, the house: functions in src/ stay short.

A function's length is ``end_lineno - lineno + 1`` of each ``def`` / ``async def`` that ``ast.walk``
finds in a file under src/ (nested functions and methods included; decorators not counted). Over all
of them: the median is at most 7 lines, the 90th percentile at most 20, and none is over 60.
On failure the longest ten are listed, so the next person sees where to cut.
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path
from typing import NamedTuple

SRC = Path(__file__).resolve().parents[2] / "src"

MAX_MEDIAN = 7
MAX_P90 = 20
MAX_LONGEST = 60


class Length(NamedTuple):
    lines: int
    where: str  #: path:line name


def function_lengths(root: Path) -> list[Length]:
    """Every function under ``root`` with its length in lines."""
    found: list[Length] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                where = f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}"
                found.append(Length(node.end_lineno - node.lineno + 1, where))
    return found


def _report(lengths: list[Length]) -> str:
    lines = [n.lines for n in lengths]
    median, p90 = statistics.median(lines), statistics.quantiles(lines, n=10)[-1]
    longest = sorted(lengths, reverse=True)[:10]
    rows = "\n".join(f"  {n.lines:>4}  {n.where}" for n in longest)
    over = sum(1 for n in lines if n > MAX_P90)
    return (
        f"{len(lines)} functions: median {median} (target <= {MAX_MEDIAN}), p90 {p90} (<= {MAX_P90}), "
        f"longest {max(lines)} (<= {MAX_LONGEST}); {over} over {MAX_P90} lines. The longest ten:\n{rows}"
    )


def test_the_measure_counts_nested_functions_and_methods(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "def outer():\n    def inner():\n        return 1\n    return inner\n\n\n"
        "class C:\n    async def method(self):\n        return 2\n",
        encoding="utf-8",
    )
    found = sorted(function_lengths(tmp_path))
    assert found == [Length(2, "m.py:2 inner"), Length(2, "m.py:8 method"), Length(4, "m.py:1 outer")]


def test_functions_in_src_are_short() -> None:
    lengths = function_lengths(SRC)
    lines = [n.lines for n in lengths]
    assert len(lines) > 100, f"found only {len(lines)} functions under {SRC}"
    ok = (
        statistics.median(lines) <= MAX_MEDIAN
        and statistics.quantiles(lines, n=10)[-1] <= MAX_P90
        and max(lines) <= MAX_LONGEST
    )
    assert ok, _report(lengths)
