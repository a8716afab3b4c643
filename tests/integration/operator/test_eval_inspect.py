"""``tickloop operator eval --format inspect``: Inspect AI's own reader and viewer take the log; one
sample per scenario and repeat (repeats as epochs), each with the prompt, the model's answer and every
check's verdict."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from test_eval import BAD, GOOD, by_goal, cli_env, run
from test_ticks_cli import tickloop
from tests.inspect_view import inspect_page

from tickloop.operator.eval.inspect_log import write_inspect
from tickloop.operator.eval.scenarios import load_suite


def written(result: Any, tmp_path: Path, repeat: int = 1) -> Any:
    from inspect_ai.log import read_eval_log  # noqa: PLC0415

    path = write_inspect(result, load_suite(), "offline", repeat=repeat, out=tmp_path / "logs")
    assert path.suffix == ".eval"
    assert path.parent == tmp_path / "logs"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no partial file left behind
    return read_eval_log(str(path))


def test_each_scenario_and_repeat_is_a_sample_with_its_prompt_answer_and_checks(tmp_path: Path) -> None:
    """Inspect reads back one sample per scenario x repeat (the repeat is the epoch); each holds the
    prompt the tick sent, the model's answer word for word, and every check that applied as a score."""
    result = run(by_goal(GOOD), repeat=2)
    log = written(result, tmp_path, repeat=2)
    names = [s.name for s in load_suite()]
    assert log.status == "success"
    assert log.eval.config.epochs == 2
    assert log.eval.dataset.samples == len(names)
    assert log.eval.created <= log.stats.started_at <= log.stats.completed_at
    assert sorted((s.id, s.epoch) for s in log.samples) == sorted((n, e) for n in names for e in (1, 2))
    samples = {(s.id, s.epoch): s for s in log.samples}
    for trial, verdict in zip(result.trials, result.verdicts, strict=True):
        sample = samples[trial.scenario, trial.repeat]
        assert sample.metadata["checks"] == verdict
        assert {k: v.value for k, v in sample.scores.items()} == {
            k: "C" if ok else "I" for k, ok in verdict.items() if ok is not None
        }
        if trial.answer is None:  # an open gate stop: the tick asked no model
            assert [m.role for m in sample.messages] == []
            continue
        roles = [m.role for m in sample.messages]
        assert roles[-1] == "assistant"
        assert {"system", "user"} <= set(roles)
        assert sample.messages[-1].text == trial.answer
        assert sample.output.completion == trial.answer
        assert {s.answer for s in sample.scores.values()} == {trial.answer}  # the viewer's answer column
        assert trial.calls[0].prompt[-1]["content"] in sample.messages[-2].text
    assert all(m.value == 1.0 for s in log.results.scores for m in s.metrics.values() if m.name == "rate")


def test_a_failed_check_is_an_incorrect_score_with_its_rate_and_interval(tmp_path: Path) -> None:
    """The answer built to fail `names a board task` is scored I there; the results carry each check's
    rate, Wilson interval and bar, as the table does."""
    scenario, bad = BAD["names a board task"]
    log = written(run(by_goal({scenario: bad}), [scenario]), tmp_path)
    assert log.samples[0].scores["names a board task"].value == "I"
    assert log.samples[0].scores["schema-valid"].value == "C"
    metrics = {s.name: {m.name: m.value for m in s.metrics.values()} for s in log.results.scores}
    wilson = {"rate": 0.0, "wilson_low": 0.0, "wilson_high": pytest.approx(0.7935, abs=1e-3), "bar": 0.8}
    assert metrics["names a board task"] == wilson
    assert "plan covers open tasks" not in metrics  # applies to no sample of this run


def test_a_call_that_got_no_answer_shows_its_error_not_an_answer(tmp_path: Path) -> None:
    from tickloop.models.openai_compat import OpenAICompatModel  # noqa: PLC0415
    from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply  # noqa: PLC0415

    with OpenAIServer(default=Reply.error(500, "response_format.type: Input should be 'text'")) as server:
        model = OpenAICompatModel("scripted", base_url=server.base_url, model=MODEL_ID, timeout_s=10)
        log = written(run(model, ["spend"]), tmp_path)
    sample = log.samples[0]
    assert "HTTP 500" in (sample.output.error or "")
    assert [m.role for m in sample.messages if m.role == "assistant"] == []
    assert sample.scores["schema-valid"].value == "I"


def test_the_cli_writes_the_log_and_says_how_to_view_it(tmp_path: Path) -> None:
    """`--format inspect --out DIR` prints the table as usual, writes one .eval into DIR and says
    `inspect view` on it; inspect_ai is not imported by the table's own path."""
    env = cli_env(tmp_path)
    logs = tmp_path / "logs"
    done = tickloop(env, "operator", "eval", "--format", "inspect", "--out", str(logs), "--repeat", "2")
    assert done.returncode == 0, done.stderr
    (path,) = logs.glob("*.eval")
    assert "tickloop-operator-eval_offline" in path.name
    assert "schema-valid" in done.stdout
    assert "95% Wilson" in done.stdout
    assert f"Inspect log: {path}" in done.stdout
    assert f"inspect view --log-dir {logs}" in done.stdout
    code = "import sys, tickloop.cli.operator_eval, tickloop.operator.eval\n"
    code += "print('inspect_ai' in sys.modules)"
    lazy = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert lazy.stdout.strip() == "False"


def test_without_inspect_installed_it_says_which_extra_and_writes_nothing(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['inspect_ai'] = None\n"
        "from tickloop.cli import main\n"
        "sys.argv = ['tickloop', 'operator', 'eval', '--format', 'inspect', '--out', sys.argv[1]]\n"
        "sys.exit(main())\n"
    )
    logs = tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, "-c", code, str(logs)], env=cli_env(tmp_path), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--format inspect needs Inspect AI" in done.stderr
    assert "pip install -e '.[inspect]'" in done.stderr
    assert not logs.exists()


def test_json_and_inspect_are_one_format_each(tmp_path: Path) -> None:
    done = tickloop(cli_env(tmp_path), "operator", "eval", "--json", "--format", "inspect")
    assert done.returncode == 2
    assert "--json is --format json" in done.stderr


@pytest.mark.timeout(240)
def test_inspect_view_shows_the_prompt_the_answer_and_the_scores(tmp_path: Path) -> None:
    """`inspect view` serves the log and a headless Chromium shows a sample: the packet sent, the
    model's answer and each check's score."""
    scenario, bad = BAD["names a board task"]
    path = write_inspect(
        run(by_goal({scenario: bad})), load_suite(), "offline", repeat=1, out=tmp_path / "logs"
    )
    shots = Path(os.environ.get("SCREENSHOT_DIR", tmp_path))
    quote = urllib.parse.quote
    with inspect_page(path.parent, tmp_path) as (server, page):
        base = f"{server}/#/logs/{quote(path.name, safe='')}"
        page.goto(f"{base}/samples")
        page.get_by_text("advance-plan-step").first.wait_for(timeout=60_000)
        listing = page.inner_text("body")
        page.screenshot(path=str(shots / "operator-eval-samples.png"))
        page.goto(f"{base}/samples/sample/{scenario}/1")
        page.get_by_text("CONTEXT PACKET").first.wait_for(timeout=60_000)
        text = page.inner_text("body")
        page.screenshot(path=str(shots / "operator-eval-sample.png"), full_page=True)
    assert all(s.name in listing for s in load_suite())
    assert "Draft section 3.2 on sampling" in text  # the packet the tick sent
    assert "Soup." in text  # the model's answer
    assert (shots / "operator-eval-sample.png").stat().st_size > 10_000
