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
    assert twin.simulated_at == twins.simulated_release(twins.from_toml(
        __import__("tomllib").loads((directory / "expected.toml").read_text())).kafka)


def test_the_report_names_each_difference():
    twin = twins.Twin("x@4.4.0", "y", "4.2.0", {"coordinator": (["member.join"], ["member.expired"], ["member.leave"]),
                                               "culprit": ([], [], []), "members": (["join.start"], [], [])})
    text = twins.report([twin])
    assert "| x@4.4.0 | y (4.2.0) | 0.33 | - | 1.00 |" in text
    assert "- x@4.4.0 / y, coordinator: real member.expired; sim member.leave" in text


def _twin(name: str):
    directory = CORPUS / name
    if not (directory / "expected.toml").is_file():
        pytest.skip(f"{name} not recorded")
    return twins.compare(directory, twins.catalog()["twin"][name.split("@")[0]])


def test_the_twin_runs_what_the_lab_ran():
    """Hosts, timeouts, the assignor and Kafka's own layouts come from lab.toml: an eager lab group is
    compared with an eager simulated one (the Java consumer's default list starts with RangeAssignor)."""
    pins = twins.lab_pins(CORPUS / "healthy-rolling-restart@4.2.1")
    if not pins:
        pytest.skip("healthy-rolling-restart@4.2.1 not recorded")
    assert pins["hosts"] == ["app-1", "app-2", "app-3"] and pins["members"] == 3
    assert pins["assignors"] == "range"
    assert pins["session_timeout_ms"] == 10000 and pins["heartbeat_divisor"] == 3
    assert pins["client_layouts"] == "kafka" and pins["window"] == "full"


def test_a_rolling_restart_simulated_writes_what_real_kafka_writes():
    twin = _twin("healthy-rolling-restart@4.2.1")
    assert twin.roles["members"][1:] == ([], []), twin.roles["members"]
    assert twin.roles["coordinator"][1:] == ([], []), twin.roles["coordinator"]


def test_a_paused_member_reports_its_coordinator_twice_as_real_clients_do():
    """After a pause past the session timeout the heartbeat thread drops the coordinator and asks to
    disconnect; the poll thread then finds it in reconnect backoff ("coordinator unavailable")."""
    twin = _twin("session-timeout-pause@4.2.1")
    common, lab_only, sim_only = twin.roles["culprit"]
    assert "coordinator.lost" in common and not lab_only and not sim_only


def test_a_replaced_stream_thread_expires_from_4_2_instead_of_leaving():
    twin = _twin("streams-thread-replacement-loop@4.4.0")
    common, lab_only, sim_only = twin.roles["coordinator"]
    assert "member.expired" in common and "member.leave" not in sim_only
