"""Issue 17's configuration and assignment rules, one table: protocol-exact stories (tests/stories_config.py),
the chain heads an expert names for them (the first listed is the answer), the symptoms folded into a
head, and the rules that must not head a chain; each case with its reason."""

from __future__ import annotations

import pytest

from tests import stories_config as s

CASES = [
    # (id, reason, story, heads {rule: severity} (None: other rules' say), folded, not heads)
    ("tight-heartbeat-expired-alive",
     "heartbeat.interval.ms=8000 of session.timeout.ms=10000 and the member removed while its process went on: "
     "a pause of 2 s was enough, the configuration is the cause and the expiry part of its chain",
     s.expired_while_alive, {"config-heartbeat-ratio": "warning"}, ["heartbeat-expiration"],
     ["heartbeat-expiration"]),
    ("tight-heartbeat-died",
     "the same setting, but the process died (its log ends): no ratio saves a dead process, the expiry is the "
     "answer and the ratio an advisory after it",
     s.expired_and_died, {"heartbeat-expiration": "warning", "config-heartbeat-ratio": "info"}, [], []),
    ("a-third-expired-alive",
     "heartbeat.interval.ms exactly a third of session.timeout.ms (Kafka's advice): the expiry is the member's own "
     "pause, nothing to say about the configuration",
     lambda: s.expired_while_alive(s.THIRD), {"heartbeat-expiration": "warning"}, [], ["config-heartbeat-ratio"]),
    ("tight-heartbeat-no-harm",
     "a tight ratio and a quiet group: an info advisory, never a warning",
     s.tight_no_harm, {"config-heartbeat-ratio": "info"}, [], []),
    ("kip848-ignores-client-timeouts",
     "group.protocol=consumer: the broker's group.consumer.* timeouts apply, the client's are not read",
     s.kip848_tight, {}, [], ["config-heartbeat-ratio"]),
    ("mixed-session-timeouts",
     "two members of one group with session.timeout.ms 30000 and 45000: a lint remark naming both",
     s.mixed_session_timeouts, {"config-heartbeat-ratio": "info"}, [], []),
    ("session-timeout-refused",
     "the broker refuses a member's session.timeout.ms (INVALID_SESSION_TIMEOUT): it can never join, a warning",
     s.session_refused, {"config-heartbeat-ratio": "warning"}, [], []),
    ("assignor-refused",
     "node3 lists only RangeAssignor in a group running CooperativeStickyAssignor: refused at every JoinGroup "
     "(INCONSISTENT_GROUP_PROTOCOL); the refused attempts are its chain, not a failed-rebalance loop",
     s.refused_member, {"assignor-mismatch": "warning"}, [], ["failed-rebalance-loop", "rebalance-storm"]),
    ("eager-newcomer",
     "the group ran cooperative-sticky until node3 joined with [RangeAssignor]: range is selected, the members "
     "configured for cooperative revoke everything at each rebalance (the Taboola story)",
     s.eager_newcomer, {"assignor-mismatch": "warning"}, [], ["healthy-operation"]),
    ("upgrade-first-bounce",
     "node1 restarted with [CooperativeStickyAssignor, RangeAssignor] after running [RangeAssignor], node2 not yet: "
     "the first bounce of the two-bounce upgrade, eager by design",
     s.upgrade_first_bounce, {}, [], ["assignor-mismatch"]),
    ("consistent-assignors",
     "every member and the newcomer list the same assignors",
     s.consistent_lists, {}, [], ["assignor-mismatch"]),
    ("eager-rebalancing-often",
     "a rolling restart of three members on range (six rebalances in four minutes): every rebalance made the "
     "members revoke everything; an info advisory after the healthy answer, never a warning",
     lambda: s.eager_restarts(3), {"healthy-operation": "info", "eager-assignor": "info"}, [], []),
    ("eager-rebalancing-rarely",
     "two restarts an hour apart on range: a group that rebalances rarely, nothing to say about its assignor",
     lambda: s.eager_restarts(2, gap_s=3600), {}, [], ["eager-assignor"]),
    ("cooperative-rebalancing-often",
     "the same rolling restart on cooperative-sticky: incremental revocations, not eager",
     lambda: s.eager_restarts(3, "cooperative-sticky"), {}, [], ["eager-assignor"]),
    ("eager-cost-of-a-cause",
     "node2's poll timeouts cause eight rebalances on range: the eager protocol's stop-the-world cost is part of "
     "the poll-timeout chain, not a chain of its own",
     s.eager_poll_timeouts, {"poll-timeout": "critical"}, ["eager-assignor"], ["eager-assignor"]),
    ("eager-because-of-one-member",
     "the group is eager only because node3 lacks cooperative-sticky: assignor-mismatch is the answer and the "
     "eager remark part of its chain",
     s.eager_newcomer, {"assignor-mismatch": "warning"}, [], ["eager-assignor"]),
    ("stall-late-member",
     "node3 joins; node1 rejoins within a second, node2 (in the middle of a batch) only 50 s later: the group waited "
     "for node2, the others having revoked everything (eager)",
     s.stalled_rebalance, {"rebalance-stall": "warning"}, [], ["healthy-operation"]),
    ("stall-member-removed",
     "node2 never rejoins: the coordinator removes it at the rebalance timeout (\"removed dynamic members who "
     "haven't joined\"), 60 s after the rebalance began",
     lambda: s.stalled_rebalance(removed=True), {"rebalance-stall": "warning"}, [], []),
    ("no-stall-for-a-dead-process",
     "node2's process is killed and a new one joins 8 s later: the coordinator removes the old member id at the "
     "rebalance timeout (30 s, below its 45 s session), but no poll loop could have rejoined it; the wait is the "
     "crash's cost, not a slow batch, so no stall and no 'poll sooner' advice",
     s.crashed_member_removed_at_rebalance_timeout, None, [], ["rebalance-stall"]),
    ("no-stall-for-a-restarted-process",
     "node2's process is killed, node3's join starts a rebalance and node2's new process joins 20 s into it: that "
     "join is a new member id's, not the dead one's rejoin (a 2.7 coordinator logs no removal at the timeout)",
     s.crashed_member_restarts_during_rebalance, None, [], ["rebalance-stall"]),
    ("no-stall-within-a-heartbeat",
     "node2 rejoins 7 s after node1 with heartbeat.interval.ms=10000: it rejoined when its heartbeat told it to",
     lambda: s.stalled_rebalance(late_s=10, heartbeat_ms="10000"), {}, [], ["rebalance-stall"]),
    ("idle-members",
     "four consumers for two partitions: two members hold nothing; a healthy deploy with an info advisory",
     lambda: s.assignment(4, 2), {"healthy-operation": "info", "assignment-skew": "info"}, [], []),
    ("even-assignment",
     "three consumers for six partitions: two each, nothing to say",
     lambda: s.assignment(3, 6), {}, [], ["assignment-skew"]),
    ("one-member-holds-almost-all",
     "node1 holds five of six partitions, node3 one and node2 none: far from even (an advisory)",
     lambda: s.assignment(3, 6, skewed=True), {"healthy-operation": "info", "assignment-skew": "info"}, [], []),
    ("mass-expiry",
     "one coordinator removes two members of agents-ofa and one of agents-two within 4 ms: what they share is the "
     "cause, the per-member expiry part of its chain",
     lambda: s.expiries({"agents-ofa": 2, "agents-two": 1}), {"mass-expiry": "warning"}, ["heartbeat-expiration"],
     ["heartbeat-expiration"]),
    ("expiries-apart",
     "the same removals 30 s apart: each member lost its own session",
     lambda: s.expiries({"agents-ofa": 2, "agents-two": 1}, apart_s=30), {"heartbeat-expiration": "warning"}, [],
     ["mass-expiry"]),
    ("one-group-same-second",
     "three members of ONE group removed in the same second: heartbeat-expiration says so, mass-expiry needs "
     "several groups",
     lambda: s.expiries({"agents-ofa": 3}), {"heartbeat-expiration": "critical"}, [], ["mass-expiry"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cases(case, tmp_path):
    name, reason, story, heads, folded, not_heads = case
    findings = story().analyze(tmp_path).findings
    got = {f.rule: f.severity for f in findings}
    order = [f.rule for f in findings]
    for rule, severity in (heads or {}).items():
        assert got.get(rule) == severity, f"{name} ({reason}): {rule} expected {severity}; heads {got}"
    if heads:
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


def test_config_heartbeat_ratio_names_the_member_its_values_and_the_dump(tmp_path):
    [head] = [f for f in s.expired_while_alive().analyze(tmp_path).findings if f.rule == "config-heartbeat-ratio"]
    assert head.culprit.host == "node2"
    assert "heartbeat.interval.ms=8000 is 80% of session.timeout.ms=10000" in head.summary
    assert "a pause of 2.0 s loses its session, and it did" in head.summary
    assert "at most 3333" in head.remediation
    assert any("ConsumerConfig values:" in e.text and e.source == "node2/app.log" for e in head.evidence)


def test_config_lint_says_which_member_has_which_value(tmp_path):
    [head] = s.mixed_session_timeouts().analyze(tmp_path).findings
    assert "members disagree on session.timeout.ms: 30000 (consumer-orders-1@node1); 45000 " \
           "(consumer-orders-1@node2)" in head.summary
    assert "same session.timeout.ms" in head.remediation


def test_a_refused_session_timeout_names_the_member_and_the_broker_settings(tmp_path):
    [head] = s.session_refused().analyze(tmp_path).findings
    assert head.culprit.host == "node3"
    assert "refused its session.timeout.ms=3000" in head.summary and "3 JoinGroup(s) failed" in head.summary
    assert "group.min.session.timeout.ms" in head.remediation


def test_assignor_mismatch_names_the_odd_member_and_the_lists(tmp_path):
    [head] = [f for f in s.eager_newcomer().analyze(tmp_path).findings if f.rule == "assignor-mismatch"]
    assert head.culprit.host == "node3"
    assert "lists only [range]" in head.summary and "the group runs range (eager)" in head.summary
    assert "revoke all their partitions" in head.summary
    assert "two-bounce upgrade" in head.remediation
    assert any("RangeAssignor]" in e.text or "ConsumerConfig values:" in e.text for e in head.evidence)


def test_a_refused_member_names_its_assignors_and_the_groups(tmp_path):
    [head] = s.refused_member().analyze(tmp_path).findings
    assert head.culprit.host == "node3"
    assert "lists [range]" in head.summary and "4 JoinGroup(s) refused" in head.summary
    assert "[cooperative-sticky]" in head.summary and "no assignor in common" in head.summary


def test_eager_assignor_counts_the_stops(tmp_path):
    [note] = [f for f in s.eager_restarts(3).analyze(tmp_path).findings if f.rule == "eager-assignor"]
    assert "eager range protocol" in note.summary and "rebalanced 6 times within 60 min" in note.summary
    assert "CooperativeStickyAssignor with the two-bounce upgrade" in note.remediation
    assert all("Revoke previously assigned partitions" in e.text for e in note.evidence)


def test_rebalance_stall_names_who_the_group_waited_for(tmp_path):
    [head] = s.stalled_rebalance().analyze(tmp_path).findings
    assert head.culprit.host == "node2"
    assert "waited for consumer-orders-1@node2 to rejoin, up to 50.0s" in head.summary
    assert "max.poll.interval.ms, the rebalance timeout, is 60000" in head.summary
    assert "max.poll.records" in head.remediation
    assert "Preparing to rebalance" in head.evidence[0].text


def test_assignment_skew_names_the_members_and_their_shares(tmp_path):
    [note] = [f for f in s.assignment(3, 6, skewed=True).analyze(tmp_path).findings if f.rule == "assignment-skew"]
    assert "1 member(s) hold nothing (consumer-orders-1@node2) while consumer-orders-1@node1 holds 5" in note.summary
    assert "6 partition(s) for 3 member(s)" in note.summary
    assert note.culprit.host == "node1" and "RoundRobinAssignor" in note.remediation


def test_mass_expiry_names_the_broker_and_every_group(tmp_path):
    analysis = s.expiries({"agents-ofa": 2, "agents-two": 1}).analyze(tmp_path)
    heads = {f.group: f for f in analysis.findings}
    assert set(heads) == {"agents-ofa", "agents-two"} and {f.rule for f in heads.values()} == {"mass-expiry"}
    ofa = heads["agents-ofa"]
    assert ofa.culprit.host == "broker-1" and ofa.culprit.label == "broker-1"
    assert "3 members of 2 groups (agents-ofa, agents-two)" in ofa.summary and "2 of them in agents-ofa" in ofa.summary
    assert "their poll loops are not involved" in ofa.summary


QUIET_ON_REAL = ("config-heartbeat-ratio", "assignor-mismatch", "eager-assignor", "rebalance-stall", "assignment-skew")


def test_real_excerpts_show_none_of_these_causes_but_003s_mass_expiry(real_logs):
    """INDEX.md names no heartbeat-ratio, assignor, eager-protocol, stall or skew cause in any excerpt: these
    rules stay quiet on all of them; mass-expiry speaks for 003 only (several groups, one second)."""
    from tests.test_real_diagnosis import diagnose

    for path in sorted(real_logs.glob("0*.log")):
        number = path.name[:3]
        fired = {f.rule for f in diagnose(real_logs, number).findings}
        assert not fired & set(QUIET_ON_REAL), f"{path.name}: {sorted(fired & set(QUIET_ON_REAL))}"
        assert ("mass-expiry" in fired) == (number == "003"), f"{path.name}: {sorted(fired)}"


def test_members_of_several_groups_losing_one_coordinator_at_once_name_the_broker(tmp_path):
    findings = s.coordinator_lost_together(["node1", "node2", "node3"]).analyze(tmp_path).findings
    heads = [f for f in findings if f.rule == "mass-expiry"]
    assert {f.group for f in heads} == {"orders", "payments"}
    assert all(f.culprit.host == "broker-1" for f in heads)
    assert "3 members of 2 groups" in heads[0].title and "the broker broker-1" in heads[0].summary


def test_the_same_losses_all_written_on_one_host_name_that_host(tmp_path):
    findings = s.coordinator_lost_together(["node1"]).analyze(tmp_path).findings
    heads = [f for f in findings if f.rule == "mass-expiry"]
    assert {f.group for f in heads} == {"orders", "payments"}
    assert all(f.culprit.host == "node1" for f in heads)
    assert "their host node1" in heads[0].summary and "Look at the host node1" in heads[0].remediation


def test_one_group_losing_its_coordinator_is_no_mass_expiry(tmp_path):
    story = s.coordinator_lost_together(["node1", "node2", "node3"])
    story.files = {path: [r for r in records if "payments" not in r[4]] for path, records in story.files.items()}
    assert not [f for f in story.analyze(tmp_path).findings if f.rule == "mass-expiry"]
