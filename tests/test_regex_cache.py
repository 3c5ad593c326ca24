"""Compiled regexes are kept in the cache: loaded without compiling, damaged or foreign files refused."""

import os
import pickle

import pytest
import regex

from rebalance_doctor.core import regex_cache
from rebalance_doctor.core.cache import CACHE_VARIABLE
from rebalance_doctor.core.matcher import Matcher
from rebalance_doctor.core.packs import load_packs

SOURCES = [r"Preparing to rebalance group (?P<group>\S+) in state (?P<state>\w+)",
           r"(?P<member>[\w-]+) sent LeaveGroup request"]
LINE = "Preparing to rebalance group orders in state PreparingRebalance with old generation 4"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(CACHE_VARIABLE, str(directory))
    return directory


def _entries(directory):
    return [p for p in directory.iterdir() if p.name != "key"]


def _no_compiling(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled although the cache holds it")
    monkeypatch.setattr(regex_cache.regex, "compile", refuse)


def test_the_second_time_the_regexes_come_from_the_cache(cache, monkeypatch):
    first = regex_cache.compiled_regexes(SOURCES)
    (entry,) = _entries(cache)
    _no_compiling(monkeypatch)
    second = regex_cache.compiled_regexes(reversed(SOURCES))
    assert set(second) == set(SOURCES) and second is not first
    assert second[SOURCES[0]].search(LINE).groupdict() == {"group": "orders", "state": "PreparingRebalance"}
    assert _entries(cache) == [entry]


def test_other_sources_are_another_entry(cache):
    regex_cache.compiled_regexes(SOURCES[:1])
    regex_cache.compiled_regexes(SOURCES)
    assert len(_entries(cache)) == 2


def test_a_damaged_entry_is_compiled_again_and_replaced(cache, monkeypatch):
    regex_cache.compiled_regexes(SOURCES)
    (entry,) = _entries(cache)
    raw = bytearray(entry.read_bytes())
    at = raw.rindex(b"LeaveGroup")  # in the compiled code, after the source: only the digest can tell
    raw[at + 9:at + 10] = b"q"
    entry.write_bytes(bytes(raw))
    calls = []
    compile_ = regex.compile
    monkeypatch.setattr(regex_cache.regex, "compile", lambda s, flags=0: calls.append(s) or compile_(s, flags))
    again = regex_cache.compiled_regexes(SOURCES)
    assert sorted(calls) == sorted(SOURCES)
    assert again[SOURCES[1]].search("c-1 sent LeaveGroup request")["member"] == "c-1"
    _no_compiling(monkeypatch)
    assert set(regex_cache.compiled_regexes(SOURCES)) == set(SOURCES)  # the entry was rewritten


class _Planted:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


def test_a_pickle_that_names_anything_but_a_regex_is_not_run(cache, tmp_path):
    regex_cache.compiled_regexes(SOURCES)
    (entry,) = _entries(cache)
    marker = tmp_path / "planted"
    payload = pickle.dumps({SOURCES[0]: _Planted(marker)})
    entry.write_bytes(regex_cache.hashlib.sha256(payload).digest() + payload)  # a digest, not the seal
    found = regex_cache.compiled_regexes(SOURCES)
    assert not marker.exists()
    assert found[SOURCES[0]].search(LINE)["state"] == "PreparingRebalance"


def test_a_source_that_does_not_compile_is_left_out(cache):
    found = regex_cache.compiled_regexes([SOURCES[0], r"(?P<open"])
    assert set(found) == {SOURCES[0]}


def test_an_unwritable_cache_leaves_compiling_to_first_use(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_VARIABLE, str(blocker / "cache"))
    assert regex_cache.compiled_regexes(SOURCES) is None
    variants = load_packs().variants()
    assert variants[0].compiled.pattern == variants[0].regex_source


def test_shipped_packs_load_compiled_and_match_the_same(cache, monkeypatch):
    cold = load_packs()
    # Taken from the cache when the first regex is asked for (a run that reads nothing does not unpickle them)
    assert all(v._compiled is None for v in cold.variants())
    assert cold.variants()[3].compiled.pattern == cold.variants()[3].regex_source
    assert all(v._compiled is not None for v in cold.variants())
    _no_compiling(monkeypatch)
    warm = load_packs()
    line = ("Preparing to rebalance group orders in state PreparingRebalance with old generation 4 "
            "(__consumer_offsets-12) (reason: Adding new member c-1 with group instance id None)")
    got = [Matcher(packs).match(line, logger="kafka.coordinator.group.GroupCoordinator") for packs in (cold, warm)]
    assert got[0].groups == got[1].groups and got[0].groups["member"] == "c-1"


def test_without_a_cache_the_shipped_regexes_are_compiled_when_first_used(monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    variants = load_packs().variants()
    assert all(v._compiled is None for v in variants)
    assert variants[0].compiled.pattern == variants[0].regex_source


def test_layouts_come_compiled_from_the_cache_and_detect_the_same(cache, monkeypatch):
    from rebalance_doctor.core import layouts
    sample = [b"[2024-05-01 10:00:00,123] INFO [GroupCoordinator 1]: Preparing to rebalance group g1 "
              b"in state PreparingRebalance with old generation 3 (kafka.coordinator.group.GroupCoordinator)"] * 5
    monkeypatch.setattr(layouts, "_load_layouts_cached", layouts._load_layouts_cached.__wrapped__)
    cold = layouts.load_layouts()
    compiled: list = []
    compile_ = regex.compile
    monkeypatch.setattr(regex, "compile", lambda s, flags=0: compiled.append(s) or compile_(s, flags))
    warm = layouts.load_layouts()
    sources = {l.full_source for l in warm.layouts} | {l.start_regex().pattern for l in warm.layouts}
    assert not sources & set(compiled)
    assert all(l._full is not None for l in warm.layouts if not l.is_json)
    for found in (cold, warm):
        detection = layouts.detect(sample, found)
        assert detection.layout.name == "kafka" and detection.share == 1.0
