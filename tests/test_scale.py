"""Analysis linear in rebalances: no per-member scans (issue 34 item 6).

No timing: the long group of `benchmarks/long_group.py` (one dynamic member rejoining under a new member id at
every other rebalance) is classified with the members' id lists counting how often they are searched. A linear
analysis searches them a bounded number of times per member, not once per event per id. The same group grown to
100,000 rebalances is analysed by a subprocess under an address-space bound (slow: about a minute of CPU).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_doctor.classify import members as members_module
from rebalance_doctor.timeline.builder import build_timelines
from tests.helpers import events_of

REPO = Path(__file__).resolve().parent.parent


def _long_group():
    spec = importlib.util.spec_from_file_location("long_group", REPO / "benchmarks" / "long_group.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _CountingList(list):
    searches = 0

    def __contains__(self, item):
        _CountingList.searches += len(self)     # what a scan costs: one comparison per element
        return list.__contains__(self, item)


def test_member_ids_are_indexed_not_scanned(tmp_path, monkeypatch):
    _long_group().write(400, tmp_path)
    events, _ = events_of(tmp_path)
    (timeline,) = build_timelines(events)
    assert len(timeline.rebalances) == 400
    monkeypatch.setattr(members_module.Member, "__init__", _with_counting_ids(members_module.Member.__init__))
    _CountingList.searches = 0
    found = members_module.collect(timeline)
    rejoining = max(found.by_identity.values(), key=lambda m: len(m.member_ids))
    assert len(rejoining.member_ids) == 200            # every id it held, in order, none twice
    assert len(set(rejoining.member_ids)) == 200
    # 400 rebalances, ~1,800 events: a scan per event would compare ~200,000 ids.
    assert _CountingList.searches < 2_000


def _with_counting_ids(init):
    def counting(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.member_ids = _CountingList(self.member_ids)
    return counting


# One group of 100,000 rebalances under this bound of address space: one run peaked at 1,153 MiB of resident
# memory on the tree that added the test (docs/performance.md, "Analysis at scale"); the bound leaves room for
# the interpreter's address space beyond what is resident, not for a return of the quadratic or of the
# per-rebalance scratch.
LIMIT_MIB = 2048
HANG_GUARD_S = 1800   # far above what it takes (about a minute of CPU); only a hang reaches it


@pytest.mark.slow
def test_a_100k_rebalance_group_is_analysed_under_a_memory_bound(tmp_path):
    """Issue 34's storm under a memory limit: analyze of one group of 100,000 rebalances completes under
    RLIMIT_AS (a bound, not a timing) and counts every rebalance, with the regex time budget in place (when it
    summed every record's wall time, two 60 MB files of well-formed records spent it on a loaded machine)."""
    logs = tmp_path / "long"
    _long_group().write(100_000, logs)
    report = tmp_path / "report.json"

    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT_MIB << 20, LIMIT_MIB << 20))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with open(report, "wb") as out:
        done = subprocess.run([sys.executable, "-m", "rebalance_doctor", "analyze", str(logs), "--format", "json", "-q",
                               "--fail-on", "never"], stdout=out, stderr=subprocess.PIPE, env=env,
                              preexec_fn=bounded, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    with open(report) as text:   # the group's summary is near the top; the rebalances follow (100 MB of them)
        head = "".join(itertools.islice(text, 200))
    assert re.search(r'"summary": \{\s*"window": \{[^}]*\},\s*"rebalances": 100000,', head), head[-3000:]
    with open(report, "rb") as data:    # the accounting closes the document: every event was read
        data.seek(max(0, report.stat().st_size - 20_000))
        assert b'"input_lost": false' in data.read()
