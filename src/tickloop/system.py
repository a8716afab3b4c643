"""Small facts about this host, shared by the modules that need them."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True if a process with ``pid`` exists on this host (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    import ipaddress  # noqa: PLC0415  (only a host check pays for it; every store opens this module)

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
