"""The simulator beside real Kafka (judge/twins.py): every recorded incident with a twin is compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_doctor.judge import twins

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "lab"


def test_every_twin_pair_is_simulated_and_compared_role_by_role():
    recorded = [d for d in sorted(p.parent for p in CORPUS.glob("*/expected.toml"))
                if d.name.split("@")[0] in twins.catalog()["twin"]]
    if not recorded:
        pytest.skip("no recorded incident with a twin")
    directory = recorded[0]
    twin = twins.compare(directory, twins.catalog()["twin"][directory.name.split("@")[0]])
    real = twins.kinds_by_role(directory, twins.culprit_host(twins.from_toml(
        __import__("tomllib").loads((directory / "expected.toml").read_text()))))
    for role in twins.ROLES:
        common, lab_only, sim_only = twin.roles[role]
        assert sorted(common + lab_only) == sorted(real[role]), "every kind real Kafka wrote is accounted for"
        assert not set(common) & set(sim_only)
    assert twin.simulated_at <= "4.2.0"


def test_the_report_names_each_difference():
    twin = twins.Twin("x@4.4.0", "y", "4.2.0", {"coordinator": (["member.join"], ["member.expired"], ["member.leave"]),
                                               "culprit": ([], [], []), "members": (["join.start"], [], [])})
    text = twins.report([twin])
    assert "| x@4.4.0 | y (4.2.0) | 0.33 | - | 1.00 |" in text
    assert "- x@4.4.0 / y, coordinator: real member.expired; sim member.leave" in text
