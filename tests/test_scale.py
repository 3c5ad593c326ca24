"""Analysis linear in rebalances: no per-member scans (issue 34 item 6).

No timing: the long group of `benchmarks/long_group.py` (one dynamic member rejoining under a new member id at
every other rebalance) is classified with the members' id lists counting how often they are searched. A linear
analysis searches them a bounded number of times per member, not once per event per id.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
