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

A factorial spec crosses more factors than model x policy. Each of these may list levels, and the
grid is the product of every factor's levels::

    tools = ["none", "workspace"]        # levels: "none", a toolset, or a name from [toolsets]
    temperature = [0.0, 0.7]             # or one number for every session; unset: the endpoint's
    [openings]                           # named variants of the opening, instead of `opening`
    terse = ["Wait for time steps."]
    chatty = ["Hello! Tidy the README.", "Then wait for time steps."]
    [toolsets]
    ws = ["workspace"]

A session's key (``model/policy/rNNN``) names its place in the grid; a factor with more than one
level adds its level to the key (``offline/default/terse/none/t0.7/r001``), so a spec that varies
only model x policy keeps the keys it always had. Sessions are sharded by a hash of the key, so
``--shard K/N`` for K = 1..N splits the grid into disjoint parts whose union is all.
"""

# No `from __future__ import annotations`: msgspec reads these annotations at decode time.

import hashlib
import itertools
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
_Opening = Annotated[list[Annotated[str, _TEXT]], msgspec.Meta(min_length=1, max_length=32)]
_Temperature = Annotated[float, msgspec.Meta(ge=0, le=2)]
#: the factors a table, a report (``--by``) and an Inspect log name, besides the cell
FACTORS: tuple[str, ...] = ("model", "policy", "opening", "tools", "temperature")
#: the opening's name when the spec gives one ``opening``; the tools level with no toolset
DEFAULT_OPENING, NO_TOOLS = "default", "none"


class SpecFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """The TOML file as written (camelCase keys)."""

    name: Annotated[str, _ID]
    opening: _Opening | None = None
    #: the lines' count is checked by ``_openings``, which can name the variant (msgspec says ``[...]``)
    openings: dict[Annotated[str, _ID], list[Annotated[str, _TEXT]]] = msgspec.field(default_factory=dict)
    policies: Annotated[list[Annotated[str, _ID]], msgspec.Meta(min_length=1, max_length=64)]
    models: Annotated[list[Annotated[str, _ID]], msgspec.Meta(min_length=1, max_length=64)]
    steps: Annotated[int, msgspec.Meta(ge=1, le=256)]
    replicates: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 1
    delay_ms: Annotated[int, msgspec.Meta(ge=0, le=60_000)] = 0
    max_tokens_per_session: Annotated[int, msgspec.Meta(ge=0)] = 0
    tools: list[Annotated[str, _ID]] = msgspec.field(default_factory=list)
    toolsets: dict[Annotated[str, _ID], list[Annotated[str, _ID]]] = msgspec.field(default_factory=dict)
    temperature: (
        _Temperature | Annotated[list[_Temperature], msgspec.Meta(min_length=1, max_length=16)] | None
    ) = None
    inline_policies: dict[Annotated[str, _ID], Annotated[str, _TEXT]] = msgspec.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Cell:
    """One combination of the factors' levels; ``varied`` are the levels of factors with more than
    one (they name the cell after its model and policy)."""

    model: str
    policy: str
    opening: str = DEFAULT_OPENING
    tools: str = NO_TOOLS
    temperature: float | None = None
    varied: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "/".join((self.model, self.policy, *self.varied))

    def factors(self) -> dict[str, str | float | None]:
        """Each factor's level: a column of every table."""
        return {"model": self.model, "policy": self.policy, "opening": self.opening,
                "tools": self.tools, "temperature": self.temperature}  # fmt: skip


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
        base = "-".join((experiment, self.cell.model, self.cell.policy, *self.cell.varied))
        base += f"-r{self.replicate:03d}"
        return base if attempt == 1 else f"{base}-a{attempt}"


