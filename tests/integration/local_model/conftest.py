"""The real local model: `tickloop models serve-local` as a process, once for every local_model test.

If that server dies (llama.cpp killed by SIGILL on a CPU it was not built for, say), every later
test fails at once saying how it died, instead of each one waiting out its own timeout.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .local_support import ServedModel, check_alive, require_local_extra, start_serve_local, stop


@pytest.fixture(scope="session")
def served_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """One real llama.cpp server with SmolLM2 for the whole session, stopped with SIGTERM at the end."""
    require_local_extra()
    model = start_serve_local(tmp_path_factory.mktemp("serve-local") / "server.log")
    yield model
    stop(model.process)


@pytest.fixture
def served(served_session: ServedModel) -> Iterator[ServedModel]:
    """The session's server, checked alive before the test and after it (a death names its signal)."""
    check_alive(served_session)
    yield served_session
    check_alive(served_session, during=True)
