"""The /tick grammar: what it accepts, what it refuses, and that it refuses with nothing but its error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.errors import TickCommandError
from tickloop.protocol.command import ControlOp, TickControl, TickStart, parse_tick

KNOWN = frozenset({"default", "reflective-en", "a.b_c-9"})


def parse(line: str) -> TickStart | TickControl:
    return parse_tick(line, default_count=6, default_policy="default", known_policies=KNOWN)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("/tick", TickStart(6, "default", resume=False)),
        ("/tick 12", TickStart(12, "default", resume=False)),
        ("/tick 1", TickStart(1, "default", resume=False)),
        ("/tick 256", TickStart(256, "default", resume=False)),
        ("/tick 007", TickStart(7, "default", resume=False)),
        ("/tick --policy reflective-en", TickStart(6, "reflective-en", resume=False)),
        ("/tick --policy=reflective-en 3", TickStart(3, "reflective-en", resume=False)),
        ("/tick --resume 2", TickStart(2, "default", resume=True)),
        ("/tick 2 --resume --policy a.b_c-9", TickStart(2, "a.b_c-9", resume=True)),
        ("  /tick   4\t--resume  ", TickStart(4, "default", resume=True)),
        ("/tick policies", TickControl(ControlOp.POLICIES)),
        ("/tick status", TickControl(ControlOp.STATUS)),
        ("/tick stop", TickControl(ControlOp.STOP)),
    ],
)
def test_accepted_lines_parse_to_the_command_they_spell(line: str, expected: object) -> None:
    """Every form the spec allows parses, with options in any order and `--policy=ID` too."""
    assert parse(line) == expected


@pytest.mark.parametrize(
    ("line", "rule", "token"),
    [
        ("/tick 0", "command.count_out_of_range", "0"),
        ("/tick -1", "command.count_out_of_range", "-1"),
        ("/tick 257", "command.count_out_of_range", "257"),
        ("/tick " + "1" + "0" * 30, "command.count_out_of_range", "1" + "0" * 30),
        ("/tick " + "9" * 5000, "command.count_out_of_range", "9" * 5000),
        ("/tick 1e3", "command.count_not_integer", "1e3"),
        ("/tick \uff13", "command.count_not_integer", "\uff13"),
        ("/tick 2.5", "command.count_not_integer", "2.5"),
        ("/tick +3", "command.count_not_integer", "+3"),
        ("/tick five", "command.count_not_integer", "five"),
        ("/tick 3 4", "command.extra_argument", "4"),
        ("/tick status now", "command.extra_argument", "now"),
        ("/tick stop 3", "command.extra_argument", "3"),
        ("/tick --forever", "command.unknown_option", "--forever"),
        ("/tick -p default", "command.unknown_option", "-p"),
        ("/tick --policy", "command.missing_value", "--policy"),
        ("/tick --policy default --policy default", "command.duplicate_option", "--policy"),
        ("/tick --policy=default --policy default", "command.duplicate_option", "--policy"),
        ("/tick --resume --resume", "command.duplicate_option", "--resume"),
        ("/tick --resume=yes", "command.option_takes_no_value", "--resume=yes"),
        ("/tick --policy nope", "command.unknown_policy", "nope"),
        ("/tick --policy 9lives", "command.invalid_policy_id", "9lives"),
        ("/tick --policy=../etc", "command.invalid_policy_id", "../etc"),
        ("/tick --policy " + "a" * 65, "command.invalid_policy_id", "a" * 65),
        ("/ticks 3", "command.not_tick", "/ticks 3"),
        ("tick", "command.not_tick", "tick"),
        ("", "command.not_tick", ""),
    ],
)
def test_refused_lines_name_the_token_and_the_rule(line: str, rule: str, token: str) -> None:
    """A refusal names the offending token and the rule it broke, so the person can fix the line."""
    with pytest.raises(TickCommandError) as caught:
        parse(line)
    assert caught.value.rule == rule
    assert caught.value.token == token
    shown = token[:20] if rule == "command.count_out_of_range" else token
    assert shown[:20] in caught.value.message or rule == "command.not_tick"


def test_default_policy_that_is_unknown_is_refused() -> None:
    """A default policy missing from the compiled set fails before a model-facing message exists."""
    with pytest.raises(TickCommandError) as caught:
        parse_tick("/tick", default_count=6, default_policy="gone", known_policies=KNOWN)
    assert caught.value.rule == "command.unknown_policy"


TOKENS = st.one_of(
    st.sampled_from(
        ["/tick", "--policy", "--resume", "--policy=", "status", "stop", "policies", "-1", "0", "256"]
    ),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.text(max_size=12),
    st.sampled_from(["default", "reflective-en", "\uff13", "1e3", "\x00", "=", "--", "-"]),
)


@settings(max_examples=10_000, deadline=None)
@given(st.one_of(st.text(), st.lists(TOKENS, max_size=6).map(" ".join)))
def test_any_string_parses_or_raises_only_the_grammar_error(line: str) -> None:
    """Parsing any string at all yields a command or a TickCommandError, never another exception."""
    try:
        result: TickStart | TickControl | str = parse(line)
    except TickCommandError as exc:
        result = exc.rule
    if isinstance(result, str):
        assert result.startswith("command.")
    elif isinstance(result, TickStart):
        assert 1 <= result.count <= 256
        assert result.policy_id in KNOWN


@settings(max_examples=2_000, deadline=None)
@given(st.integers(min_value=1, max_value=256), st.sampled_from(sorted(KNOWN)), st.booleans())
def test_every_valid_combination_round_trips_in_any_option_order(
    count: int, policy: str, resume: bool
) -> None:
    """Each count in range with each known policy, with or without --resume, parses in both orders."""
    opts = [f"--policy={policy}"] + (["--resume"] if resume else [])
    expected = TickStart(count, policy, resume=resume)
    assert parse(" ".join(["/tick", str(count), *opts])) == expected
    assert parse(" ".join(["/tick", *reversed(opts), str(count)])) == expected
