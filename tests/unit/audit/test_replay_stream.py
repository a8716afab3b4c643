"""Replay reads the ledger and the transcript in step: its memory does not grow with the files, the
transcript's turns must start in time order, and the table lists the first runs and counts the rest."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from bench.bench_audit import SESSION, write_session

from tickloop.audit import session_file_name, verify_file
from tickloop.audit.replay import replay


def _peak_kib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def _own_peak_kib(records: int, tmp: Path) -> float:
    """Replay's peak beyond verify's on the same ledger (verify remembers each closed run's id)."""
    directory = tmp / str(records)
    directory.mkdir()
    ledger, sessions = write_session(directory, records)
    assert replay(ledger, sessions).ok
    return _peak_kib(lambda: replay(ledger, sessions)) - _peak_kib(lambda: verify_file(ledger))


def test_replay_memory_does_not_grow_with_the_files(tmp_path: Path) -> None:
    """Four times the records, the same peak beyond verify's: nothing per record or per turn is held
    (the old replay kept every turn and step, about 1 KiB per record: 30 MiB more here)."""
    small = _own_peak_kib(10_000, tmp_path)
    large = _own_peak_kib(40_000, tmp_path)
    assert large < small + 512, (small, large)


def test_a_table_of_many_runs_lists_the_first_and_counts_the_rest(tmp_path: Path) -> None:
    ledger, sessions = write_session(tmp_path, 1_500)
    report = replay(ledger, sessions)
    assert report.ok
    assert len(report.rows) == report.max_reported
    assert report.runs > report.max_reported
    hidden, listed = report.runs - report.max_reported, report.max_reported
    assert report.table()[-1] == f"... and {hidden} more run(s) (the first {listed} are listed)"
    assert report.summary().endswith(f"{report.runs} runs, {3 * report.runs} steps matched")


def test_a_turn_that_starts_before_an_earlier_one_is_a_disagreement(tmp_path: Path) -> None:
    """A person's turn moved back in time (beyond the ledger's one-second slack) is named on its line."""
    ledger, sessions = write_session(tmp_path, 200)
    path = sessions / session_file_name(SESSION)
    lines = path.read_text().splitlines()
    last_human = max(i for i, line in enumerate(lines) if '"kind": "user"' in line)
    rec = json.loads(lines[last_human])
    rec["at"] = "2026-11-29T23:00:00.000Z"
    lines[last_human] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    report = replay(ledger, sessions)
    found = [d for d in report.disagreements if "before an earlier turn's" in d.message]
    assert [d.line for d in found] == [last_human + 1]
    assert not report.ok


def test_replay_shows_an_invalid_requested_value_as_written(tmp_path: Path) -> None:
    """The run armed for 0 is shown as armed for 0 (not for 256, the bound verify checks against)."""
    ledger, sessions = write_session(tmp_path, 12)
    lines = ledger.read_bytes().splitlines()
    assert b'"requested":3' in lines[0]
    lines[0] = lines[0].replace(b'"requested":3', b'"requested":0')
    ledger.write_bytes(b"".join(line + b"\n" for line in lines))
    report = replay(ledger, sessions)
    assert report.rows[0].requested == 0
    said = [d.message for d in report.disagreements]
    assert any("the run was armed for 0" in m for m in said), said
    assert any("requested in 1..256, not '0'" in m for m in said), said
    assert any("after 3 of 0 steps" in m for m in said), said
    assert not any("of 256" in m or "for 256" in m for m in said), said


def _at(second: int) -> str:
    return f"2026-11-30T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def test_the_delay_check_holds_recent_times_only_and_still_catches_either_order() -> None:
    """Thousands of windows pass; a person's turn inside one is caught whether it is read before its
    window is paired or after, and what neither file can still overlap is dropped."""
    from tickloop.audit.replay_delay import DelayCheck  # noqa: PLC0415

    said: list[tuple[int, str]] = []
    clock = {"transcript": _at(0), "ledger": _at(0)}
    check = DelayCheck(
        lambda line, message, _run: said.append((line, message)),
        transcript_time=lambda: clock["transcript"],
        ledger_time=lambda: clock["ledger"],
    )
    for n in range(3000):  # a window every 10 s, 5 s long; the transcript keeps up
        clock["transcript"] = clock["ledger"] = _at(10 * n + 6)
        check.window(_at(10 * n), _at(10 * n + 5), f"step {n}", None)
    assert len(check.windows) <= 1025
    check.human(_at(29_992), 7, 70)  # inside the last window, read after it was paired
    check.human(_at(30_002), 8, 80)  # a person's turn before its window is paired ...
    check.window(_at(30_000), _at(30_005), "step 3000", None)  # ... is caught when it is
    check.human(_at(30_003), 9, 90)  # a second turn in a window already reported: once per window

    def message(turn: int, at: int, step: int, due: int) -> str:
        return (
            f"turn {turn} (a human message at {_at(at)}) came while step {step} waited for {_at(due)}, "
            "and the ledger enqueued it instead of cancelling"
        )

    assert said == [(70, message(7, 29_992, 2999, 29_995)), (80, message(8, 30_002, 3000, 30_005))]
