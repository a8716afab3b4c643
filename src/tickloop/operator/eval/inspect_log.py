"""``tickloop operator eval --format inspect``: the run as one Inspect AI eval log (``.eval``), so
``inspect view`` shows every answer.

The mapping follows the experiments' export (``tickloop.experiment.inspect_log``; the layers keep the
operator from importing it, and its functions read experiment run directories):

- the run is one log; its task is ``tickloop-operator-eval``, its model ``none/NAME`` (tickloop made
  the calls, so Inspect has none to make), its header's metadata the bar and the per-tick figures;
- a scenario is a sample (``id``: its name, ``epoch``: the repeat); its messages are what the tick sent
  and what the model answered, word for word (a call that got no answer: its error, in ``output``);
- each check that applied is a score (``C`` passed, ``I`` failed); the sample's metadata holds every
  verdict, ``null`` where a check does not apply, with the row's outcome and each call's figures;
- the results give each check's rate, 95% Wilson interval and bar, as the table does.

The scenarios are the suite's own made-up situations, so nothing is redacted. ``inspect_ai`` (extra
``inspect``) is imported only on this path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickloop import __version__
from tickloop.errors import ConfigError, extra_hint
from tickloop.operator.eval.checks import CHECKS
from tickloop.operator.eval.scenarios import Scenario

if TYPE_CHECKING:
    from tickloop.operator.eval import EvalResult
    from tickloop.operator.eval.trial import Call, Trial

TASK = "tickloop-operator-eval"


def require_inspect() -> None:
    """``ConfigError`` naming the extra when Inspect AI is not installed (before anything runs)."""
    try:
        import inspect_ai.log  # noqa: F401, PLC0415
    except ImportError:
        raise ConfigError(f"--format inspect needs Inspect AI: {extra_hint('inspect')}") from None


def write_inspect(
    result: EvalResult, scenarios: Sequence[Scenario], model: str, *, repeat: int, out: Path
) -> Path:
    """Write the run's log into the directory ``out`` (under a temporary name, then renamed); its path."""
    from inspect_ai.log import write_eval_log  # noqa: PLC0415

    require_inspect()
    created = (result.started or datetime.now(UTC)).replace(microsecond=0)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "model"
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = out / f"{created:%Y-%m-%dT%H-%M-%S}_{TASK}_{safe}.eval"
    partial = path.with_name(f".{path.name}.partial")
    try:
        write_eval_log(_log(result, scenarios, model, repeat, created), partial, format="eval")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _log(
    result: EvalResult, scenarios: Sequence[Scenario], model: str, repeat: int, created: datetime
) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec, EvalStats  # noqa: PLC0415

    by_name = {s.name: s for s in scenarios}
    names = list(dict.fromkeys(t.scenario for t in result.trials))
    samples = [
        _sample(by_name[t.scenario], t, v, model) for t, v in zip(result.trials, result.verdicts, strict=True)
    ]
    eval_id = hashlib.sha256(f"{TASK}/{model}/{created.isoformat()}".encode()).hexdigest()[:22]
    spec = EvalSpec(
        eval_id=eval_id, run_id=eval_id, created=created.isoformat(), task=TASK, task_id=eval_id,
        task_args={"repeat": repeat, "scenarios": names},
        dataset=EvalDataset(name="tickloop operator eval suite", samples=len(names), sample_ids=list(names)),
        model=f"none/{model}", config=EvalConfig(epochs=repeat), packages={"tickloop": __version__},
        metadata={"tickloop_version": __version__, "model": model,
                  "bar": {s.check: s.bar for s in result.stats}, "per_tick": _plain(result.per_tick)},
    )  # fmt: skip
    results = EvalResults(
        total_samples=len(samples), completed_samples=len(samples), scores=_scores(result, len(samples))
    )
    began, ended = result.started or created, result.finished or created
    stats = EvalStats(started_at=began.isoformat(), completed_at=ended.isoformat())
    return EvalLog(status="success", eval=spec, results=results, stats=stats, samples=samples)


def _scores(result: EvalResult, total: int) -> list[Any]:
    """Per check that applied to any trial: its rate, Wilson interval and bar."""
    from inspect_ai.log import EvalMetric, EvalScore  # noqa: PLC0415

    rows = []
    for row in result.stats:
        if not row.applied:
            continue
        figures = {"rate": row.rate or 0.0, "wilson_low": row.low, "wilson_high": row.high, "bar": row.bar}
        metrics = {name: EvalMetric(name=name, value=value) for name, value in figures.items()}
        rows.append(
            EvalScore(
                name=row.check, scorer=row.check, scored_samples=row.applied,
                unscored_samples=total - row.applied, metrics=metrics,
                metadata={"passed": row.passed, "applied": row.applied, "meets_bar": row.meets_bar},
            )
        )  # fmt: skip
    return rows


