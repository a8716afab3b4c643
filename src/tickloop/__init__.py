"""tickloop: bounded, auditable loops around language models."""

import sys

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
    try:
        import msgspec  # noqa: F401, PLC0415
    finally:
        del sys.modules["typing_extensions"]


_import_msgspec_lean()
