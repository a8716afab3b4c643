"""Every refusal of the /tick grammar, word for word: the person reads these lines in the chat.

A mutation run of ``protocol/command.py`` found the messages free to change (any text, even None,
passed the suite) and the leading-zero rule of a count unpinned. Each row is one line a person may
type, the rule that refuses it, the token it names, and exactly what the chat says.
"""

from __future__ import annotations

import pytest

from tickloop.errors import TickCommandError
from tickloop.protocol.command import TickStart, parse_tick

KNOWN = ("default", "terse")
DIGITS = "in ASCII digits"
POLICY_ID = "an ASCII letter, then at most 63 ASCII letters, digits, '.', '_' or '-'"


def _parse(line: str) -> object:
    return parse_tick(line, default_count=3, default_policy="default", known_policies=KNOWN)


@pytest.mark.parametrize(
    ("line", "rule", "token", "message"),
    [
        ("/tock 3", "command.not_tick", "/tock 3", "not a /tick command: '/tock 3'"),
        ("", "command.not_tick", "", "not a /tick command: ''"),
        ("/tock " + "x" * 50, "command.not_tick", "/tock " + "x" * 34,  # the first 40 characters
         f"not a /tick command: '/tock {'x' * 34}'"),
        ("/tick x", "command.count_not_integer", "x",
         f"count 'x' is not an integer: write a whole number from 1 to 256 {DIGITS}"),
        ("/tick \uff13", "command.count_not_integer", "\uff13",  # a full-width 3: not an ASCII digit
         f"count '\uff13' is not an integer: write a whole number from 1 to 256 {DIGITS}"),
        ("/tick 0", "command.count_out_of_range", "0", "count '0' is out of range: it must be from 1 to 256"),
        ("/tick 257", "command.count_out_of_range", "257",
         "count '257' is out of range: it must be from 1 to 256"),
        ("/tick -1", "command.count_out_of_range", "-1",
         "count '-1' is out of range: it must be from 1 to 256"),
        ("/tick " + "9" * 30, "command.count_out_of_range", "9" * 30,
         f"count {'9' * 20!r} is out of range: it must be from 1 to 256"),
        ("/tick 2 3", "command.extra_argument", "3",
         "unexpected argument '3': /tick takes at most one count"),
        ("/tick status now", "command.extra_argument", "now",
         "'/tick status' takes no arguments; unexpected 'now'"),
        ("/tick --fast", "command.unknown_option", "--fast",
         "unknown option '--fast' (options: --policy ID, --resume)"),
        ("/tick -x", "command.unknown_option", "-x", "unknown option '-x' (options: --policy ID, --resume)"),
        ("/tick --resume --resume", "command.duplicate_option", "--resume", "option --resume given twice"),
        ("/tick --policy terse --policy=default", "command.duplicate_option", "--policy=default",
         "option --policy given twice"),
        ("/tick --resume=yes", "command.option_takes_no_value", "--resume=yes",
         "--resume takes no value: '--resume=yes'"),
        ("/tick --policy", "command.missing_value", "--policy", "--policy needs a policy id"),
        ("/tick --policy 9lives", "command.invalid_policy_id", "9lives",
         f"invalid policy id '9lives': {POLICY_ID}"),
        ("/tick --policy=", "command.invalid_policy_id", "", f"invalid policy id '': {POLICY_ID}"),
        ("/tick --policy wild", "command.unknown_policy", "wild",
         "unknown policy 'wild' (known: default, terse); see /tick policies"),
    ],
)  # fmt: skip
def test_each_refusal_names_its_rule_and_token_and_says_exactly_this(
    line: str, rule: str, token: str, message: str
) -> None:
    with pytest.raises(TickCommandError) as refused:
        _parse(line)
    assert (refused.value.rule, refused.value.token, str(refused.value)) == (rule, token, message)


@pytest.mark.parametrize(("line", "count"), [("/tick 007", 7), ("/tick 0256", 256), ("/tick 000001", 1)])
def test_leading_zeros_are_the_same_count(line: str, count: int) -> None:
    """A count is its value, however many zeros lead it: '/tick 0007' arms 7 steps, as '/tick 7' does."""
    assert _parse(line) == TickStart(count=count, policy_id="default")