def _sample(scenario: Scenario, trial: Trial, verdict: Mapping[str, bool | None], model: str) -> Any:
    from inspect_ai.log import EvalSample  # noqa: PLC0415
    from inspect_ai.model import ModelOutput, ModelUsage  # noqa: PLC0415

    messages = [m for call in trial.calls for m in _messages(call, model)]
    opening = [m for m in messages if m.role != "assistant"]
    error = next((c.error for c in trial.calls if c.error), None)
    counted = bool(trial.calls) and all(
        c.tokens_in is not None and c.tokens_out is not None for c in trial.calls
    )
    tokens_in = sum(c.tokens_in or 0 for c in trial.calls)
    tokens_out = sum(c.tokens_out or 0 for c in trial.calls)
    usage = ModelUsage(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out)
    return EvalSample(
        id=scenario.name, epoch=trial.repeat, input=opening or scenario.about, target=_target(scenario),
        messages=messages, output=ModelOutput(model=model, completion=trial.answer or "", error=error),
        scores=_verdicts(verdict, trial.answer), metadata=_metadata(scenario, trial, verdict),
        model_usage={model: usage} if counted else {}, total_time=round(trial.seconds, 3),
        working_time=round(sum(c.seconds for c in trial.calls), 3),
    )  # fmt: skip


def _messages(call: Call, model: str) -> list[Any]:
    """One model call: the messages the tick sent, then the answer (none when the call got none)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser  # noqa: PLC0415

    made: list[Any] = []
    for sent in call.prompt:
        role, content = sent["role"], sent["content"]
        if role == "system":
            made.append(ChatMessageSystem(content=content))
        elif role == "assistant":
            made.append(ChatMessageAssistant(content=content, model=model))
        else:
            made.append(ChatMessageUser(content=content))
    if not call.error:
        meta = {"finish_reason": call.finish_reason, "tokens_out": call.tokens_out}
        made.append(ChatMessageAssistant(content=call.text, model=model, metadata={"tickloop": meta}))
    return made


def _verdicts(verdict: Mapping[str, bool | None], answer: str | None) -> dict[str, Any]:
    """Each check that applied as a score: ``C`` passed, ``I`` failed; its rule as the explanation."""
    from inspect_ai.scorer import Score  # noqa: PLC0415

    return {
        name: Score(value="C" if ok else "I", answer=answer, explanation=_rule(name))
        for name, ok in verdict.items()
        if ok is not None
    }


def _rule(check: str) -> str:
    doc = CHECKS[check][0].__doc__ or ""
    return " ".join(doc.split())


def _target(scenario: Scenario) -> str:
    """What a good answer does, in the scenario's own terms (Inspect's ``target``)."""
    expect = scenario.expect
    said = [f"outcome {' or '.join(expect.outcomes)}"]
    if expect.escalate:
        said.append("stops at the gate for the person")
    if expect.forbid_types:
        said.append(f"never {', '.join(expect.forbid_types)}")
    if expect.mentions:
        said.append(f"names {' or '.join(repr(m) for m in expect.mentions)}")
    if expect.covers_open_tasks:
        said.append("plans every open task")
    return "; ".join(said)


def _metadata(scenario: Scenario, trial: Trial, verdict: Mapping[str, bool | None]) -> dict[str, Any]:
    calls = [
        {"tokens_in": c.tokens_in, "tokens_out": c.tokens_out, "seconds": round(c.seconds, 3),
         "finish_reason": c.finish_reason, "error": c.error or None}
        for c in trial.calls
    ]  # fmt: skip
    return {
        "scenario": scenario.name, "tick": scenario.tick, "about": scenario.about, "repeat": trial.repeat,
        "outcome": trial.outcome, "error": trial.error or None, "statuses": trial.statuses,
        "open_task_ids": trial.open_ids, "checks": dict(verdict), "calls": calls,
    }  # fmt: skip


def _plain(figures: Mapping[str, Any]) -> dict[str, Any]:
    import msgspec  # noqa: PLC0415

    plain: dict[str, Any] = msgspec.to_builtins(figures)
    return plain
