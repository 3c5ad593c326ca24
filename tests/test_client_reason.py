"""KIP-800's client reason as a broker quotes it: what the simulator renders, and how a reason is read.

A client sends its JoinGroup/LeaveGroup reason from Kafka 3.2 on (JoinGroup v8, LeaveGroup v5). A 3.2+
broker quotes it as "client reason: X", or as "not provided" when the request carried none (an older
client; JoinGroupRequest.joinReason also for an empty one). Brokers older than 3.2 quote none at all.
"""

from __future__ import annotations

import re

import pytest

from rebalance_doctor.sim import catalog, scenarios
from rebalance_doctor.timeline.triggers import classify

_QUOTED = re.compile(r"client reason: (?P<reason>.*?)(?:\)\.?)?(?: \([\w.]+\))?$")
PLACEHOLDER = "not provided"
_BROKER = ("kafka.coordinator", "org.apache.kafka.coordinator")     # the group coordinators' loggers


def _broker_reasons(incident) -> list[str]:
    """Every client reason the brokers' lines quote."""
    out = []
    for log in incident.world.logs:
        for r in log.records:
            if r.logger.startswith(_BROKER) and "client reason: " in r.message:
                out.append(_QUOTED.search(r.message)["reason"])
    return out


def _broker_quotes(incident) -> int:
    return sum("client reason" in r.message for log in incident.world.logs for r in log.records
               if r.logger.startswith(_BROKER))


def test_the_threshold_and_placeholder_are_kafkas():
    assert not catalog.sends_reason("3.0.0") and not catalog.sends_reason("2.8.0")
    assert catalog.sends_reason("3.2.0") and catalog.sends_reason("3.3.1") and catalog.sends_reason("4.1.0")
    assert catalog.quoted_reason("consumer poll timeout has expired.", sent=False) == PLACEHOLDER
    assert catalog.quoted_reason("", sent=True) == PLACEHOLDER                  # JoinGroupRequest.joinReason
    assert catalog.quoted_reason("", sent=True, empty_is_none=False) == ""     # a LeaveGroup's empty reason
    assert catalog.quoted_reason("the consumer is being closed", sent=True) == "the consumer is being closed"


@pytest.mark.parametrize("client, broker", [("2.8.0", "3.6.0"), ("3.0.0", "4.0.0"), ("2.4.0", "3.3.1")])
def test_a_client_older_than_3_2_gets_the_placeholder(client, broker):
    for name in ("poll-timeout-storm", "healthy-rolling-restart"):
        reasons = _broker_reasons(scenarios.run(name, 3, client, {"broker_version": broker}))
        assert reasons, f"{name}: the {broker} broker quotes no client reason"
        assert set(reasons) == {PLACEHOLDER}, f"{name}: a {client} client sent {set(reasons) - {PLACEHOLDER}}"


@pytest.mark.parametrize("version", ["3.3.1", "3.9.0", "4.1.0"])
def test_a_3_2_client_is_quoted_in_its_own_words(version):
    reasons = _broker_reasons(scenarios.run("poll-timeout-storm", 3, version, {"broker_version": version}))
    assert "consumer poll timeout has expired." in reasons
    assert "" not in reasons        # an empty JoinGroup reason is printed as the placeholder, never blank
    closing = _broker_reasons(scenarios.run("healthy-rolling-restart", 3, version, {"broker_version": version}))
    assert "the consumer is being closed" in closing


@pytest.mark.parametrize("version", ["2.4.0", "2.8.0", "3.0.0"])
def test_no_broker_older_than_3_2_quotes_a_client_reason(version):
    for name in ("poll-timeout-storm", "healthy-rolling-restart", "healthy-static-restart",
                 "cooperative-assignor-never-converges", "connect-worker-lost", "healthy-streams-rolling-restart"):
        try:
            incident = scenarios.run(name, 5, version, {"broker_version": version})
        except scenarios.ScenarioError:
            continue            # the scenario needs a later release
        assert _broker_quotes(incident) == 0, name


def test_a_placeholder_client_reason_is_no_reason():
    broker = "Updating metadata for member consumer-1-ab during Stable"
    assert classify(f"{broker}; client reason: {PLACEHOLDER}") == classify(broker)
    left = "Removing member consumer-1-ab on LeaveGroup"
    assert classify(f"{left}; client reason: {PLACEHOLDER}") == classify(left)
    assert classify(PLACEHOLDER) is None        # a LeaveGroup line's captured reason: none at all
    # a client's own reason still decides first
    assert classify(f"{broker}; client reason: need to revoke partitions and re-join").kind == "cooperative-revocation"
