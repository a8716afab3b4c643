"""An experiment spec: TOML validated once into frozen records; the sessions it asks for, and shards.

::

    name = "tick-length"
    opening = ["Tidy the README, then wait for time steps."]   # the person's messages, in order
    policies = ["default", "brief"]      # ids from [tick] policies in the config, or inline below
    models = ["offline", "local"]        # endpoint names (tickloop models list)
    steps = 4                            # time steps per session, 1..256
    replicates = 3                       # sessions per cell (model x policy)
    delayMs = 0                          # 0..60000
    maxTokensPerSession = 20000          # 0: no budget (stop.token_budget)
    tools = []                           # optional harness toolsets, e.g. ["workspace"]

    [inlinePolicies]
    brief = "tick (answer in one sentence)"

A session's key (``model/policy/rNNN``) names its place in the grid; sessions are sharded by a hash
of the key, so ``--shard K/N`` for K = 1..N splits the grid into disjoint parts whose union is all.
"""

# No `from __future__ import annotations`: msgspec reads these annotations at decode time.

import hashlib
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec

from tickloop.errors import ConfigError, PolicyError
from tickloop.protocol.policy import PolicySet

#: Toolsets a session may enable (the harness's tool calling); the runner passes them to each session.
TOOLSETS: frozenset[str] = frozenset({"workspace"})
_ID = msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TEXT = msgspec.Meta(min_length=1, max_length=16_384)


class SpecFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """The TOML file as written (camelCase keys)."""

    name: Annotated[str, _ID]
    opening: Annotated[list[Annotated[str, _TEXT]], msgspec.Meta(min_length=1, max_length=32)]
    policies: Annotated[list[Annotated[str, _ID]], msgspec.Meta(min_length=1, max_length=64)]
    models: Annotated[list[Annotated[str, _ID]], msgspec.Meta(min_length=1, max_length=64)]
    steps: Annotated[int, msgspec.Meta(ge=1, le=256)]
    replicates: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 1
    delay_ms: Annotated[int, msgspec.Meta(ge=0, le=60_000)] = 0
    max_tokens_per_session: Annotated[int, msgspec.Meta(ge=0)] = 0
    tools: list[Annotated[str, _ID]] = msgspec.field(default_factory=list)
    inline_policies: dict[Annotated[str, _ID], Annotated[str, _TEXT]] = msgspec.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Cell:
    """One model x policy combination."""

    model: str
    policy: str

    @property
    def name(self) -> str:
        return f"{self.model}/{self.policy}"


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """One session of the grid: its cell and replicate."""

    cell: Cell
    replicate: int

    @property
    def key(self) -> str:
        """Stable and unique within the experiment: ``model/policy/r001``."""
        return f"{self.cell.name}/r{self.replicate:03d}"

    def session_id(self, experiment: str, attempt: int) -> str:
        """The harness session id of one attempt (a re-run of an abandoned session is a new one)."""
        base = f"{experiment}-{self.cell.model}-{self.cell.policy}-r{self.replicate:03d}"
        return base if attempt == 1 else f"{base}-a{attempt}"


@dataclass(frozen=True, slots=True)
class Spec:
    """A validated experiment: the file's values, the frozen policies and the file's sha256."""

    name: str
    opening: tuple[str, ...]
    policies: PolicySet
    policy_ids: tuple[str, ...]
    models: tuple[str, ...]
    steps: int
    replicates: int
    delay_ms: int
    max_tokens_per_session: int
    tools: tuple[str, ...]
    sha256: str  #: ``sha256:<hex>`` of the spec file's bytes
    source: bytes  #: the spec file's bytes, copied into the run directory

    def cells(self) -> list[Cell]:
        return [Cell(model, policy) for model in self.models for policy in self.policy_ids]

    def sessions(self) -> list[SessionPlan]:
        """Every session of the grid, in a stable order."""
        return list(self.iter_sessions())

    def iter_sessions(self) -> Iterator[SessionPlan]:
        """``sessions()`` one at a time: a runner never holds the whole grid."""
        for cell in self.cells():
            for r in range(1, self.replicates + 1):
                yield SessionPlan(cell, r)


@dataclass(frozen=True, slots=True)
class Shard:
    """``K/N``: this process runs the sessions whose key hashes to K - 1 modulo N."""

    index: int  #: 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        head, sep, tail = text.partition("/")
        if not sep or not head.isdigit() or not tail.isdigit():
            raise ConfigError(f"--shard {text!r}: expected K/N with whole numbers, e.g. 2/8")
        index, count = int(head), int(tail)
        if not 1 <= index <= count <= 10_000:
            raise ConfigError(f"--shard {text!r}: need 1 <= K <= N <= 10000")
        return cls(index, count)

    def owns(self, plan: SessionPlan) -> bool:
        digest = hashlib.sha256(plan.key.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1


ALL = Shard(1, 1)


def parse_spec(data: bytes, *, where: str, configured: dict[str, str] | None = None) -> Spec:
    """Validate spec bytes; ``configured`` are the ``[tick] policies`` of the config.

    Every error is a ``ConfigError`` that names ``where`` and the key."""
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    try:
        file = msgspec.convert(raw, SpecFile)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    for i, line in enumerate(file.opening):
        if line.lstrip().startswith("/"):
            raise ConfigError(f"{where}: opening[{i}] starts with '/': commands never reach the model")
    unknown_tools = sorted(set(file.tools) - TOOLSETS)
    if unknown_tools:
        known = ", ".join(sorted(TOOLSETS)) or "none in this build"
        raise ConfigError(f"{where}: tools: unknown toolset {unknown_tools[0]!r} (known: {known})")
    _unique(where, "policies", file.policies)
    _unique(where, "models", file.models)
    texts = {**(configured or {}), **file.inline_policies}
    try:
        policies = PolicySet(texts)
    except PolicyError as exc:
        raise ConfigError(f"{where}: inlinePolicies: {exc.message} [{exc.rule}]") from None
    for pid in file.policies:
        if pid not in policies:
            raise ConfigError(
                f"{where}: policies: unknown policy {pid!r} (known: {', '.join(sorted(policies))}; "
                "define it under [inlinePolicies] or [tick] policies)"
            )
    return Spec(
        name=file.name,
        opening=tuple(file.opening),
        policies=policies,
        policy_ids=tuple(file.policies),
        models=tuple(file.models),
        steps=file.steps,
        replicates=file.replicates,
        delay_ms=file.delay_ms,
        max_tokens_per_session=file.max_tokens_per_session,
        tools=tuple(file.tools),
        sha256="sha256:" + hashlib.sha256(data).hexdigest(),
        source=data,
    )


def load_spec(path: Path, *, configured: dict[str, str] | None = None) -> Spec:
    """Read and validate the spec file at ``path``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"experiment spec {path}: {exc.strerror or exc}") from None
    if len(data) > 1_048_576:
        raise ConfigError(f"experiment spec {path}: larger than 1 MiB")
    return parse_spec(data, where=f"experiment spec {path}", configured=configured)


def _unique(where: str, key: str, values: list[str]) -> None:
    seen = {v for v in values if values.count(v) > 1}
    if seen:
        raise ConfigError(f"{where}: {key}: listed twice: {', '.join(sorted(seen))}")
