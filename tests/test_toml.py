"""TOML data files: read with file-and-line errors; what a file parsed to is cached by its bytes' hash."""

import datetime

import pytest

from rebalance_doctor.core.cache import CACHE_VARIABLE
from rebalance_doctor.core.toml import DataFileError, load_toml


def test_a_file_is_read_as_it_is_now_not_as_it_was_cached(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    pack = tmp_path / "pack.toml"
    pack.write_text('version = "1.0.0"\n[[pattern]]\nid = "a.b"\nratio = 1.5\nn = 3\nflag = true\n')
    expected = {"version": "1.0.0", "pattern": [{"id": "a.b", "ratio": 1.5, "n": 3, "flag": True}]}
    assert load_toml(pack) == expected
    assert load_toml(pack) == expected  # from the cache
    assert len(list((tmp_path / "cache").glob("toml-*"))) == 1
    pack.write_text('version = "1.0.1"\n')
    assert load_toml(pack) == {"version": "1.0.1"}


def test_values_json_cannot_keep_are_parsed_every_time(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    pack = tmp_path / "pack.toml"
    pack.write_text("when = 2024-05-01\n")
    assert load_toml(pack) == {"when": datetime.date(2024, 5, 1)}
    assert load_toml(pack) == {"when": datetime.date(2024, 5, 1)}
    assert not list((tmp_path / "cache").glob("toml-*"))


def test_invalid_toml_is_reported_with_its_path(tmp_path):
    pack = tmp_path / "broken.toml"
    pack.write_text("x = \n")
    with pytest.raises(DataFileError, match="broken.toml: invalid TOML"):
        load_toml(pack)
    pack.write_bytes(b"x = '\xff'\n")
    with pytest.raises(DataFileError, match="broken.toml: invalid TOML"):
        load_toml(pack)
