"""The public names of the handler and notify packages are exactly what ``__all__`` promises."""

from __future__ import annotations

import types

import pytest

import tickloop.notify
import tickloop.operator.handlers


@pytest.mark.parametrize("module", [tickloop.notify, tickloop.operator.handlers])
def test_all_lists_every_public_name(module: types.ModuleType) -> None:
    """``__all__`` names every public attribute and nothing else, so imports don't rely on internals
    (each name resolves, also where the package imports its names lazily)."""
    for name in module.__all__:
        getattr(module, name)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name != "annotations"
    }
    assert set(module.__all__) == public
