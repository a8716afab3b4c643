"""Where tickloop keeps its files unless told otherwise: the per-user config, data and state dirs.

On Linux these follow the XDG Base Directory specification directly: ``$XDG_CONFIG_HOME``,
``$XDG_DATA_HOME`` and ``$XDG_STATE_HOME`` when set to an absolute path, else ``~/.config``,
``~/.local/share`` and ``~/.local/state``; a relative path in one of them is ignored, as the
specification says. Elsewhere (macOS, Windows) platformdirs knows the platform's rules. The Linux
rule is a few lines here because platformdirs' Unix module imports tempfile, shutil and random, a
cost every one-shot operator tick would pay at start-up.

``user_dir`` gives the same folders as ``str``: the one-shot ticks use it, and never import
``pathlib`` (with ``urllib.parse`` and ``ipaddress``, which it imports, 0.4x a bare interpreter).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

APP = "tickloop"

_XDG = {
    "config": ("XDG_CONFIG_HOME", ".config"),
    "data": ("XDG_DATA_HOME", ".local/share"),
    "state": ("XDG_STATE_HOME", ".local/state"),
}


def user_dir(kind: str) -> str:
    """The per-user ``"config"``, ``"data"`` or ``"state"`` folder of tickloop, as ``str``."""
    if not sys.platform.startswith("linux"):
        import platformdirs  # noqa: PLC0415  (only where the rules are not XDG's)

        return str(getattr(platformdirs, f"user_{kind}_path")(APP))
    variable, fallback = _XDG[kind]
    base = os.environ.get(variable, "").strip()
    if not os.path.isabs(base):  # the spec ignores relative paths
        base = os.path.join(os.path.expanduser("~"), fallback)
    return os.path.join(base, APP)


def _user_dir(kind: str) -> Path:
    from pathlib import Path  # noqa: PLC0415  (see the module's doc)

    return Path(user_dir(kind))


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/tickloop`` (``~/.config/tickloop``)."""
    return _user_dir("config")


def user_data_path() -> Path:
    """``$XDG_DATA_HOME/tickloop`` (``~/.local/share/tickloop``)."""
    return _user_dir("data")


def user_state_path() -> Path:
    """``$XDG_STATE_HOME/tickloop`` (``~/.local/state/tickloop``)."""
    return _user_dir("state")


def user_log_path() -> Path:
    """The state dir's ``log`` folder, where platformdirs puts logs on Linux too."""
    if not sys.platform.startswith("linux"):
        import platformdirs  # noqa: PLC0415

        return platformdirs.user_log_path(APP)
    return user_state_path() / "log"
