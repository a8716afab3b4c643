"""Observations: the canonical JSON contract, content hashes, taint, bounds, the public names."""

from __future__ import annotations

import hashlib
import json

import msgspec
import pytest

from tickloop.operator import sources
from tickloop.operator.sources import Observation, SourcesSettings, canonical_json, content_hash
from tickloop.operator.sources.observation import MAX_PAYLOAD_BYTES


def test_canonical_json_golden_vector() -> None:
    """Canonical JSON sorts keys, uses compact separators and raw UTF-8: the documented contract."""
    value = {"b": [1, "é"], "a": {"z": None, "y": True}}
    assert canonical_json(value) == '{"a":{"y":true,"z":null},"b":[1,"é"]}'.encode()


def test_content_hash_golden_vector() -> None:
    """The content hash is sha256 of the canonical JSON of source, kind and payload, tagged."""
    expected = hashlib.sha256(b'{"kind":"file.created","payload":{"path":"a"},"source":"files:/d"}')
    assert content_hash("files:/d", "file.created", {"path": "a"}) == "sha256:" + expected.hexdigest()
    obs = Observation("files:/d", "file.created", {"path": "a"})
    assert obs.content_hash == "sha256:" + expected.hexdigest()


def test_same_content_gives_the_same_hash_whatever_the_key_order() -> None:
    """Two observations with equal content deduplicate, even when built in a different order."""
    one = Observation("mail:maildir:x", "mail.new", {"subject": "hi", "from": "a@b"})
    two = Observation("mail:maildir:x", "mail.new", {"from": "a@b", "subject": "hi"})
    other = Observation("mail:maildir:y", "mail.new", {"from": "a@b", "subject": "hi"})
    assert one.content_hash == two.content_hash
    assert one.content_hash != other.content_hash


def test_outside_content_is_tainted_by_default_and_the_hash_ignores_taint() -> None:
    """Observations are tainted unless the caller says otherwise, and taint does not split dedup."""
    tainted = Observation("git:/r", "git.commit", {"hash": "1"})
    trusted = Observation("memory", "memory.note", {"hash": "1"}, tainted=False)
    assert tainted.tainted
    assert not trusted.tainted
    assert msgspec.structs.replace(tainted, tainted=False).content_hash == tainted.content_hash


def test_observations_are_frozen_and_serialise_to_a_plain_row() -> None:
    """An observation cannot be changed after the fact and round-trips through JSON."""
    obs = Observation("files:/d", "file.deleted", {"path": "x"})
    with pytest.raises(AttributeError, match="immutable"):
        obs.kind = "file.created"  # type: ignore[misc]
    row = json.loads(json.dumps(obs.to_dict()))
    assert row == {
        "source": "files:/d",
        "kind": "file.deleted",
        "tainted": True,
        "payload": {"path": "x"},
        "contentHash": obs.content_hash,
    }


def test_an_oversized_payload_is_a_programming_error() -> None:
    """Sources bound what they put in a payload; exceeding the bound fails loudly."""
    with pytest.raises(ValueError, match="bytes"):
        Observation("files:/d", "file.created", {"path": "x" * MAX_PAYLOAD_BYTES})


def test_public_names_are_exactly_all() -> None:
    """The package exports what ``__all__`` lists and nothing else that is public."""
    public = {name for name in vars(sources) if not name.startswith("_")}
    modules = {"calendar", "files", "git", "ids", "imap", "mail", "observation", "settings", "text"}
    assert set(sources.__all__) == public - modules - {"annotations"}


def test_settings_read_the_documented_toml_shape() -> None:
    """The sources table takes camelCase keys and rejects unknown ones."""
    toml = b"""
excerptChars = 1500
[[git]]
path = "~/code/app"
maxCommits = 20
[[files]]
path = "~/Inbox"
maxFiles = 500
[[calendars]]
location = "https://calendar.example.org/private/abc.ics"
upcomingHours = 24
timezone = "Europe/Berlin"
[[maildirs]]
path = "~/Maildir"
[[imap]]
host = "imap.example.org"
username = "me"
passwordEnv = "TICKLOOP_IMAP_PASSWORD"
security = "starttls"
"""
    settings = msgspec.toml.decode(toml, type=SourcesSettings)
    assert settings.git[0].max_commits == 20
    assert settings.calendars[0].timezone == "Europe/Berlin"
    assert settings.imap[0].security == "starttls"
    with pytest.raises(msgspec.ValidationError, match="password"):
        msgspec.toml.decode(
            b'[[imap]]\nhost="h"\nusername="u"\npasswordEnv="P"\npassword="x"\n', type=SourcesSettings
        )
