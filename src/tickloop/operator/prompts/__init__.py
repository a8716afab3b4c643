"""Versioned prompt files. A prompt is named ``<name>.v<N>.md``; its sha256 goes on every progress row."""

from __future__ import annotations

from pathlib import Path

import msgspec

from tickloop.errors import ConfigError
from tickloop.sha256 import sha256

#: The version of each prompt the operator uses now. Bump it with a new file; never edit a released one.
_HERE = Path(
    __file__
).parent  #: the prompt files ship beside this module (see store/_sql.py on why not importlib.resources)

CURRENT = {"fast": 3, "slow": 2, "consolidate": 1, "critique": 1}


class Prompt(msgspec.Struct, frozen=True):
    """A prompt's text, its file name and the sha256 of its bytes."""

    name: str
    text: str
    sha256: str


def load_prompt(name: str) -> Prompt:
    """The current version of prompt ``name``."""
    if name not in CURRENT:
        raise ConfigError(f"no prompt named {name!r}; known: {', '.join(sorted(CURRENT))}")
    file_name = f"{name}.v{CURRENT[name]}.md"
    data = (_HERE / file_name).read_bytes()
    return Prompt(name=file_name, text=data.decode("utf-8"), sha256="sha256:" + sha256(data).hexdigest())
