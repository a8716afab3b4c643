"""Where tickloop keeps its files unless told otherwise: the per-user config, data and state dirs.

On Linux these follow the XDG Base Directory specification directly: ``$XDG_CONFIG_HOME``,
``$XDG_DATA_HOME`` and ``$XDG_STATE_HOME`` when set to an absolute path, else ``~/.config``,
``~/.local/share`` and ``~/.local/state``; a relative path in one of them is ignored, as the
specification says. Elsewhere (macOS, Windows) platformdirs knows the platform's rules. The Linux
rule is a few lines here because platformdirs' Unix module imports tempfile, shutil and random, a
cost every one-shot operator tick would pay at start-up.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "tickloop"

_XDG = {
    "config": ("XDG_CONFIG_HOME", ".config"),
    "data": ("XDG_DATA_HOME", ".local/share"),
    "state": ("XDG_STATE_HOME", ".local/state"),
}


def _user_dir(kind: str) -> Path:
    if not sys.platform.startswith("linux"):
        import platformdirs  # noqa: PLC0415  (only where the rules are not XDG's)

        found: Path = getattr(platformdirs, f"user_{kind}_path")(APP)
        return found
    variable, fallback = _XDG[kind]
    base = os.environ.get(variable, "").strip()
    if not os.path.isabs(base):  # noqa: PTH117  (str in, str out; the spec ignores relative paths)
        base = os.path.join(os.path.expanduser("~"), fallback)  # noqa: PTH111, PTH118
    return Path(base) / APP


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
