"""Helpers for the local_model tests: serve-local as a process, and the `local` model pointed at it.

Outside CI a missing `local` extra skips these tests with the install step; under CI=true it fails
them (a skip would hide a broken install step in `.ci/run`).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tickloop.config import load_settings
from tickloop.models.local_server import INSTALL_HINT, exit_description, missing_parts
from tickloop.models.openai_compat import OpenAICompatModel
from tickloop.models.registry import get_model

#: seconds a `serve-local` process may take to print its URL (the issue measured ~2 s)
READY_S = 90.0


@dataclass(frozen=True)
class ServedModel:
    """A running `serve-local` process and its base URL."""

    base_url: str
    process: subprocess.Popen[str]
    log_path: Path
    #: how it died, worked out once (its stderr can be read only once)
    death: list[str] = field(default_factory=list)


def check_alive(model: ServedModel, *, during: bool = False) -> None:
    """Fail now, naming the signal or exit code and what serve-local said, if the server has died."""
    code = model.process.poll()
    if code is None:
        return
    if not model.death:
        said = model.process.stderr.read() if model.process.stderr is not None else ""
        # serve-local's own error ("tickloop: ... died with SIGILL: ...") and the log tail under it
        lines = said.strip().splitlines()
        start = next(
            (i for i, line in enumerate(lines) if line.startswith("tickloop: ")), max(0, len(lines) - 6)
        )
        tail = "\n".join(lines[start : start + 8])
        how = exit_description(code) if code < 0 else f"exited {code}"
        model.death.append(f"serve-local {how}; it said:\n{tail}" if tail else f"serve-local {how}")
    when = "during this test" if during else "before this test"
    pytest.fail(
        f"the session's local model server is dead ({when}): {model.death[0]}\n"
        "every later local_model test fails at once for the same reason",
        pytrace=False,
    )


def require_local_extra() -> None:
    """Skip (fail under CI=true) when the `local` extra is not installed."""
    missing = missing_parts()
    if not missing:
        return
    message = f"the `local` extra is not installed (missing: {', '.join(missing)}); {INSTALL_HINT}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"LOCAL MODEL MISSING IN CI: {message}. `.ci/run` must run `make local`.")
    pytest.skip(message)


def no_core_dump() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}


def start_serve_local(log_path: Path) -> ServedModel:
    """`python -m tickloop models serve-local --port 0`, as a person runs it; waits for its URL."""
    command = [sys.executable, "-m", "tickloop", "models", "serve-local", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--log", str(log_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        preexec_fn=no_core_dump,  # noqa: PLW1509  (only sets a limit) a crash (SIGILL) leaves no core file
    )
    assert process.stdout is not None
    # serve-local gives up on its own after 60 s and exits, which ends this read: it cannot hang.
    base_url = process.stdout.readline().strip()
    if not base_url.startswith("http://127.0.0.1:"):
        stop(process)
        log = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
        pytest.fail(f"serve-local did not start (exit {process.returncode}); log:\n{log}")
    return ServedModel(base_url, process, log_path)


def stop(process: subprocess.Popen[str], sig: int = signal.SIGTERM) -> int:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    return process.returncode


def endpoint_config(tmp_path: Path, base_url: str, **options: Any) -> Path:
    """A config file whose `local` model points at ``base_url`` (temperature 0: repeatable answers)."""
    lines = ["[model.endpoints.local]", f'baseUrl = "{base_url}"', 'model = "smollm2"', "temperature = 0"]
    names = {"max_tokens": "maxTokens", "timeout_s": "timeoutS", "response_format": "responseFormat"}
    for key, value in options.items():
        lines.append(f"{names[key]} = {value!r}".replace("'", '"'))
    path = tmp_path / "tickloop.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def local_model(tmp_path: Path, base_url: str, **options: Any) -> OpenAICompatModel:
    """The registry's `local` model, configured the way a person would: a `[model.endpoints.local]` table."""
    settings = load_settings({}, endpoint_config(tmp_path, base_url, **options))
    model = get_model("local", settings, {})
    assert isinstance(model, OpenAICompatModel)
    return model
