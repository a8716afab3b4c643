"""tickloop: bounded, auditable loops around language models."""

import os
import sys
import types

__version__ = "0.1.0"


def _import_msgspec_lean() -> None:
    """Import msgspec without typing_extensions, unless one of them is already loaded.

    msgspec imports typing_extensions only for ``get_type_hints``, ``Required`` and ``NotRequired``,
    and falls back to ``typing``'s own when it cannot: on Python 3.11+ they are the same for every
    type tickloop declares. typing_extensions pulls in ``inspect`` (and with it ``ast``, ``dis`` and
    ``tokenize``): about a sixth of a one-shot operator tick's CPU time. So while msgspec loads,
    ``import typing_extensions`` fails; afterwards the entry is removed, and anything that needs
    typing_extensions later (openai, psycopg) imports it as usual.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # None makes the import fail
    platform_shim = "uuid" not in sys.modules and "platform" not in sys.modules
    if platform_shim:
        sys.modules["platform"] = _Platform("platform")
    try:
        import msgspec  # noqa: F401, PLC0415
    finally:
        del sys.modules["typing_extensions"]
        if platform_shim:
            del sys.modules["platform"]


class _Platform(types.ModuleType):
    """What ``uuid`` (which msgspec imports) asks of ``platform`` at import: ``system()``, once.

    The real module compiles a dozen regexes at import, a tenth of a one-shot tick; anything that
    imports ``platform`` afterwards gets the real one.
    """

    @staticmethod
    def system() -> str:
        return os.uname().sysname


_import_msgspec_lean()
