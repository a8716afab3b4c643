"""The public Python surface: each package a library user imports declares ``__all__``, the API reference
(docs/api.md, rendered from ``__all__`` by mkdocstrings) documents exactly those names, and each of them
has a docstring. A public class or function defined in the package but left out of ``__all__`` fails."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["tickloop.protocol", "tickloop.testing", "tickloop.operator.store"]


def _defined_here(module: object) -> set[str]:
    """Public classes and functions whose home is this package (not names it merely imports)."""
    name = module.__name__  # type: ignore[attr-defined]
    return {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith(name)
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_all_lists_every_public_name_and_each_exists_with_a_docstring(package: str) -> None:
    """``__all__`` names real objects with docstrings, and no public definition is missing from it."""
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported))
    for attr in exported:
        value = getattr(module, attr)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{package}.{attr} has no docstring"
    assert _defined_here(module) - set(exported) == set()


@pytest.mark.parametrize("package", PACKAGES)
def test_the_api_reference_documents_each_package(package: str) -> None:
    """docs/api.md renders each public package (mkdocstrings reads its ``__all__``)."""
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert re.search(rf"^::: {re.escape(package)}$", api, flags=re.M), package
