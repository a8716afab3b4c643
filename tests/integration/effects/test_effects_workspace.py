"""``workspace_task``: a real build process, jailed, time-limited, output-capped, with a scrubbed env."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tickloop.errors import HandlerError, JailError
from tickloop.operator.handlers import (
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerSettings,
    HandlerStatus,
    WorkspaceSettings,
)
from tickloop.operator.handlers.workspace import workspace_task

PY = sys.executable
WRITER = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('escaped')"


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    """A directory outside the jail that no jailed build may write into."""
    outside = tmp_path / "sentinel"
    outside.mkdir()
    (outside / "evil.py").write_text(WRITER)
    return outside


@pytest.fixture
def jail(tmp_path: Path, sentinel: Path) -> Path:
    """A workspace with a writer script, a subdirectory, and symlinks pointing inside and outside."""
    root = tmp_path / "jail"
    (root / "sub").mkdir(parents=True)
    (root / "write.py").write_text(WRITER)
    (root / "link_in").symlink_to("sub")
    (root / "link_out").symlink_to(sentinel)
    (root / "link_chain").symlink_to("link_out")
    (root / "link_abs_in").symlink_to(root / "sub")
    return root


def _run(jail: Path, payload: dict[str, Any], **workspace: Any) -> HandlerResult:
    settings = HandlerSettings(workspace=WorkspaceSettings(jail=str(jail), programs=[PY], **workspace))
    request = HandlerRequest(
        intent_id=7, action_type="workspace_task", title="build", now=_now(), payload=payload, dry_run=False
    )
    return workspace_task(request, HandlerContext(settings=settings))


def _now() -> Any:
    from datetime import UTC, datetime  # noqa: PLC0415

    return datetime(2026, 7, 7, tzinfo=UTC)


def test_a_build_runs_in_the_jail_and_reports_its_output(jail: Path) -> None:
    """An allowed program runs with cwd inside the jail; exit code and output come back."""
    outcome = _run(jail, {"argv": [PY, "-c", "import os; print(os.getcwd())"], "cwd": "sub"})
    assert outcome.status is HandlerStatus.SENT
    assert outcome.details["exit_code"] == 0
    assert outcome.details["output"].strip() == str(jail / "sub")


def test_symlinks_that_stay_inside_the_jail_are_allowed(jail: Path) -> None:
    """A symlink inside the jail that points inside it is a normal path (the corpus is not refuse-all)."""
    assert _run(jail, {"argv": [PY, "write.py", "link_in/out.txt"]}).status is HandlerStatus.SENT
    assert _run(jail, {"argv": [PY, "write.py", "link_abs_in/out2.txt"]}).status is HandlerStatus.SENT
    assert (jail / "sub" / "out.txt").read_text() == "escaped"
    assert (jail / "sub" / "out2.txt").read_text() == "escaped"


ESCAPES: list[dict[str, Any]] = [
    {"argv": [PY, "write.py", "../sentinel/x"]},
    {"argv": [PY, "write.py", "sub/../../sentinel/x"]},
    {"argv": [PY, "write.py", "./../sentinel/x"]},
    {"argv": [PY, "write.py", "SENTINEL/x"]},
    {"argv": [PY, "write.py", "~/x"]},
    {"argv": [PY, "write.py", "link_out/x"]},
    {"argv": [PY, "write.py", "link_chain/x"]},
    {"argv": [PY, "write.py", "link_out"]},
    {"argv": [PY, "write.py", "\uff0e\uff0e/sentinel/x"]},
    {"argv": [PY, "write.py", "\u2025/sentinel/x"]},
    {"argv": [PY, "write.py", "\u2024\u2024/sentinel/x"]},
    {"argv": [PY, "write.py", "..\u2215sentinel\u2215x"]},
    {"argv": [PY, "write.py", "..\uff0fsentinel\uff0fx"]},
    {"argv": [PY, "write.py", "sub/" + "a" * 300]},
    {"argv": [PY, "write.py", "sub/" + "b/" * 600 + "x"]},
    {"argv": [PY, "write.py", "sub/x\x00"]},
    {"argv": [PY, "write.py", "--out=../sentinel/x"]},
    {"argv": [PY, "write.py", "-o../sentinel/x"]},
    {"argv": [PY, "write.py", "OUT=SENTINEL/x"]},
    {"argv": [PY, "../sentinel/evil.py", "x"]},
    {"argv": [PY, "SENTINEL/evil.py", "x"]},
    {"argv": ["../sentinel/evil.py", "x"]},
    {"argv": ["link_out/evil.py", "x"]},
    {"argv": ["/bin/sh", "-c", "echo escaped > ../sentinel/x"]},
    {"argv": ["sh", "-c", "echo escaped > ../sentinel/x"]},
    {"shell": "echo escaped > ../sentinel/x"},
    {"argv": [PY, "-c", "open('x', 'w').write('escaped')"], "cwd": "../sentinel"},
    {"argv": [PY, "-c", "open('x', 'w').write('escaped')"], "cwd": "link_out"},
    {"argv": [PY, "-c", "open('x', 'w').write('escaped')"], "cwd": "SENTINEL"},
    {"argv": [PY, "-c", "open('x', 'w').write('escaped')"], "cwd": "\uff0e\uff0e"},
    {"argv": "python write.py ../sentinel/x"},
    {"argv": []},
]


@pytest.mark.parametrize("payload", ESCAPES, ids=[repr(p)[:60] for p in ESCAPES])
def test_jail_escape_corpus_is_refused_and_nothing_lands_outside(
    jail: Path, sentinel: Path, payload: dict[str, Any]
) -> None:
    """Every escape attempt is refused before a process starts, and the sentinel directory is unchanged."""
    concrete = json.loads(json.dumps(payload).replace("SENTINEL", str(sentinel)))
    with pytest.raises(HandlerError):
        _run(jail, concrete)
    assert sorted(p.name for p in sentinel.iterdir()) == ["evil.py"]
    assert not (jail / "sub" / "x").exists()


def test_refusals_say_what_and_where(jail: Path) -> None:
    """A jail refusal names the argument and the rule it broke."""
    with pytest.raises(JailError, match=r"argv\[2\]: '\.\./sentinel/x' has a '\.\.' component"):
        _run(jail, {"argv": [PY, "write.py", "../sentinel/x"]})


def test_the_time_limit_kills_the_whole_process_group(jail: Path) -> None:
    """A build past its time limit is killed with its children and reported as failed and timed out."""
    late = jail / "sub" / "late.txt"
    (jail / "child.py").write_text(
        "import time, pathlib; time.sleep(1.0); pathlib.Path('sub/late.txt').write_text('x')"
    )
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, 'child.py']); time.sleep(30)"
    started = time.monotonic()
    outcome = _run(jail, {"argv": [PY, "-c", script]}, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert outcome.status is HandlerStatus.FAILED
    assert outcome.details["timed_out"] is True
    time.sleep(1.3)
    assert not late.exists()


def test_output_beyond_the_cap_kills_the_group_and_says_so(jail: Path) -> None:
    """Only the first outputCapBytes are kept; a program still writing past them is killed: output_cap."""
    script = "import sys; [sys.stdout.write('x' * 4096) for _ in iter(int, 1)]"
    started = time.monotonic()
    outcome = _run(jail, {"argv": [PY, "-c", script]}, output_cap_bytes=1000, timeout_s=30)
    assert time.monotonic() - started < 10  # the cap ended it, not the 30 s limit
    assert outcome.status is HandlerStatus.FAILED
    assert outcome.details["output"] == "x" * 1000
    assert (outcome.details["truncated"], outcome.details["ending"]) == (True, "output_cap")
    assert (outcome.details["timed_out"], outcome.details["exit_code"]) == (False, -9)


def test_trivial_programs_are_always_recorded_completed(jail: Path) -> None:
    """200 runs of an allowlisted program that exits at once all end sent with exit code 0, never -9.

    The output ends a moment before the process exits; recording that moment as a kill was the bug.
    """
    ls, touch = shutil.which("ls"), shutil.which("touch")
    assert ls is not None
    assert touch is not None
    settings = HandlerSettings(workspace=WorkspaceSettings(jail=str(jail), programs=[ls, touch]))
    endings = []
    for n in range(200):
        argv = [touch, f"sub/t{n}"] if n % 2 else [ls, "sub"]
        request = HandlerRequest(
            intent_id=n,
            action_type="workspace_task",
            title="t",
            now=_now(),
            payload={"argv": argv},
            dry_run=False,
        )
        outcome = workspace_task(request, HandlerContext(settings=settings))
        endings.append((outcome.status, outcome.details["exit_code"], outcome.details.get("ending")))
    assert endings == [(HandlerStatus.SENT, 0, "exited")] * 200
    assert len(list((jail / "sub").glob("t*"))) == 100


def test_a_program_that_closes_its_output_and_keeps_running_is_timed_out(jail: Path) -> None:
    """The end of the output is not the end of the program: it is waited for, then killed at the limit."""
    marker = jail / "sub" / "still-running.txt"
    (jail / "quiet.py").write_text(
        "import os, time, pathlib\nos.close(1)\nos.close(2)\ntime.sleep(1.0)\n"
        "pathlib.Path('sub/still-running.txt').write_text('x')\ntime.sleep(30)\n"
    )
    started = time.monotonic()
    outcome = _run(jail, {"argv": [PY, "quiet.py"]}, timeout_s=6.0)
    waited = time.monotonic() - started
    assert marker.exists()  # it was not killed when its output ended
    assert 6.0 <= waited < 20
    assert outcome.status is HandlerStatus.FAILED
    assert (outcome.details["ending"], outcome.details["timed_out"], outcome.details["exit_code"]) == (
        "timed_out",
        True,
        -9,
    )


def test_a_program_that_exits_after_closing_its_output_keeps_its_exit_code(jail: Path) -> None:
    """A program that closes its output, works on, then exits 0 within the limit is sent, not killed."""
    (jail / "quiet.py").write_text(
        "import os, time, pathlib\nos.close(1)\nos.close(2)\ntime.sleep(0.3)\n"
        "pathlib.Path('sub/done.txt').write_text('x')\n"
    )
    outcome = _run(jail, {"argv": [PY, "quiet.py"]}, timeout_s=20)
    assert (outcome.status, outcome.details["exit_code"], outcome.details["ending"]) == (
        HandlerStatus.SENT,
        0,
        "exited",
    )
    assert (jail / "sub" / "done.txt").exists()


def test_a_failing_build_is_a_failed_result_with_its_exit_code(jail: Path) -> None:
    """A non-zero exit is reported as failed with the code, not raised."""
    outcome = _run(jail, {"argv": [PY, "-c", "import sys; print('boom'); sys.exit(3)"]})
    assert outcome.status is HandlerStatus.FAILED
    assert (outcome.details["exit_code"], outcome.details["output"].strip()) == (3, "boom")


def test_secrets_in_the_parent_environment_never_reach_the_build(
    jail: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child sees only allowlisted variables and HOME set to the jail; a parent secret is invisible."""
    monkeypatch.setenv("TICKLOOP_SMTP_PASSWORD", "parent-secret-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-secret-2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    outcome = _run(jail, {"argv": [PY, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]})
    env = json.loads(outcome.details["output"])
    assert "parent-secret" not in outcome.details["output"]
    assert env["HOME"] == str(jail)
    assert env["LANG"] == "C.UTF-8"
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "LC_CTYPE"}