@dataclass(frozen=True, slots=True)
class Spec:
    """A validated experiment: the file's values, the frozen policies and the file's sha256."""

    name: str
    openings: tuple[tuple[str, tuple[str, ...]], ...]  #: (name, the person's lines) of each variant
    policies: PolicySet
    policy_ids: tuple[str, ...]
    models: tuple[str, ...]
    steps: int
    replicates: int
    delay_ms: int
    max_tokens_per_session: int
    toolsets: tuple[tuple[str, tuple[str, ...]], ...]  #: (level, the toolsets it enables) of each level
    temperatures: tuple[float | None, ...]  #: None: the endpoint's own setting
    sha256: str  #: ``sha256:<hex>`` of the spec file's bytes
    source: bytes  #: the spec file's bytes, copied into the run directory

    def opening(self, name: str) -> tuple[str, ...]:
        return dict(self.openings)[name]

    def tools(self, level: str) -> tuple[str, ...]:
        return dict(self.toolsets)[level]

    @property
    def every_toolset(self) -> frozenset[str]:
        """The toolsets any session of the grid enables (what a preflight checks is configured)."""
        return frozenset(t for _, enabled in self.toolsets for t in enabled)

    def cells(self) -> list[Cell]:
        """The product of every factor's levels, model first (the order of a model x policy spec)."""
        openings = [name for name, _ in self.openings]
        tools = [name for name, _ in self.toolsets]
        grid = itertools.product(self.models, self.policy_ids, openings, tools, self.temperatures)
        return [
            Cell(m, p, o, t, temp, _varied((o, t, temp), (openings, tools, self.temperatures)))
            for m, p, o, t, temp in grid
        ]

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
    openings = _openings(where, file)
    toolsets = _toolsets(where, file)
    _unique(where, "policies", file.policies)
    _unique(where, "models", file.models)
    temperatures = _temperatures(file.temperature)
    _unique(where, "temperature", [temperature_level(t) for t in temperatures])
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
        openings=openings,
        policies=policies,
        policy_ids=tuple(file.policies),
        models=tuple(file.models),
        steps=file.steps,
        replicates=file.replicates,
        delay_ms=file.delay_ms,
        max_tokens_per_session=file.max_tokens_per_session,
        toolsets=toolsets,
        temperatures=temperatures,
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


def _openings(where: str, file: SpecFile) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``opening`` (one variant, named ``default``) or ``[openings]``: exactly one of them."""
    if (file.opening is None) == (not file.openings):
        raise ConfigError(f"{where}: give either opening (a list of lines) or [openings] (named variants)")
    variants = {DEFAULT_OPENING: file.opening} if file.opening is not None else file.openings
    for name, lines in variants.items():
        key = "opening" if file.opening is not None else f"openings.{name}"
        if not 1 <= len(lines) <= 32:
            raise ConfigError(f"{where}: {key}: expected 1 to 32 lines, got {len(lines)}")
        for i, line in enumerate(lines):
            if line.lstrip().startswith("/"):
                raise ConfigError(f"{where}: {key}[{i}] starts with '/': commands never reach the model")
    return tuple((name, tuple(lines)) for name, lines in variants.items())


def _toolsets(where: str, file: SpecFile) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The ``tools`` levels with the toolsets each enables: ``none``, a toolset, or a ``[toolsets]``
    name. No ``tools``: one level, ``none``."""
    for name, enabled in file.toolsets.items():
        if name == NO_TOOLS or name in TOOLSETS:
            raise ConfigError(f"{where}: toolsets.{name}: the name of a built-in level; choose another")
        _known_toolsets(where, f"toolsets.{name}", enabled)
    _unique(where, "tools", file.tools)
    named = {NO_TOOLS: [], **{t: [t] for t in TOOLSETS}, **file.toolsets}
    unknown = [level for level in file.tools if level not in named]
    if unknown:
        _known_toolsets(where, "tools", unknown)
    return tuple((level, tuple(named[level])) for level in (file.tools or [NO_TOOLS]))


def _known_toolsets(where: str, key: str, names: list[str]) -> None:
    unknown = sorted(set(names) - TOOLSETS)
    if unknown:
        known = ", ".join(sorted(TOOLSETS)) or "none in this build"
        raise ConfigError(
            f"{where}: {key}: unknown toolset {unknown[0]!r} (known: {known}); "
            f"a level may also be {NO_TOOLS} or a name from [toolsets]"
        )


def _temperatures(value: float | list[float] | None) -> tuple[float | None, ...]:
    if value is None:
        return (None,)
    return tuple(float(v) for v in value) if isinstance(value, list) else (float(value),)


def temperature_level(value: float | None) -> str:
    """``t0.7``: a temperature as a key part (``tdefault``: the endpoint's own)."""
    return "tdefault" if value is None else f"t{value:g}"


def _varied(
    levels: tuple[str, str, float | None], grid: tuple[list[str], list[str], tuple[float | None, ...]]
) -> tuple[str, ...]:
    """The levels that name a cell: of the factors (opening, tools, temperature) with more than one."""
    names = (levels[0], levels[1], temperature_level(levels[2]))
    return tuple(name for name, choices in zip(names, grid, strict=True) if len(choices) > 1)
