"""Fixtures: a real OpenAI-compatible server on 127.0.0.1 and a provider pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tickloop.models import OpenAICompatModel
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer

#: a key-shaped secret: tests assert it never appears in an error message
API_KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    """A fresh scripted server per test (replies default to 'hello from the test server')."""
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def api_key() -> str:
    """The key the ``model`` fixture sends; tests assert it never appears in an error message."""
    return API_KEY


@pytest.fixture
def model(server: OpenAIServer) -> OpenAICompatModel:
    """The provider under test, with a short timeout so failure paths finish fast."""
    return OpenAICompatModel("test", base_url=server.base_url, model=MODEL_ID, api_key=API_KEY, timeout_s=2.0)
