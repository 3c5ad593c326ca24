"""The recorded real-Kafka corpus (fixtures/lab/) as the gate of the diagnosis.

Every incident there was written by real brokers and clients while the lab drove a fault or an
operation at them (docs/lab.md), with its truth from what the lab did. The gate: the expected cause is
the group's first finding, it names the culprit host, no warning on a healthy incident, no finding the
truth does not allow. Where the diagnosis is not there yet, the incident is listed in
tests/lab_known_gaps.toml with what is wrong: a strict xfail, so that fixing it fails the gate until
the entry is removed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from rebalance_doctor.judge.recorded import incidents, run, score_recorded
from rebalance_doctor.judge.score import Case, analyze_here, score
from rebalance_doctor.judge.truth import from_toml

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
GAPS = tomllib.loads((Path(__file__).parent / "lab_known_gaps.toml").read_text(encoding="utf-8"))["gap"]


def _cases():
    for directory in incidents(CORPUS):
        gap = GAPS.get(directory.name)
        marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
        yield pytest.param(directory, marks=marks, id=directory.name)


@pytest.mark.parametrize("directory", list(_cases()))
def test_real_kafka_incident_is_diagnosed(directory):
    truth = from_toml(tomllib.loads((directory / "expected.toml").read_text(encoding="utf-8")))
    scores = score([Case(directory.name, 0, truth, analyze_here(directory), str(directory))])
    assert not scores.errors, scores.errors
    assert scores.failures == [], "\n".join(scores.failures)
    assert scores.answer_first == scores.answer_cases
    assert scores.culprit_first == scores.culprit_cases


def test_every_known_gap_names_a_recorded_incident():
    names = {d.name for d in incidents(CORPUS)}
    assert set(GAPS) <= names, sorted(set(GAPS) - names)


def test_the_corpus_covers_every_family_and_release_of_the_lab():
    from rebalance_doctor.lab import scenario as scenarios
    recorded = {d.name for d in incidents(CORPUS)}
    families = {scenarios.load(name.split("@")[0]).family for name in recorded}
    assert families >= {"classic", "kip848", "streams", "connect", "client"}
    releases = {name.split("@")[1] for name in recorded}
    assert "4.4.0" in releases and "3.9.2" in releases
