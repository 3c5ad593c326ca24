"""Parsed TOML is cached as JSON by content hash: same data, edits seen, bad caches ignored."""

import datetime

import pytest

from rebalance_doctor.core.cache import CACHE_VARIABLE
from rebalance_doctor.core.toml import DataFileError, load_toml


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(CACHE_VARIABLE, str(directory))
    return directory


def test_second_load_reads_the_cache_and_gives_the_same_data(tmp_path, cache):
    pack = tmp_path / "pack.toml"
    pack.write_text('version = "1.0.0"\n[[pattern]]\nid = "a.b"\nratio = 1.5\nn = 3\nflag = true\n')
    first = load_toml(pack)
    files = list(cache.iterdir())
    assert len(files) == 1 and files[0].suffix == ".json"
    assert load_toml(pack) == first == {"version": "1.0.0", "pattern": [{"id": "a.b", "ratio": 1.5, "n": 3, "flag": True}]}


def test_an_edited_file_is_parsed_again(tmp_path, cache):
    pack = tmp_path / "pack.toml"
    pack.write_text('version = "1.0.0"\n')
    assert load_toml(pack) == {"version": "1.0.0"}
    pack.write_text('version = "1.0.1"\n')
    assert load_toml(pack) == {"version": "1.0.1"}


def test_a_damaged_cache_file_is_ignored(tmp_path, cache):
    pack = tmp_path / "pack.toml"
    pack.write_text('x = 1\n')
    load_toml(pack)
    (entry,) = cache.iterdir()
    entry.write_text("{not json")
    assert load_toml(pack) == {"x": 1}


def test_dates_are_not_cached_but_still_read(tmp_path, cache):
    pack = tmp_path / "pack.toml"
    pack.write_text("when = 2024-05-01\n")
    assert load_toml(pack) == {"when": datetime.date(2024, 5, 1)}
    assert not cache.exists() or not any(cache.iterdir())


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    pack = tmp_path / "pack.toml"
    pack.write_text("x = 1\n")
    assert load_toml(pack) == {"x": 1}
    assert not (tmp_path / "xdg").exists()


def test_an_unwritable_cache_does_not_fail(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_VARIABLE, str(blocker / "cache"))  # under a file: cannot be created
    pack = tmp_path / "pack.toml"
    pack.write_text("x = 1\n")
    assert load_toml(pack) == {"x": 1}


def test_invalid_toml_is_reported_with_its_path(tmp_path, cache):
    pack = tmp_path / "broken.toml"
    pack.write_text("x = \n")
    with pytest.raises(DataFileError, match="broken.toml: invalid TOML"):
        load_toml(pack)
    pack.write_bytes(b"x = '\xff'\n")
    with pytest.raises(DataFileError, match="broken.toml: invalid TOML"):
        load_toml(pack)
