"""Real third-party excerpts written by non-Java clients (../shared/real-logs, read in place, never
copied): librdkafka and its bindings, kafka-python, aiokafka/faust, brod, ruby-kafka, kafka-go.
Every rebalance line is recognised, with group and generation where the line states them."""

from __future__ import annotations

import re

import pytest

from helpers import assert_stated_group_and_generation, events_of

CLIENTS = ("005", "007", "009", "017", "019", "021", "023", "025", "027", "037", "039", "047", "049", "055")
# What a rebalance line of these clients talks about.
REBALANCE = re.compile(r"(?i)group|generation|member|coordinator|rebalanc|heartbeat|assign|revok|join|sync|leav|"
                       r"poll interval|session|elected")
# Lines in the excerpts that are not the client's: the application's own output and CLI runs
# (047 runs kafka-consumer-groups between the consumer's lines), payload prints, and 007's own
# rebalance listener ("BalanceListener - INFO - Revoked: ...").
FOREIGN = re.compile(r"kafka-consumer-groups --bootstrap-server|^Warning: Consumer group '|ConsumerRecord\(|"
                     r" - BalanceListener - ")
# 025 was copied from an 80-column terminal: the reader joins its wrapped lines again, and a
# record's event covers the physical lines its text was wrapped over.
WRAP_WIDTH = {"025": 80}
# 055's reporter masked its group as "CONSUMER_GROUP_ID", quotes included: the line states them.
GROUP = [re.compile(p) for p in (r'(?:Group|for group) "([^"]+)"', r"for group (\"?[\w.-]+\"?)", r"(?:joined|synced) group (\"?[\w.-]+\"?) ",
                                 r"Joined group '([^']+)'", r"Group member \(([^,]+),", r"group \(([^)]+)\)",
                                 r"group `([^`]+)`", r"group ([\w.-]+) with generation")]
GENERATION = [re.compile(p) for p in (r"generation id (\d+)", r"generation[= ](\d+)", r"GenerationId (-?\d+)",
                                      r"\(generation (\d+)\)", r"generationID=(\d+)")]


def _excerpt(root, number):
    return next(root.glob(f"{number}-*.log"))


@pytest.mark.parametrize("number", CLIENTS)
def test_every_client_rebalance_line_is_recognised(real_logs, number):
    path = _excerpt(real_logs, number)
    events, stats = events_of(path, base_date="2024-01-01")
    assert stats.files[0].near_misses == 0, [(m.line, m.text[:160]) for m in stats.files[0].near_miss_samples]
    covered = set()
    for event in events:
        covered.update(range(event["line"], event["line"] + event["message"].count("\n") + 1))
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    width = WRAP_WIDTH.get(number)
    for n, line in enumerate(lines, start=1):
        if width and n - 1 in covered and len(lines[n - 2]) == width:
            covered.add(n)
    missed = [(n, line[:200]) for n, line in enumerate(lines, start=1)
              if n not in covered and REBALANCE.search(line) and not FOREIGN.search(line)
              and "Broadcasting state change" not in line and not line.startswith((" ", "\t"))]
    assert not missed


@pytest.mark.parametrize("number", CLIENTS)
def test_client_group_and_generation_are_right_where_stated(real_logs, number):
    path = _excerpt(real_logs, number)
    events, _ = events_of(path, base_date="2024-01-01")
    assert_stated_group_and_generation(events, GROUP, GENERATION)


@pytest.mark.parametrize("number", ("009", "019", "021", "039", "049"))
def test_librdkafka_lines_name_their_library(real_logs, number):
    events, _ = events_of(_excerpt(real_logs, number), base_date="2024-01-01")
    assert events and {e["library"] for e in events} == {"librdkafka"}
    assert all(e["component"] == "consumer" for e in events)


def test_a_line_naming_only_its_handle_takes_the_handles_group(real_logs):
    # 019: "MAXPOLL ... leaving group" names the handle rdkafka#consumer-1 only; its HEARTBEAT
    # lines before it name the group.
    events, _ = events_of(_excerpt(real_logs, "019"), base_date="2024-01-01")
    maxpoll = next(e for e in events if e["event"] == "poll.timeout")
    assert maxpoll["client"] == "rdkafka#consumer-1" and maxpoll["group"] == "my_consumer_unique_id"
    assert maxpoll["attrs"]["group_from"] == "handle" and maxpoll["delay_ms"] == 6000
    assert maxpoll["ts"] is not None and maxpoll["level"] == "WARNING"


