"""The real local model: `tickloop models serve-local` as a process, once for every local_model test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .local_support import ServedModel, require_local_extra, start_serve_local, stop


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """One real llama.cpp server with SmolLM2 for the whole session, stopped with SIGTERM at the end."""
    require_local_extra()
    model = start_serve_local(tmp_path_factory.mktemp("serve-local") / "server.log")
    yield model
    stop(model.process)
