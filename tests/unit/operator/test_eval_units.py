"""The eval's arithmetic and its scenario files: Wilson intervals, and a suite that refuses to load
broken."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ConfigError
from tickloop.operator.eval.checks import BAR, CHECKS
from tickloop.operator.eval.report import check_stats, table_lines, wilson
from tickloop.operator.eval.scenarios import SUITE_DIR, load_scenario, load_suite


@pytest.mark.parametrize(
    ("passed", "total", "low", "high"),
    [(0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (5, 10, 0.2366, 0.7634), (13, 20, 0.4329, 0.8188)],
)
def test_wilson_matches_the_textbook_values(passed: int, total: int, low: float, high: float) -> None:
    """The 95% Wilson score interval, to four places (13/20: the issue's json_schema rate)."""
    got = wilson(passed, total)
    assert got == pytest.approx((low, high), abs=1e-4)


@given(total=st.integers(1, 10_000), data=st.data())
def test_wilson_always_brackets_the_rate_within_zero_and_one(total: int, data: st.DataObject) -> None:
    """Whatever the counts, 0 <= low <= passed/total <= high <= 1."""
    passed = data.draw(st.integers(0, total))
    low, high = wilson(passed, total)
    assert 0.0 <= low <= passed / total <= high <= 1.0


def test_wilson_refuses_impossible_counts_and_says_nothing_for_none() -> None:
    """More passes than trials is an error; no trials is the whole interval."""
    with pytest.raises(ValueError, match="passed=3"):
        wilson(3, 2)
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_table_counts_only_trials_a_check_applies_to() -> None:
    """A check that does not apply (None) is left out of its denominator; one that never applied says so."""
    verdicts = [{"schema-valid": True, "escalates": None}, {"schema-valid": False, "escalates": None}]
    rows = {r.check: r for r in check_stats(verdicts)}
    assert (rows["schema-valid"].passed, rows["schema-valid"].applied) == (1, 2)
    assert rows["escalates"].applied == 0
    text = "\n".join(table_lines(list(rows.values())))
    assert "escalates" in text
    assert "does not apply" in text
    assert "BELOW the bar" in text


def test_the_shipped_suite_covers_what_the_issue_lists() -> None:
    """Every situation the operator must handle has a scenario, and every check a bar."""
    suite = {s.name: s for s in load_suite()}
    assert {
        "advance-plan-step", "derive-step-no-plan", "tainted-mail", "email-step", "spend",
        "repeat-failed", "nothing-to-do", "slow-review", "consolidate",
    } <= set(suite)  # fmt: skip
    assert len(suite["slow-review"].tasks) == 6
    assert suite["tainted-mail"].observations[0].tainted
    assert suite["waiting-for-person"].gate_stop is not None
    assert set(BAR) == set(CHECKS)
    assert (SUITE_DIR / "01-advance-plan-step.toml").is_file()


HEAD = 'name = "x"\ntick = "fast"\nabout = "a"\ngoal_title = "g"\n'


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('name = "x"\ntick = "fast"\nabout = "a"\ngoal_title = "g"\nshell = "rm -rf /"\n', "unknown field"),
        ('name = "x"\ntick = "observe"\nabout = "a"\ngoal_title = "g"\n', "tick"),
        ('name = "../etc"\ntick = "fast"\nabout = "a"\ngoal_title = "g"\n', "name"),
        (HEAD + 'plan = [{ title = "s", task = "nope" }]\n', "names tasks not on its board: nope"),
        (HEAD + 'tasks = [{ key = "a", title = "t" }, { key = "a", title = "u" }]\n', "repeats a task key"),
        ('name = "x"\ntick = "fast"\nabout = \n', "scenario bad.toml"),
        ("\udcff", "scenario bad.toml"),
    ],
)  # fmt: skip
def test_a_broken_scenario_file_is_a_clear_error_naming_it(tmp_path: Path, text: str, said: str) -> None:
    """Unknown keys, a tick that is not scored, a hostile name, a step naming a missing task, bad TOML:
    each refused with the file's name and what is wrong."""
    path = tmp_path / "bad.toml"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError, match=r"bad\.toml") as caught:
        load_scenario(path)
    assert said in caught.value.message


def test_asking_for_an_unknown_scenario_lists_the_known_ones() -> None:
    """--scenario with a name the suite does not have names it and the known ones."""
    with pytest.raises(ConfigError, match=r"no scenario named 'nope'; known: advance-plan-step"):
        load_suite(names=["nope"])