def test_a_script_that_cannot_start_is_refused_not_crashed(jail: Path) -> None:
    """A workspace script without the execute bit is a HandlerError naming it; nothing ran."""
    (jail / "build.sh").write_text("#!/bin/sh\necho built > built.txt\n")
    with pytest.raises(HandlerError, match=r"could not start .*build\.sh.*Permission denied"):
        _run(jail, {"argv": ["./build.sh"]})
    assert not (jail / "built.txt").exists()


def test_a_program_outside_the_allowlist_is_refused(jail: Path) -> None:
    """argv[0] must be an allowed program or a script inside the workspace."""
    with pytest.raises(JailError, match=r"not in handlers\.workspace\.programs"):
        _run(jail, {"argv": ["rm", "-rf", "sub"]})
    assert (jail / "sub").is_dir()


def test_a_shell_runs_only_when_the_settings_allow_it(jail: Path) -> None:
    """With allowShell the payload's shell string runs under /bin/sh inside the jail."""
    outcome = _run(jail, {"shell": "echo built > out.txt && cat out.txt"}, allow_shell=True)
    assert outcome.details["output"].strip() == "built"
    assert (jail / "out.txt").read_text().strip() == "built"


def test_an_unconfigured_jail_refuses_every_task(tmp_path: Path) -> None:
    """Without handlers.workspace.jail no build runs, and the error says what to configure."""
    request = HandlerRequest(
        intent_id=7, action_type="workspace_task", title="b", now=_now(), payload={"argv": [PY]}
    )
    with pytest.raises(HandlerError, match=r"handlers\.workspace\.jail is empty"):
        workspace_task(request, HandlerContext())
