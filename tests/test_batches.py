"""Event batches: the rows of a unit and their column form give back the same events."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from rebalance_doctor.core.batches import EventBatch
from rebalance_doctor.core.writers import jsonable

from helpers import events_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture_events() -> list[dict]:
    events, _ = events_of(FIXTURES)
    assert any(e["attrs"] for e in events) and any(e["members"] for e in events if "members" in e)
    assert all(e["ts"] is None or e["ts"].utcoffset().total_seconds() == 0 for e in events)
    return events


@pytest.mark.slow
def test_rows_survive_the_trip_through_columns_and_pickle():
    events = _fixture_events()
    travelled = pickle.loads(pickle.dumps(EventBatch(rows=[dict(e) for e in events])))
    assert travelled._rows is None, "a batch crosses processes as columns"
    assert travelled.rows() == events
    assert [jsonable(e) for e in travelled.rows()] == [jsonable(e) for e in events]


@pytest.mark.slow
def test_line_shift_and_version_replacement_apply_to_either_form():
    events = _fixture_events()[:50]
    as_rows = EventBatch(rows=[dict(e) for e in events])
    as_columns = pickle.loads(pickle.dumps(EventBatch(rows=[dict(e) for e in events])))
    first_version = events[0]["kafka_version"]
    for batch in (as_rows, as_columns):
        batch.shift_lines(1000)
        batch.replace_versions((first_version,), "9.9.9")
    for batch in (as_rows, as_columns):
        rows = batch.rows()
        assert [r["line"] for r in rows] == [e["line"] + 1000 for e in events]
        assert [r["kafka_version"] for r in rows] == [
            "9.9.9" if e["kafka_version"] == first_version else e["kafka_version"] for e in events]
    assert as_rows.columns()["line"] == as_columns.columns()["line"]
