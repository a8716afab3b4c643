"""The last step of ``make local``: a real multi-token completion with the installed llama.cpp.

``python -m tickloop.models.local_smoke`` loads the packaged SmolLM2 GGUF and completes a prompt of
several tokens, in a child process with a timeout. An import check is not enough: a llama.cpp built
for CPU features this machine traps (AMX tiles under some virtual machines) imports, loads the model
and even completes a one-token prompt, then dies with SIGILL on the first longer prompt. Exit 0 with
one line of figures; otherwise 1 and what happened (the signal by name) and what to do.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Sequence

from tickloop.models.local_server import exit_description

#: several tokens: a one-token prompt does not reach the batched kernels that trapped here
PROMPT = "a long story about a cat and a dog. " * 3
MAX_TOKENS = 4
TIMEOUT_S = 300.0

#: the child: load the model, complete PROMPT, print "PROMPT_TOKENS COMPLETION_TOKENS"
CHILD = f"""
from llama_cpp import Llama
from tickloop.models.local_server import find_gguf
model = Llama(model_path=str(find_gguf()), verbose=False, n_threads=1, n_ctx=256)
usage = model.create_completion({PROMPT!r}, max_tokens={MAX_TOKENS}, temperature=0)["usage"]
print(usage["prompt_tokens"], usage["completion_tokens"])
"""


def child_command(python: str = sys.executable) -> list[str]:
    """The smoke test's command line: ``python -c CHILD``."""
    return [python, "-c", CHILD]


def run(command: Sequence[str], timeout_s: float = TIMEOUT_S) -> tuple[bool, str]:
    """Run the smoke test ``command``; (passed, one message for the person)."""
    started = time.monotonic()
    try:
        done = subprocess.run(  # noqa: S603  (our own interpreter, or the caller's test command)
            command, capture_output=True, text=True, timeout=timeout_s, check=False, preexec_fn=_no_core_dump
        )
    except subprocess.TimeoutExpired:
        return False, (
            f"smoke test FAILED: a {MAX_TOKENS}-token completion did not finish within {timeout_s:g} s; "
            "is the machine overloaded? Run `make local` again when it is idle."
        )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        shown = f"\n{tail}" if tail else ""
        return False, f"smoke test FAILED: llama.cpp {exit_description(done.returncode)}{shown}"
    return _counted(done.stdout, seconds)


def _no_core_dump() -> None:
    """A crashing child (SIGILL, SIGSEGV) leaves no core file in the checkout."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _counted(stdout: str, seconds: float) -> tuple[bool, str]:
    try:
        prompt_tokens, completion_tokens = (int(n) for n in stdout.split()[-2:])
    except ValueError:
        return False, f"smoke test FAILED: unexpected output {stdout[-200:]!r}"
    if prompt_tokens < 2 or completion_tokens < 1:
        return False, f"smoke test FAILED: {prompt_tokens} prompt token(s), {completion_tokens} generated"
    return True, (
        f"smoke test passed: a {prompt_tokens}-token prompt, {completion_tokens} token(s) generated "
        f"in {seconds:.1f} s (model load included)"
    )


def main() -> int:
    passed, message = run(child_command())
    print(message, file=sys.stdout if passed else sys.stderr)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
