"""The arrows point one way (DESIGN.md): cli -> web/mcp/experiment -> harness -> operator -> protocol,
audit, models, notify -> the small foundation modules. No import, lazy or not, runs back up."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tickloop"
#: each top-level module or package of tickloop, and its rank: imports go to the same or a lower rank
RANK = {
    **dict.fromkeys(["errors", "clock", "sha256", "filenames", "dirs", "system", "inert", "config"], 0),
    "config_cache": 0,
    "config_sections": 0,  # names each section's struct by string and imports it when checked
    **dict.fromkeys(["presence", "protocol"], 0),
    **dict.fromkeys(["audit", "models", "notify"], 1),
    "operator": 2,
    "harness": 3,  # the chat's workspace tools use the operator's jail; the operator never imports the chat
    **dict.fromkeys(["web", "mcp", "experiment", "doctor", "config_reference", "testing"], 4),
    "__init__": 0,  # the root package holds only __version__
    **dict.fromkeys(["cli", "__main__"], 5),
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name == "tickloop" or name.startswith("tickloop.")]


def _module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_every_module_has_a_layer() -> None:
    """A new top-level module must be placed in the table above, so its arrows are checked."""
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    tops.discard("__pycache__")
    assert tops - RANK.keys() == set()


def test_no_import_runs_back_up_a_layer() -> None:
    """Every import (including lazy ones inside functions) points to the same or a lower layer."""
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _layer(_module(path))
        for line, target in _imports(path):
            layer = _layer(target)
            if RANK[layer] > RANK[source]:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {source} imports {target}")
    assert upward == []


def test_the_protocol_imports_nothing_of_ours_but_errors() -> None:
    """protocol/ is pure (STYLE.md habit 1): it imports the error tree, and the two pure string helpers
    the verifier needs to bind a file to its session (``filenames``, ``sha256``): no I/O, clock or env."""
    outside = [
        f"{path.name}: {target}"
        for path in sorted((PACKAGE / "protocol").rglob("*.py"))
        for _, target in _imports(path)
        if not target.startswith(
            ("tickloop.protocol", "tickloop.errors", "tickloop.filenames", "tickloop.sha256")
        )
    ]
    assert outside == []
