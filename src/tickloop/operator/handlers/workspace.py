"""Tier 1 ``workspace_task``: a build command, as an argv list, in the jailed workspace.

Bounded three ways: a wall-clock limit and an output cap (past either, the whole process group is
killed and the result says which ended it), and an environment reduced to an allowlist with HOME set to
the jail. A program that exits on its own is always waited for, so its exit code is its own.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec

from tickloop.errors import HandlerError, JailError
from tickloop.operator.handlers.base import (
    HandlerContext,
    HandlerRequest,
    HandlerResult,
    HandlerStatus,
    result,
    text_field,
)
from tickloop.operator.handlers.jail import check_argv, jail_root, resolve_in_jail
from tickloop.operator.handlers.settings import WorkspaceSettings

_READ = 64 * 1024
#: how often the reader looks up from the pipe to check the clock and the child.
_POLL_S = 0.05


class Ending(enum.StrEnum):
    """Why a bounded process stopped: on its own, or killed with its group for one of two reasons."""

    EXITED = "exited"
    TIMED_OUT = "timed_out"
    OUTPUT_CAP = "output_cap"


class RunOutcome(msgspec.Struct, frozen=True):
    """How a bounded process ended."""

    exit_code: int
    output: bytes
    truncated: bool
    timed_out: bool
    duration_s: float
    ending: Ending = Ending.EXITED


def workspace_task(request: HandlerRequest, context: HandlerContext) -> HandlerResult:
    """Run ``payload.argv`` (or ``payload.shell`` if allowed) with ``payload.cwd`` inside the jail."""
    settings = context.settings.workspace
    jail = jail_root(settings.jail)
    env = scrubbed_env(context.environ(), settings, jail)
    cwd = resolve_in_jail(jail, text_field(request, "cwd", default=".", limit=1024), where="payload.cwd")
    if not cwd.is_dir():
        raise HandlerError(f"payload.cwd: {cwd} is not a directory in the workspace")
    argv = _argv(request, settings, jail, cwd, env.get("PATH"))
    args = json.dumps({"argv": argv, "cwd": str(cwd), "timeout_s": settings.timeout_s})
    if request.dry_run:
        return result(request, HandlerStatus.SENT, "workspace.run", str(cwd), args)
    outcome = run_bounded(argv, cwd=cwd, env=env, timeout_s=settings.timeout_s, cap=settings.output_cap_bytes)
    ok = outcome.ending is Ending.EXITED and outcome.exit_code == 0
    return result(
        request,
        HandlerStatus.SENT if ok else HandlerStatus.FAILED,
        "workspace.run",
        str(cwd),
        args,
        exit_code=outcome.exit_code,
        output=outcome.output.decode("utf-8", "replace"),
        truncated=outcome.truncated,
        timed_out=outcome.timed_out,
        ending=outcome.ending.value,
        duration_s=round(outcome.duration_s, 3),
    )


def _argv(
    request: HandlerRequest, settings: WorkspaceSettings, jail: Path, cwd: Path, path: str | None
) -> list[str]:
    if "shell" in request.payload:
        if not settings.allow_shell:
            raise JailError("payload.shell: shell commands are off; set handlers.workspace.allowShell = true")
        command = text_field(request, "shell", limit=4096)
        return check_argv(jail, ["/bin/sh", "-c", command], cwd=cwd, programs=["/bin/sh"], path=path)
    return check_argv(jail, request.payload.get("argv"), cwd=cwd, programs=settings.programs, path=path)


def scrubbed_env(parent: Mapping[str, str], settings: WorkspaceSettings, jail: Path) -> dict[str, str]:
    """Only allowlisted variables from ``parent``; HOME is the jail, so no dotfile outside is read."""
    env = {name: parent[name] for name in settings.env_allowlist if name in parent}
    env["HOME"] = str(jail)
    env.setdefault("PATH", os.defpath)
    return env


def run_bounded(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float, cap: int) -> RunOutcome:
    """Run ``argv`` without a shell in its own process group, and wait for it to exit.

    The end of its output is not its exit: after the pipe closes the child is still waited for, up to
    the deadline. The group is killed only at the deadline (ending ``timed_out``) or when the output
    passes the cap (ending ``output_cap``); a child that exited on its own ends ``exited`` with its
    own exit code. Whatever it left running in its group is ended after it exits.
    """
    # Real processes run on real time: the deadline is monotonic wall time, not the injected clock.
    started = time.monotonic()
    deadline = started + timeout_s
    try:
        process = subprocess.Popen(  # noqa: S603  (argv was checked by check_argv; no shell)
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:  # nothing started: not executable, vanished, too many processes
        raise HandlerError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from None
    try:
        output, truncated, stop = _collect(process, deadline, cap)
        if stop == "eof" and not _wait_exit(process, deadline):
            stop = "deadline"
        if stop == "cap" and _exited(process):
            stop = "exited"  # it finished before the cap was seen: its own exit code stands
        ending = {"deadline": Ending.TIMED_OUT, "cap": Ending.OUTPUT_CAP}.get(stop, Ending.EXITED)
    finally:
        # Ends the group at the deadline or the cap; after an exit it only ends what the child left
        # behind (the child itself is unreaped, so its pid, the group id, cannot have been reused).
        _kill_group(process)
        process.wait()
    return RunOutcome(
        process.returncode,
        output,
        truncated,
        ending is Ending.TIMED_OUT,
        time.monotonic() - started,
        ending,
    )


def _collect(process: subprocess.Popen[bytes], deadline: float, cap: int) -> tuple[bytes, bool, str]:
    """Read until the pipe ends (``eof``), the child exits with the pipe held open by a grandchild
    (``exited``), the deadline (``deadline``), or output past the cap (``cap``)."""
    assert process.stdout is not None  # stdout=PIPE above guarantees it
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    kept = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if not selector.select(min(remaining, _POLL_S)):
                if _exited(process):
                    # The child exited but a grandchild still holds the pipe: stop listening.
                    return bytes(kept), False, "exited"
                continue
            chunk = _read(fd)
            if chunk is None:
                continue
            if chunk == b"":
                return bytes(kept), False, "eof"
            room = max(0, cap - len(kept))
            kept += chunk[:room]
            if len(chunk) > room:
                return bytes(kept), True, "cap"
    return bytes(kept), False, "deadline"


def _wait_exit(process: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait, without reaping, until the child exits (True) or the deadline passes (False)."""
    pause = 0.001
    while not _exited(process):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, _POLL_S)
    return True


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ)
    except BlockingIOError:
        return None


def _exited(process: subprocess.Popen[bytes]) -> bool:
    # WNOWAIT leaves the child unreaped, so its pid (= the group id) cannot be reused before _kill_group.
    status = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return status is not None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The build may have started children; they share its process group, so end them together.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.stdout is not None:
        process.stdout.close()
