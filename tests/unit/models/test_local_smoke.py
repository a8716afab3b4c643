"""`make local`'s smoke test and serve-local's crash message, against real processes and real signals."""

from __future__ import annotations

import sys

import pytest

from tickloop.models import local_server, local_smoke


def _dies_with(signal_name: str) -> list[str]:
    return [sys.executable, "-c", f"import os, signal; os.kill(os.getpid(), signal.{signal_name})"]


@pytest.mark.parametrize(
    ("returncode", "expected"),
    [
        (-4, "died with SIGILL: it was built for CPU features this machine cannot use; rebuild with `make"),
        (-9, "died with SIGKILL: something killed it (often the kernel's out-of-memory killer)"),
        (-11, "died with SIGSEGV: it crashed; reinstall it with `make local`"),
        (-15, "died with SIGTERM"),
        (-200, "died with signal 200"),
        (1, "exited unexpectedly with code 1"),
    ],
)
def test_an_exit_is_described_by_its_signal_name_and_what_to_do(returncode: int, expected: str) -> None:
    """serve-local says "died with SIGILL" and what to do, never "exited unexpectedly with code -4"."""
    assert local_server.exit_description(returncode).startswith(expected)
    assert "-4" not in local_server.exit_description(-4)


def test_the_smoke_test_names_a_fatal_signal_and_the_rebuild() -> None:
    """A completion that dies with a real SIGILL fails the smoke test naming the signal and `make local`."""
    passed, message = local_smoke.run(_dies_with("SIGILL"), timeout_s=60)
    assert not passed
    assert message.startswith("smoke test FAILED: llama.cpp died with SIGILL: it was built for CPU features")
    assert "make local" in message


def test_a_smoke_test_that_hangs_fails_at_its_timeout() -> None:
    """A completion that never finishes fails the smoke test at its timeout, saying so."""
    passed, message = local_smoke.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout_s=0.5)
    assert not passed
    assert "did not finish within 0.5 s" in message


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        # a one-token prompt proves nothing: it ran here while longer ones died with SIGILL
        ("1 4\n", "1 prompt token(s)"),
        ("27 0\n", "0 generated"),
        ("Traceback\n", "unexpected output"),
    ],
)
def test_a_smoke_test_that_proves_too_little_fails(stdout: str, expected: str) -> None:
    """Only a prompt of several tokens with at least one token generated passes."""
    passed, message = local_smoke.run([sys.executable, "-c", f"print({stdout!r}, end='')"], timeout_s=60)
    assert not passed
    assert expected in message


def test_a_multi_token_completion_passes_with_its_figures() -> None:
    """A child that reports a 27-token prompt and 4 tokens generated passes, with those figures shown."""
    passed, message = local_smoke.run([sys.executable, "-c", "print(27, 4)"], timeout_s=60)
    assert passed
    assert message.startswith("smoke test passed: a 27-token prompt, 4 token(s) generated in ")
