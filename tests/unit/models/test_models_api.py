"""The public surface of tickloop.models stays deliberate."""

from __future__ import annotations

import types

import tickloop.models


def test_all_lists_exactly_the_public_names() -> None:
    """`__all__` names every public attribute of tickloop.models and nothing else (each loaded on first
    use: once all are touched, nothing else is public)."""
    for name in tickloop.models.__all__:
        getattr(tickloop.models, name)
    public = {
        name
        for name, value in vars(tickloop.models).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name != "annotations"
    }
    assert set(tickloop.models.__all__) == public
    assert sorted(tickloop.models.__all__) == tickloop.models.__all__
