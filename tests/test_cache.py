"""The cache directory is the user's alone, and an entry that does not verify is never used."""

import os
import pickle
import stat

import pytest

from rebalance_doctor.core import cache, regex_cache

SOURCES = [r"Preparing to rebalance group (?P<group>\S+) in state (?P<state>\w+)"]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_VARIABLE, str(directory))
    monkeypatch.setattr(cache, "_checked", {})
    monkeypatch.setattr(cache, "_keys", {})
    monkeypatch.setattr(cache, "notes", [])
    return directory


def test_the_directory_key_and_entries_are_private(fresh):
    regex_cache.compiled_regexes(SOURCES)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o700
    for entry in fresh.iterdir():
        assert stat.S_IMODE(os.stat(entry).st_mode) == 0o600, entry
    assert (fresh / cache.KEY_FILE).stat().st_size == 32


def test_an_entry_edited_by_hand_is_rebuilt_with_a_note(fresh):
    regex_cache.compiled_regexes(SOURCES)
    (entry,) = [p for p in fresh.iterdir() if p.name != cache.KEY_FILE]
    raw = bytearray(entry.read_bytes())
    raw[-20] ^= 1
    entry.write_bytes(bytes(raw))
    found = regex_cache.compiled_regexes(SOURCES)
    assert found[SOURCES[0]].pattern == SOURCES[0]
    assert any("did not verify" in note for note in cache.notes)
    assert cache.load(entry) is not None  # rewritten


def test_an_entry_sealed_with_another_key_is_not_used(fresh, monkeypatch):
    regex_cache.compiled_regexes(SOURCES)
    (fresh / cache.KEY_FILE).unlink()  # another user's (or machine's) key from now on
    monkeypatch.setattr(cache, "_keys", {})
    (entry,) = [p for p in fresh.iterdir() if p.name != cache.KEY_FILE]
    assert cache.load(entry) is None


def test_a_crafted_pickle_without_the_key_is_never_unpickled(fresh, monkeypatch):
    regex_cache.compiled_regexes(SOURCES)
    (entry,) = [p for p in fresh.iterdir() if p.name != cache.KEY_FILE]
    payload = pickle.dumps({SOURCES[0]: "anything"})
    entry.write_bytes(bytes(32) + payload)
    monkeypatch.setattr(regex_cache, "_PatternsOnly", None)  # unpickling at all would fail the test
    assert regex_cache._read(entry, SOURCES) is None


def test_a_directory_others_may_write_to_is_made_private_or_not_used(fresh):
    fresh.mkdir(mode=0o777)
    os.chmod(fresh, 0o777)
    regex_cache.compiled_regexes(SOURCES)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o700


def test_a_key_readable_by_others_disables_the_cache(fresh):
    fresh.mkdir(mode=0o700)
    (fresh / cache.KEY_FILE).write_bytes(os.urandom(32))
    os.chmod(fresh / cache.KEY_FILE, 0o644)
    regex_cache.compiled_regexes(SOURCES)
    assert [p.name for p in fresh.iterdir()] == [cache.KEY_FILE]
    assert any("not private" in note for note in cache.notes)


def test_a_parsed_data_file_edited_by_hand_in_the_cache_is_parsed_again(fresh, tmp_path):
    from rebalance_doctor.core.toml import load_toml

    pack = tmp_path / "pack.toml"
    pack.write_text('[patterns."a.b"]\nevent = "join.requested"\n', encoding="utf-8")
    assert load_toml(pack)["patterns"]["a.b"]["event"] == "join.requested"
    (entry,) = [p for p in fresh.iterdir() if p.name.startswith("toml-")]
    entry.write_bytes(entry.read_bytes().replace(b"join.requested", b"join.completed"))
    assert load_toml(pack)["patterns"]["a.b"]["event"] == "join.requested"
    assert any("did not verify" in note for note in cache.notes)
    assert load_toml(pack)["patterns"]["a.b"]["event"] == "join.requested"  # rewritten, sealed
