"""Issue 17's rules, one table: protocol-exact stories (tests/stories17.py), the chain heads an expert
names for them, the symptoms folded into a head, and the rules that must not head a chain, each case
with its reason."""

from __future__ import annotations

import pytest

from tests import stories17 as s

CASES = [
    # (id, reason, story, heads {rule: severity} (the first one listed is the answer; None: other rules' say),
    #  folded, not heads)
    ("coordinator-moved-members-lost",
     "every member removed exactly session.timeout.ms after broker 2 loaded the group: the members did not "
     "follow the coordinator; the processes did not stop",
     s.coordinator_moved_members_lost, {"coordinator-churn": "critical"}, [],
     ["heartbeat-expiration", "missed-rebalance"]),
    ("broker-only-expiry-after-load",
     "051's shape: two members removed at the same instant 30 s after the load, no generation in between",
     s.broker_only_expiry_after_load, {"coordinator-churn": "warning"}, [], ["heartbeat-expiration"]),
    ("expiry-long-after-a-load",
     "one member removed two minutes after a load while the others go on: its own session loss, the move "
     "(followed by every member) is only noted",
     s.expiry_long_after_a_load, {"heartbeat-expiration": "warning"}, [], ["coordinator-churn"]),
    ("coordinator-churn",
     "four moves in three minutes, the members following each time: a broker-side problem, warned about",
     lambda: s.coordinator_churn(4), {"coordinator-churn": "warning"}, [], ["heartbeat-expiration"]),
    ("one-move-followed",
     "one move that every member followed, nothing lost: the protocol working, a note in the report, no finding",
     lambda: s.coordinator_churn(1), {}, [], ["coordinator-churn"]),
    ("broker-restart-loop",
     "the coordinator's broker restarts twice: the group leaves it and comes back each time (four moves)",
     lambda: s.broker_restart_loop(2), {"coordinator-churn": "warning"}, [], ["healthy-operation"]),
    ("broker-restart-once",
     "one broker restart: the coordinator moves away and back and the members follow, no rebalance: healthy",
     lambda: s.broker_restart_loop(1), {"healthy-operation": "info"}, [], ["coordinator-churn"]),
    ("not-coordinator-loop",
     "a member told four times by the same broker that it is not the coordinator",
     lambda: s.not_coordinator_loop(4), {"coordinator-churn": "warning"}, [], []),
    ("not-coordinator-once",
     "one NOT_COORDINATOR answer and a rediscovery is the protocol working",
     lambda: s.not_coordinator_loop(1), {}, [], ["coordinator-churn"]),
    ("static-away-too-long",
     "a static member closes and comes back 25 s later with session.timeout.ms=10000: removed, then a new member; "
     "its removal names a member id its own log never states",
     lambda: s.static_member_away(25), {"static-member-timeout": "warning"}, [],
     ["heartbeat-expiration", "membership-flapping"]),
    ("static-back-in-time",
     "back after 4 s, within session.timeout.ms: the coordinator lets it in without a rebalance, healthy",
     lambda: s.static_member_away(4), {}, [], ["static-member-timeout", "heartbeat-expiration"]),
    ("static-alive-but-silent",
     "a static member whose own log goes on (no restart) lost its session while alive: heartbeat-expiration",
     lambda: s.static_member_away(25, alive=True), {"heartbeat-expiration": "warning"}, [], ["static-member-timeout"]),
    ("static-broker-only",
     "the coordinator removes a member it knows by its group instance id, and the same id joins again",
     s.static_member_away_broker_only, {"static-member-timeout": "warning"}, [], ["heartbeat-expiration"]),
    ("connect-read-nothing",
     "015's shape, repeated: a worker's config offset stays -1 after reading to the end against the leader's 12: it "
     "read nothing of the config topic and forces a rebalance after every assignment",
     lambda: s.connect_config_stuck(-1), {"connect-config-mismatch": "warning"}, [], []),
    ("connect-read-nothing-once",
     "a single forced rebalance at -1 is already the fault: after reading to the end the worker has nothing",
     lambda: s.connect_config_stuck(-1, times=1), {"connect-config-mismatch": "warning"}, [], []),
    ("connect-stuck-behind",
     "a worker that reads only up to 7 of 12, twice with the same offsets: reading to the end changes nothing",
     lambda: s.connect_config_stuck(7, times=3), {"connect-config-mismatch": "warning"}, [], []),
    ("connect-stuck-many-times",
     "twelve forced rebalances by one worker: critical",
     lambda: s.connect_config_stuck(-1, times=12), {"connect-config-mismatch": "critical"}, [], []),
    ("connect-catch-up",
     "a new worker behind the leader reads the config topic to the end and starts its tasks: normal life",
     s.connect_config_catch_up, {}, [], ["connect-config-mismatch"]),
    ("connect-read-past-once",
     "a connector created during a rebalance: the follower read past the assignment, forces one rebalance and "
     "starts at the next (the same two offsets never repeat)",
     s.connect_config_read_past_once, {}, [], ["connect-config-mismatch"]),
    ("connect-worker-lost",
     "a worker removed on session timeout never comes back: its task waits the whole scheduled delay (60 s) "
     "unassigned; the expiry is part of that story",
     lambda: s.connect_worker_leaves(None), {"connect-scheduled-delay": "warning"}, ["heartbeat-expiration"], []),
    ("connect-worker-bounce",
     "a worker stopped and back 20 s later, within scheduled.rebalance.max.delay.ms: the incremental cooperative "
     "protocol rode it out: a healthy restart, no note of connect-scheduled-delay's, its expiry is the bounce",
     lambda: s.connect_worker_leaves(20), {}, [], ["heartbeat-expiration", "connect-scheduled-delay"]),
    ("kip848-session-fenced",
     "KIP-848: the coordinator fences a member whose session expired and the member hears it is unknown: the "
     "broker's session, not the client's session.timeout.ms; heartbeat-expiration says nothing of its own",
     s.kip848_fenced, {"kip848-fencing": "warning"}, [], ["heartbeat-expiration"]),
    ("kip848-fenced-three-times",
     "fenced three times in the window: critical",
     lambda: s.kip848_fenced(times=3), {"kip848-fencing": "critical"}, [], ["heartbeat-expiration"]),
    ("kip848-rebalance-timeout",
     "fenced because it did not revoke within its rebalance timeout: max.poll.interval.ms is the remedy",
     lambda: s.kip848_fenced("rebalance"), {"kip848-fencing": "warning"}, [], []),
    ("kip848-leave",
     "a member leaving on purpose (epoch -1) is not fenced",
     lambda: s.kip848_fenced("leave"), None, [], ["kip848-fencing"]),
    ("sync-store-error-loop",
     "the coordinator cannot store the leader's assignment four generations in a row and rebalances into the same "
     "failure each time: the group never completes a generation",
     lambda: s.sync_store_errors(4), {"sync-group-error-loop": "warning"}, [], ["failed-rebalance-loop"]),
    ("sync-store-error-twice",
     "two failed writes are not yet a loop (min_repeats = 3 generations in a row)",
     lambda: s.sync_store_errors(2), None, [], ["sync-group-error-loop"]),
    ("sync-store-error-chronic",
     "the loop at generation 76030: it has been going on long before the window, said in the finding",
     lambda: s.sync_store_errors(3, gen=76030), {"sync-group-error-loop": "warning"}, [], []),
    ("thread-dies",
     "057's shape: a StreamThread fails with 'Failed to rebalance.', leaves and goes DEAD while its client stays "
     "RUNNING, and nothing replaces it: the application runs with a thread fewer",
     s.streams_thread_dies, {"thread-died": "warning"}, [], []),
    ("thread-replaced",
     "REPLACE_THREAD: 'Replacing thread' and a new StreamThread starts: not a thread lost for good",
     lambda: s.streams_thread_dies("replaced"), None, [], ["thread-died"]),
    ("thread-error-client-shut-down",
     "SHUTDOWN_CLIENT: the instance goes PENDING_ERROR then ERROR on purpose after the error: handled, not a thread "
     "left dead in a running instance",
     lambda: s.streams_thread_dies("shutdown-client"), {}, [], ["thread-died"]),
    ("instance-closed",
     "the instance is closed (client RUNNING -> PENDING_SHUTDOWN first): its threads reaching DEAD is a shutdown",
     lambda: s.streams_thread_dies("close"), {}, [], ["thread-died"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_issue_17_cases(case, tmp_path):
    name, reason, story, heads, folded, not_heads = case
    findings = story().analyze(tmp_path).findings
    got = {f.rule: f.severity for f in findings}
    order = [f.rule for f in findings]
    for rule, severity in (heads or {}).items():
        assert got.get(rule) == severity, f"{name} ({reason}): {rule} expected {severity}; heads {got}"
    if heads and any(severity != "info" for severity in heads.values()):
        assert order[0] == next(iter(heads)), f"{name} ({reason}): the answer is {next(iter(heads))}; heads {order}"
    inside = {x["rule"] for f in findings for x in f.caused.get("findings", [])}
    for rule in folded:
        assert rule in inside, f"{name} ({reason}): {rule} not folded; heads {order}, folded {inside}"
    for rule in not_heads:
        assert rule not in got, f"{name} ({reason}): {rule} must not head a chain; heads {order}"
    if heads == {}:
        assert all(f.severity == "info" for f in findings), f"{name} ({reason}): nothing warns; heads {got}"
    for f in findings:
        if f.rule in (heads or {}):
            assert f.evidence and f.summary and f.remediation and f.title, f"{name}: {f.rule} incomplete"


def test_coordinator_churn_names_the_load_and_the_timeout(tmp_path):
    head = s.coordinator_moved_members_lost().analyze(tmp_path).findings[0]
    assert head.culprit.host == "broker-2" and head.culprit.label == "broker-2"
    assert "exactly their session.timeout.ms (10000 ms)" in head.summary and "did not follow" in head.summary
    assert "Loading group metadata" in head.evidence[0].text
    assert set(head.caused["culprits"]) == {"consumer-payments-1", "consumer-payments-2", "consumer-payments-3"}


def test_coordinator_churn_names_the_broker_the_group_keeps_leaving(tmp_path):
    """A restarting broker is left at each of its restarts and comes back: it is the culprit, even when its
    clock puts its unload after the other broker's load."""
    head = s.broker_restart_loop(2).analyze(tmp_path).findings[0]
    assert head.rule == "coordinator-churn" and head.culprit.host == "broker-1"
    assert "moved 4 time(s)" in head.summary and "away from broker-1 and back" in head.cause


def test_the_classification_reads_where_the_coordinator_was(tmp_path):
    """classify/coordinator.py: loads and unloads (the 2.x load pattern reads both), the members' losses and
    discoveries, the node id -> broker id, and which expiries a load explains."""
    from rebalance_doctor.classify import of
    from rebalance_doctor.classify.coordinator import broker_of
    from rebalance_doctor.timeline.model import Culprit

    assert broker_of("broker-3:9092 (id: 2147483644 rack: null)") == "3"
    assert broker_of("broker-3:9092") == "broker-3:9092" and broker_of(None) is None
    assert Culprit(host="broker-2").label == "broker-2", "a culprit known only by its host is named by it"
    [group] = s.coordinator_moved_members_lost().analyze(tmp_path).groups
    reading = of(group.timeline).coordinator
    assert [e["host"] for e in reading.loads] == ["broker-2"] and [e["host"] for e in reading.unloads] == ["broker-1"]
    assert [m.broker for m in reading.moves] == ["2"]
    assert len(reading.expired_by_load) == 3
    assert {len(v) for v in reading.losses.values()} == {3}


def test_static_member_timeout_measures_the_time_away_and_names_the_member(tmp_path):
    analysis = s.static_member_away(25).analyze(tmp_path)
    [head] = analysis.findings
    assert head.culprit.host == "node3" and head.culprit.instance == "search-1"
    assert "closed at" in head.summary and "25.0s later, longer than session.timeout.ms=10000" in head.summary
    assert "Raise session.timeout.ms to 38000 ms (1.5 x the longest time away (25.0s)" in head.remediation
    [group] = analysis.groups
    assert [(r.operation, r.verdict) for r in group.timeline.rebalances] == [("session-timeout", "harmful")] * 2
    assert all(r.culprit.host == "node3" for r in group.timeline.rebalances)


def test_connect_config_mismatch_names_the_worker_and_the_offsets(tmp_path):
    [head] = [f for f in s.connect_config_stuck(-1).analyze(tmp_path).findings if f.rule == "connect-config-mismatch"]
    assert head.culprit.host == "worker-2" and head.culprit.client == "connect-2"
    assert "config state offset is -1 against the assignment's 12" in head.summary and "read nothing" in head.summary
    assert "never started its connectors and tasks" in head.summary
    assert "does not match group assignment" in head.evidence[1].text and "is behind" in head.evidence[0].text
    assert "config.storage.topic" in head.remediation and "single partition" in head.remediation


def test_readme_and_rules_list_name_every_rule():
    """README's rule list and `rules list` name every public rule id (a new rule reaches both)."""
    import re

    from helpers import run_cli
    from rebalance_doctor.rules.engine import RULE_IDS
    from tests.conftest import REPO

    readme = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", (REPO / "README.md").read_text(encoding="utf-8")))
    assert set(RULE_IDS) <= readme, f"README does not list {sorted(set(RULE_IDS) - readme)}"
    listed = run_cli("rules", "list")
    assert listed.returncode == 0, listed.stderr
    assert all(rule in listed.stdout for rule in RULE_IDS)


def test_connect_scheduled_delay_names_the_worker_the_delay_and_the_work(tmp_path):
    [head] = [f for f in s.connect_worker_leaves(None).analyze(tmp_path).findings if f.rule == "connect-scheduled-delay"]
    assert head.culprit.host == "worker-3" and head.culprit.client == "connect-3"
    assert "scheduled.rebalance.max.delay.ms=60000" in head.summary and "jdbc-sink-2" in head.summary
    assert "did not come back" in head.summary and "held unassigned for" in head.summary
    assert "has failed, removing it" in head.evidence[0].text and "with rebalance delay: 60000" in head.evidence[1].text
    assert "scheduled.rebalance.max.delay.ms" in head.remediation


def test_kip848_fencing_says_whose_timeout(tmp_path):
    [head] = [f for f in s.kip848_fenced().analyze(tmp_path).findings if f.rule == "kip848-fencing"]
    assert head.culprit.host == "track-2" and "session expired" in head.summary
    assert "group.consumer.session.timeout.ms" in head.remediation and "max.poll.interval.ms" not in head.remediation
    assert "fenced from the group because the member session expired" in head.evidence[0].text
    [head] = [f for f in s.kip848_fenced("rebalance").analyze(tmp_path / "r").findings if f.rule == "kip848-fencing"]
    assert "rebalance timeout" in head.summary and "max.poll.interval.ms" in head.remediation


def test_sync_group_error_loop_names_the_leader_and_the_record_size(tmp_path):
    [head] = [f for f in s.sync_store_errors(12).analyze(tmp_path).findings if f.rule == "sync-group-error-loop"]
    assert head.severity == "critical" and head.culprit.client == "consumer-orders-1"
    assert "could not store the assignment" in head.title and "generations 4-15" in head.summary
    assert "message.max.bytes" in head.remediation
    [head] = [f for f in s.sync_store_errors(3, gen=76030).analyze(tmp_path / "c").findings
              if f.rule == "sync-group-error-loop"]
    assert "generation number (76033)" in head.summary


@pytest.mark.parametrize("release", ["3.9.2", "4.2.1", "4.4.0"])
def test_a_store_failure_that_ends_the_applications_is_named(release):
    """Real Kafka (the lab): the coordinator cannot store the first assignment of three members (3 x 400 KB of
    subscription statistics), the Java consumer raises the SyncGroup error from poll() and the applications let it
    end their loops: one failure, every member leaves, the group is empty. One failure is no loop, yet nobody
    consumes: the finding says so, with the members that left."""
    from pathlib import Path

    import rebalance_doctor

    lab = Path(__file__).resolve().parents[1] / "fixtures" / "lab" / f"assignor-stats-too-large-exit@{release}"
    head = rebalance_doctor.analyze(str(lab)).findings[0]
    assert head.rule == "sync-group-error-loop" and head.severity == "critical"
    assert "every member left and the group is empty" in head.title
    figures = {f.name: f.value for f in head.figures}
    # 4.3.1's CoordinatorRuntime states the limit the record broke; 3.9.2 and 4.2.1 name the exception only
    assert figures == {"failures": 1, "left": 3, **({"max_batch_size": 1048588} if release == "4.4.0" else {})}
    because = {"3.9.2": "RecordTooLargeException",
               "4.2.1": "larger than the max message size the server will accept",
               "4.4.0": "larger than the maximum batch size of 1048588 bytes"}[release]
    assert "the coordinator logged why (kafka-1.log:" in head.summary and because in head.summary
    assert "message.max.bytes" in head.remediation


@pytest.mark.parametrize("release", ["3.9.2", "4.2.1", "4.4.0"])
def test_members_restarted_together_are_not_called_a_rolling_restart(release):
    """Real Kafka (the lab): healthy-two-groups-restart stops every consumer of two applications in the same second
    and starts them 5 s later; healthy-rolling-restart restarts three consumers 20 s apart. The healthy note said
    "rolling restart" for both: an operator reading it would look for a deploy that went one pod at a time."""
    from pathlib import Path

    import rebalance_doctor

    lab = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
    together = rebalance_doctor.analyze(str(lab / f"healthy-two-groups-restart@{release}")).findings
    notes = [f for f in together if f.rule == "healthy-operation"]
    assert len(notes) == 2 and all(" members together" in f.title and "rolling" not in f.title for f in notes)
    [rolling] = [f for f in rebalance_doctor.analyze(str(lab / f"healthy-rolling-restart@{release}")).findings
                 if f.rule == "healthy-operation"]
    assert "rolling restart of 3 members" in rolling.title
