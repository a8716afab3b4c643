"""The exception tree. Every error tickloop raises on purpose is a ``TickloopError``.

::

    TickloopError
     +-- ConfigError          settings, env vars, TOML files, plugin options
     +-- TickCommandError     a /tick line that the grammar refuses (carries ``rule`` and ``token``)
     +-- PolicyError          a policy id or text that cannot be compiled
     +-- TransitionError      an illegal state-machine transition
     +-- LedgerError          a ledger record or file that cannot be read or written
     +-- StoreError           the operator store: unreachable, malformed URL, bad migration
     |    +-- NotFoundError   a row that does not exist (in this profile)
     |    +-- ConflictError   a compare-and-set that lost, or a rule that forbids the change
     |    +-- StoreBusyError  the store did not answer in time (locked, or past a read's deadline)
     +-- ModelError           a model provider failed or answered something unusable
     +-- ValidationError      untrusted input (model output, mail, CLI text) failed validation
     +-- HandlerError         a side-effect handler refused its request; nothing was done
     |    +-- RecipientError  an email address that is not exactly one safe address
     |    +-- JailError       a workspace path or command that would leave the jail
     +-- DeliveryError        a send was attempted and failed; it may or may not have arrived
     +-- SourceError          an observation source (git, files, calendar, mail) could not be read

Each class's docstring is its default message, so ``raise ConfigError()`` still says something.
Messages say what was wrong, where, and what to do.
"""

from __future__ import annotations


class TickloopError(Exception):
    """tickloop failed."""

    def __init__(self, message: str | None = None) -> None:
        self.message = message or (type(self).__doc__ or "").strip().splitlines()[0]
        super().__init__(self.message)


class ConfigError(TickloopError):
    """The configuration is invalid."""


class TickCommandError(TickloopError):
    """The /tick command was refused."""

    def __init__(self, message: str | None = None, *, rule: str, token: str | None = None) -> None:
        self.rule = rule
        self.token = token
        super().__init__(message)


class PolicyError(TickloopError):
    """The policy is invalid."""

    def __init__(self, message: str | None = None, *, rule: str) -> None:
        self.rule = rule
        super().__init__(message)


class TransitionError(TickloopError):
    """That state transition is not allowed."""


class LedgerError(TickloopError):
    """The ledger could not be read or written."""


class StoreError(TickloopError):
    """The operator store failed."""


class NotFoundError(StoreError):
    """No such row in this profile."""


class ConflictError(StoreError):
    """The row changed underneath this operation, or a rule forbids the change."""


class StoreBusyError(StoreError):
    """The store did not answer in time: another process held it, or a read ran past its deadline."""


class ModelError(TickloopError):
    """The model provider failed."""


class ValidationError(TickloopError):
    """The input failed validation."""


class HandlerError(TickloopError):
    """The side-effect handler refused the request; nothing was done."""


class RecipientError(HandlerError):
    """The recipient is not exactly one safe email address."""


class JailError(HandlerError):
    """The path or command would leave the workspace jail."""


class DeliveryError(TickloopError):
    """The send was attempted and failed; whether it arrived is unknown."""


class SourceError(TickloopError):
    """An observation source could not be read."""


def extra_hint(extra: str) -> str:
    """How to add the optional extra ``extra``: tickloop is not on PyPI, so the checkout's own form."""
    return f".venv/bin/pip install -e '.[{extra}]' in the checkout (make demo and make test install it)"
