"""Issue 27's figures: `experiment export` rows/s, redacted and with --keep-text, against a bare reader.

The baseline reads the same run directory the least any exporter must: every manifest line and every
transcript line through ``json.loads``, one ``json.dumps`` line written per step. Ours is
``export(..., "jsonl")`` (digests) and ``export(..., keep_text=True)`` (every reply scrubbed by every
class). Rounds alternate baseline and ours in the same run; ratios are printed with their min-max.
The run is made once, on a real disk (the system temp dir), with the offline model in echo mode and
replies that carry a path, an address and a key, so the scrubber has work to do.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench._util import report_rounds
from tickloop.config import load_settings
from tickloop.experiment.export import export
from tickloop.experiment.runner import Runner
from tickloop.experiment.spec import parse_spec

ROUNDS = 5


def _make_run(root: Path, sessions: int) -> Path:
    config = root / "config.toml"
    config.write_text("[model.offline]\necho = true\n", encoding="utf-8")
    policy = "tick: see `/srv/app/main.py` on 10.0.0.7, token=abc123 and https://example.org/x for details"
    spec = parse_spec(
        (
            f'name = "bench"\nopening = ["Wait."]\npolicies = ["p"]\nmodels = ["offline"]\nsteps = 4\n'
            f'replicates = {sessions}\n[inlinePolicies]\np = "{policy}"\n'
        ).encode(),
        where="bench",
    )
    out = root / "run"
    asyncio.run(Runner(spec, out, settings=load_settings(env={}, path=config), env={}, concurrency=16).run())
    return out


def _baseline(run: Path, target: Path) -> int:
    rows = 0
    with target.open("w", encoding="utf-8") as sink:
        for line in (run / "manifest.jsonl").read_bytes().splitlines():
            rec = json.loads(line)
            for step in rec.get("steps", []):
                sink.write(json.dumps(step) + "\n")
                rows += 1
        for transcript in (run / "sessions").iterdir():
            for line in transcript.read_bytes().splitlines():
                json.loads(line)
    return rows


def _timed(fn: Callable[[], int]) -> float:
    started = time.perf_counter()
    rows = fn()
    return rows / (time.perf_counter() - started)


def _export(run: Path, target: Path, *, keep_text: bool) -> int:
    return export([run], target, "jsonl", keep_text=keep_text)["steps"]


def run(*, quick: bool = False) -> None:
    sessions = 50 if quick else 500
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = _make_run(root, sessions)
        print(f"{sessions} sessions x 5 turns on {root} (a real disk)")
        base: list[float] = []
        digests: list[float] = []
        kept: list[float] = []
        for i in range(ROUNDS):
            base.append(_timed(partial(_baseline, out, root / f"b{i}.jsonl")))
            digests.append(_timed(partial(_export, out, root / f"d{i}", keep_text=False)))
            kept.append(_timed(partial(_export, out, root / f"k{i}", keep_text=True)))
        report_rounds("export jsonl (digests) rows/s vs bare reader", digests, base)
        report_rounds("export jsonl --keep-text rows/s vs bare reader", kept, base)
