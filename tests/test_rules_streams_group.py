"""Streams groups (KIP-1071) and share groups (KIP-932) on logs real brokers and clients wrote (fixtures/lab/):
a topology whose internal topics cannot be created is named with the broker's reason and the replication factor
to set, a healthy start (which goes through "internal topics are missing" once) is not, the broker's log alone
only notes it; a share consumer's crash loop is one restart loop, each cycle counted once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rebalance_doctor import api

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
MISSING = ["streams-group-missing-internal-topics@4.2.1", "streams-group-missing-internal-topics@4.4.0"]
HEALTHY = ["streams-group-healthy-rolling-restart@4.2.1", "streams-group-healthy-rolling-restart@4.4.0",
           "streams-group-healthy-scale-out@4.2.1", "streams-group-healthy-scale-out@4.4.0",
           "streams-group-healthy-static-restart@4.4.0"]


@pytest.mark.parametrize("incident", MISSING)
def test_a_topology_whose_internal_topics_cannot_be_created_is_named(incident):
    findings = api.analyze([str(LAB / incident)]).findings
    assert [f.rule for f in findings] == ["streams-topics-missing"]
    [finding] = findings
    assert finding.severity == "critical" and "order-counts-order-counts-changelog" in finding.summary
    assert "replication factor of 3 cannot be reached" in finding.cause
    figures = {f.name: f for f in finding.figures}
    assert figures["asked"].value == 3 and figures["advised.replication.factor"].value == 1
    assert figures["creation_failures"].value >= 1 and figures["not_ready"].value > figures["creation_failures"].value
    assert "replication.factor to at most 1" in finding.remediation


@pytest.mark.parametrize("incident", HEALTHY)
def test_a_healthy_start_through_missing_internal_topics_is_not_a_finding(incident):
    analysis = api.analyze([str(LAB / incident)])
    assert "streams-topics-missing" not in {f.rule for f in analysis.findings}
    assert "streams-topics-missing" not in {n.rule for n in analysis.notes}


def test_the_brokers_log_alone_does_not_say_why_so_it_is_a_note(tmp_path):
    shutil.copy(LAB / MISSING[1] / "kafka-1.log", tmp_path / "kafka-1.log")
    analysis = api.analyze([str(tmp_path)])
    assert "streams-topics-missing" not in {f.rule for f in analysis.findings}
    [note] = [n for n in analysis.notes if n.rule == "streams-topics-missing"]
    assert "not ready at the end of the logs" in note.text and "order-counts-order-counts-changelog" in note.text


@pytest.mark.parametrize("incident", ["share-crash-loop@4.2.1", "share-crash-loop@4.4.0"])
def test_a_share_consumers_crash_loop_is_one_restart_loop(incident):
    findings = api.analyze([str(LAB / incident)]).findings
    assert findings[0].rule == "membership-flapping" and findings[0].culprit.host == "app-2"
    assert "kip848-fencing" not in {f.rule for f in findings}, "each fencing is how the coordinator noticed a death"
    figures = {f.name: f.value for f in findings[0].figures}
    assert figures["departures.consumer-orders-1@app-2"] == 3      # killed three times: return and fencing are one cycle


def test_a_missing_source_topic_is_named_with_the_threads_that_gave_up():
    findings = api.analyze([str(LAB / "streams-group-missing-source-topic@4.4.0")]).findings
    assert [f.rule for f in findings] == ["streams-topics-missing"], "the members' fencings are part of this story"
    [finding] = findings
    assert "source topics are missing" in finding.title and "(order-events)" in finding.summary
    assert {f.name: f.value for f in finding.figures}["threads_gave_up"] == 2
    assert "kip848-fencing" in {x["rule"] for x in finding.caused["findings"]}
    assert finding.remediation.startswith("Create the source topic(s) order-events")


def test_an_application_shutdown_in_a_streams_group_takes_in_the_fencings_after_it():
    findings = api.analyze([str(LAB / "streams-group-application-shutdown@4.4.0")]).findings
    assert [f.rule for f in findings] == ["application-shutdown"]
    assert findings[0].culprit.host == "app-2"
    assert "kip848-fencing" in {x["rule"] for x in findings[0].caused["findings"]}


def test_a_thread_whose_handler_shut_its_client_down_died():
    """Kafka's default handler (SHUTDOWN_CLIENT, 4.0+) takes the whole instance down with the thread: thread-died,
    the exception and its frame named, the instance's members fenced afterwards folded in."""
    findings = api.analyze([str(LAB / "streams-group-thread-died@4.4.0")]).findings
    assert [f.rule for f in findings] == ["thread-died"]
    [finding] = findings
    assert finding.culprit.host == "app-2" and "SHUTDOWN_CLIENT" in finding.summary
    assert "LabStreams.obey" in finding.remediation
    assert "kip848-fencing" in {x["rule"] for x in finding.caused["findings"]}