def test_session_timeouts_of_several_handles_stay_apart(real_logs):
    # 009: four handles of one process, each named by its client.id, none stating its group.
    events, _ = events_of(_excerpt(real_logs, "009"), base_date="2024-01-01")
    assert [e["event"] for e in events] == ["session.timeout"] * 4
    assert len({e["client"] for e in events}) == 4 and all(e["delay_ms"] >= 30000 for e in events)


def test_lines_without_a_time_keep_their_order(real_logs):
    # 055 (kafka-go) writes no timestamps: ts is null, the order is the file's.
    events, stats = events_of(_excerpt(real_logs, "055"), base_date="2024-01-01")
    assert events and all(e["ts"] is None for e in events)
    assert [e["line"] for e in events] == sorted(e["line"] for e in events)
    assert stats.files[0].untimed_events == len(events)
    assert {e["group"] for e in events if e["group"]} == {'"CONSUMER_GROUP_ID"'}


def test_client_lines_without_any_group_are_reported_not_nothing(real_logs):
    # 009: four handles' SESSTMOUT warnings and no line naming a group: the analysis keeps which
    # client saw what (for the report to say instead of "nothing found").
    from rebalance_doctor.diagnosis import analyze_events

    events, _ = events_of(_excerpt(real_logs, "009"), base_date="2024-01-01")
    analysis = analyze_events(events)
    assert not analysis.groups
    assert analysis.ungrouped_clients["librdkafka"]["events"] == {"session.timeout": 4}
    assert len(analysis.ungrouped_clients["librdkafka"]["handles"]) == 4


@pytest.mark.parametrize("number,rule", [("019", "poll-timeout"), ("037", "poll-timeout")])
def test_client_poll_timeouts_are_diagnosed_as_the_java_ones(real_logs, number, rule):
    from rebalance_doctor.diagnosis import analyze_events

    events, _ = events_of(_excerpt(real_logs, number), base_date="2024-01-01")
    assert rule in {f.rule for f in analyze_events(events).findings}


def test_a_client_whose_join_requests_time_out_is_told_so(real_logs):
    # 047: ruby-kafka's JoinGroup times out ("[join_group] Timed out while waiting for response") and
    # retries every ~3 s while the group rebalances (ruby-kafka#941: its request timeout was shorter than
    # the rebalance timeout). Each retry is a failed attempt of the member's own making, not an interruption.
    from rebalance_doctor.diagnosis import analyze_events

    events, _ = events_of(_excerpt(real_logs, "047"), base_date="2024-01-01")
    analysis = analyze_events(events)
    [group] = analysis.groups
    assert [r.outcome for r in group.timeline.rebalances] == ["failed"] * 4
    [finding] = [f for f in analysis.findings if f.rule == "failed-rebalance-loop"]
    assert "4 of them ended when the member's own JoinGroup request timed out" in finding.summary
    assert "timeout above the group's rebalance timeout" in finding.remediation
    assert any("Timed out while waiting for response" in e.text for e in finding.evidence)


def test_one_not_coordinator_join_is_a_failed_attempt_not_a_finding(real_logs):
    # 049: one JoinGroup answered NOT_COORDINATOR, then the member looks for the coordinator again: one
    # failed attempt on the timeline; one is no loop (the thread's "never recover" is not in the excerpt).
    from rebalance_doctor.diagnosis import analyze_events

    events, _ = events_of(_excerpt(real_logs, "049"), base_date="2024-01-01")
    analysis = analyze_events(events)
    [group] = analysis.groups
    [attempt] = group.timeline.rebalances
    assert attempt.outcome == "failed" and "NOT_COORDINATOR" in (attempt.failure or "")
    assert not [f for f in analysis.findings if f.severity in ("warning", "critical")]


