"""Handler settings. TOML (``[handlers]``)::

[handlers]
notesDir = "~/wiki/operator"        # note, wiki_write, research; empty: <user data dir>/notes
draftsDir = "~/wiki/drafts"         # draft_prep; empty: <user data dir>/drafts

[handlers.workspace]
jail = "~/operator-workspace"       # empty: workspace_task is refused
programs = ["make"]                 # bare names looked up on PATH, or absolute paths
timeoutS = 600
outputCapBytes = 65536
allowShell = false
envAllowlist = ["PATH", "LANG", "LC_ALL", "TZ"]
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import msgspec

from tickloop.errors import ConfigError

_STRUCT = {"frozen": True, "forbid_unknown_fields": True, "rename": "camel", "kw_only": True}
#: names that usually hold credentials; the workspace allowlist may never pass them to a build.
SECRET_LIKE = re.compile(r"KEY|TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)


class WorkspaceSettings(msgspec.Struct, **_STRUCT):
    """The jailed build of ``workspace_task``."""

    #: the jail directory; every path a build is given must resolve inside it
    jail: str = ""
    #: programs a build may start: bare names (found on the scrubbed PATH) or absolute paths
    programs: list[str] = msgspec.field(default_factory=lambda: ["make"])
    #: wall-clock limit in seconds; a build is waited for until it exits, and its whole process
    #: group killed when the limit passes (ending ``timed_out``)
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 600.0
    #: bytes of combined stdout/stderr kept; a build still writing past them is killed with its
    #: group (truncated, ending ``output_cap``)
    output_cap_bytes: Annotated[int, msgspec.Meta(ge=0, le=16 * 1024 * 1024)] = 64 * 1024
    #: allow ``payload.shell`` (a string run by /bin/sh): paths inside it cannot be checked
    allow_shell: bool = False
    #: parent environment variables passed through; HOME is always the jail
    env_allowlist: list[str] = msgspec.field(default_factory=lambda: ["PATH", "LANG", "LC_ALL", "TZ"])

    def __post_init__(self) -> None:
        for name in self.env_allowlist:
            if not name.isidentifier() or SECRET_LIKE.search(name):
                raise ConfigError(
                    f"handlers.workspace.envAllowlist: {name!r} looks like a secret or is not a variable "
                    "name; builds never see credentials"
                )
        for program in self.programs:
            if not program or ("/" in program and not program.startswith("/")):
                raise ConfigError(
                    f"handlers.workspace.programs: {program!r} must be a bare name or an absolute path"
                )


class HandlerSettings(msgspec.Struct, **_STRUCT):
    """Where tier-1 handlers write, and the workspace jail."""

    #: notes (note, wiki_write, research); empty: ``<user data dir>/notes``
    notes_dir: str = ""
    #: drafts (draft_prep); empty: ``<user data dir>/drafts``
    drafts_dir: str = ""
    workspace: WorkspaceSettings = msgspec.field(default_factory=WorkspaceSettings)

    def notes_path(self) -> Path:
        """The notes directory, ``~`` expanded."""
        return _dir(self.notes_dir, "notes")

    def drafts_path(self) -> Path:
        """The drafts directory, ``~`` expanded."""
        return _dir(self.drafts_dir, "drafts")


def _dir(configured: str, default: str) -> Path:
    if configured:
        return Path(configured).expanduser()
    from tickloop.dirs import user_data_path  # noqa: PLC0415  (only when the default is used)

    return user_data_path() / default


def parse_handler_settings(data: object) -> HandlerSettings:
    """Validate a ``[handlers]`` table; errors name the field (``$.workspace.timeoutS``)."""
    try:
        return msgspec.convert(data, HandlerSettings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid [handlers] settings: {exc}") from None
