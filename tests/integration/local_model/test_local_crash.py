"""When llama.cpp dies: serve-local names the signal, the shared fixture fails the rest at once, and
`make local`'s smoke test and install check pass on the installed build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .local_support import (
    ServedModel,
    check_alive,
    no_core_dump,
    require_local_extra,
    start_serve_local,
    stop,
)

ROOT = Path(__file__).parents[3]


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _fail_message(model: ServedModel) -> str:
    with pytest.raises(pytest.fail.Exception) as failed:
        check_alive(model)
    return str(failed.value)


def test_a_dead_server_fails_every_later_test_at_once_naming_the_signal(tmp_path: Path) -> None:
    """Once the session's server process died by a signal, each check fails at once naming it."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=no_core_dump,  # noqa: PLW1509  (only sets a limit)
    )
    model = ServedModel("http://127.0.0.1:1/v1", process, tmp_path / "log")
    check_alive(model)  # alive: nothing happens
    process.send_signal(signal.SIGILL)
    process.wait(timeout=20)
    first, second = _fail_message(model), _fail_message(model)
    assert "serve-local died with SIGILL: it was built for CPU features" in first
    assert "before this test" in first
    assert "every later local_model test fails at once" in first
    assert second == first
    stop(process)


@pytest.mark.timeout(240)
def test_serve_local_names_sigill_when_llama_cpp_dies(tmp_path: Path) -> None:
    """llama.cpp killed by a real SIGILL: serve-local exits 1 saying "died with SIGILL" and to rebuild
    with `make local`, and the fixture's check passes that on."""
    require_local_extra()
    model = start_serve_local(tmp_path / "server.log")
    (llama,) = _children(model.process.pid)
    os.kill(llama, signal.SIGILL)
    assert model.process.wait(timeout=60) == 1
    message = _fail_message(model)
    stop(model.process)
    assert "serve-local exited 1" in message
    assert "the local model server (llama.cpp, port " in message
    assert (
        "died with SIGILL: it was built for CPU features this machine cannot use; rebuild with `make local`"
        in message
    )


@pytest.mark.timeout(360)
def test_the_smoke_test_completes_several_tokens_with_the_installed_build() -> None:
    """`python -m tickloop.models.local_smoke` completes a multi-token prompt with this venv's llama.cpp."""
    require_local_extra()
    done = subprocess.run(
        [sys.executable, "-m", "tickloop.models.local_smoke"],
        capture_output=True,
        text=True,
        timeout=330,
        check=False,
        preexec_fn=no_core_dump,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("smoke test passed: a ")


@pytest.mark.timeout(360)
def test_make_local_on_this_venv_is_the_portable_build_and_passes_its_smoke_test() -> None:
    """`scripts/install_local.sh --check` finds this venv running its portable wheel, and its smoke test
    passes (`.ci/run` ran `make local` before the tests)."""
    require_local_extra()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_local.sh"), "--check", sys.executable],
        capture_output=True,
        text=True,
        timeout=330,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "local extra: already installed (llama-cpp-python 0.3.36 from " in done.stdout
    assert "smoke test passed" in done.stdout