def test_the_answer_says_what_groupless_client_lines_were(real_logs):
    # 023: librdkafka lines naming neither a group nor a handle, none a rule concludes on: the answer says what
    # they were, not just "nothing".
    from rebalance_doctor import api

    analysis = api.analyze([str(_excerpt(real_logs, "023"))], date="2024-01-01")
    headline = analysis.answer.headline
    assert headline.startswith("No rebalance-related lines with a group were found. librdkafka lines (naming no "
                               "handle) name no group:")
    assert "sync.failed x2" in headline and not analysis.findings


def test_several_handles_of_one_process_losing_their_sessions_are_diagnosed_at_the_process(real_logs):
    # 009 (confluent-kafka-go#654): four handles of one process (different groups, none named) log SESSTMOUT
    # "after 30000 ms without a successful response from the group coordinator" within 2 s, to brokers 1, 5, 4
    # and 4. INDEX.md: root cause unknown. What the lines show: sessions lost together by one process's consumers,
    # each to its own coordinator: the process or its network, not one consumer. No other cause is named.
    from rebalance_doctor import api

    analysis = api.analyze([str(_excerpt(real_logs, "009"))], date="2024-01-01")
    assert not analysis.groups
    [finding] = analysis.findings
    assert finding.rule == "heartbeat-expiration" and finding.group is None and finding.severity == "critical"
    assert finding.title == "4 consumer handles of one process lost their group sessions together"
    handles = ("EXCH_OMS_rslinmnmeftlotvpha_1#consumer-27", "AE_RES_rslinmnmeftlotvpha_1#consumer-13",
               "NSE_FOrslinmnmeftlotvpha_1#consumer-11", "NSE_FOrslinmnmeftlotvpha_2#consumer-2")
    assert all(h in finding.summary for h in handles) and finding.caused["members"] == list(handles)
    assert "30000-30002 ms" in finding.summary and "within 2.0s" in finding.summary
    assert "3 different brokers (1, 4, 5)" in finding.summary and "the process" in finding.summary
    assert finding.culprit.host == "009-librdkafka-go-sesstmout-many-consumers-ckgo654" and finding.culprit.client is None
    assert [e.line for e in finding.evidence] == [1, 2, 3, 4]
    assert "session.timeout.ms" in finding.remediation
    text = f"{finding.title} {finding.summary} {finding.cause}"
    assert not any(guess in text for guess in ("poll timeout", "max.poll", "the process died", "GC pause", "crash"))
    answer = analysis.answer
    assert answer.finding is finding and answer.culprit == finding.culprit.label
    assert answer.headline.endswith("(client handles whose lines name no group)")
    document = analysis.to_dict()
    assert document["answer"]["group"] is None and document["findings"][0]["group"] is None


def test_a_brod_member_fenced_every_cycle_is_a_rejoin_loop_without_an_invented_cause(real_logs):
    # 027 (brod#379): two nodes share one group and keep kicking each other out; this node's lines say, every
    # ~5 s, "re-joining group, reason:unknown_member_id", and its next generation is two above its last.
    # INDEX.md: unresolved (session timeout / v0 rebalance timeout suspected). What the lines show: the
    # member removed by the coordinator each cycle (UNKNOWN_MEMBER_ID), generations completing without it.
    from rebalance_doctor.diagnosis import analyze_events

    events, _ = events_of(_excerpt(real_logs, "027"), base_date="2024-01-01")
    analysis = analyze_events(events)
    [group] = analysis.groups
    assert [r.operation for r in group.timeline.rebalances] == ["fencing", "fencing"]
    head = group.findings[0]
    assert head.rule == "membership-flapping" and head.severity == "warning"
    assert head.culprit is not None and head.culprit.host.startswith("027-brod")
    assert "UNKNOWN_MEMBER_ID, 2 time(s)" in head.summary
    assert "jumped 40408 -> 40410, 40410 -> 40412" in head.summary
    assert [e.line for e in head.evidence] == [1, 3, 12, 14]
    assert "session.timeout.ms" in head.remediation and "JoinGroup v0" in head.remediation
    assert head.cause is None
    for f in analysis.findings:
        text = f"{f.title} {f.summary} {f.cause or ''}"
        assert not any(guess in text for guess in ("poll timeout", "the process died", "GC pause", "crash"))
        assert f.rule not in ("poll-timeout", "heartbeat-expiration", "failed-rebalance-loop")
