"""Figures in findings (rules/figures.py) against the truth's: no stated figure disagrees with what the source
produced, on the shipped incidents and on the recorded lab incidents whose truth carries figures."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from rebalance_doctor.core.toml import load_toml
from rebalance_doctor.judge import score
from rebalance_doctor.judge.truth import from_toml
from rebalance_doctor.rules import figures

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.parent for p in (REPO / "fixtures" / "incidents").glob("*/expected.toml"))
LAB = sorted(p.parent for p in (REPO / "fixtures" / "lab").glob("*/expected.toml")
             if "[[figure]]" in p.read_text(encoding="utf-8"))


def _scored(directory: Path) -> score.Scores:
    truth = from_toml(load_toml(directory / "expected.toml"))
    said = score.analyze_here(directory)
    assert said.error is None, said.error
    return score.score([score.Case(directory.name, truth.seed, truth, said, str(directory))])


@pytest.mark.parametrize("directory", SHIPPED + LAB, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_figure_disagrees_with_the_truth(directory):
    scores = _scored(directory)
    assert scores.wrong_figures == []


# a recorded incident whose expected finding is a known gap (tests/lab_known_gaps.toml) states no figure of it
GAPS = tomllib.loads((REPO / "tests" / "lab_known_gaps.toml").read_text(encoding="utf-8"))["gap"]


@pytest.mark.parametrize("directory", [d for d in SHIPPED + LAB if "[[figure]]" in
                                       (d / "expected.toml").read_text(encoding="utf-8") and d.name not in GAPS],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_removals_are_stated(directory):
    """The counts the issue found wrong (3 removals where the broker logged 2) are stated, and right."""
    scores = _scored(directory)
    rows = [s for s in scores.rules.values() if s.figures]
    assert rows and all(s.figures_right >= 1 for s in rows)


def test_advice_is_never_below_the_value_in_force_and_says_when_it_would_not_help():
    basis = figures.Figure("longest_silence_ms", 8000, figures.MS, "longest silence")
    in_force = figures.Figure("session.timeout.ms", 45000, figures.MS, "in force")
    advice = figures.raise_above("session.timeout.ms", basis, 1.5, in_force, "longest silence")
    assert advice.value is None and "would not help" in advice.note
    basis, in_force = basis.but(value=40000), in_force.but(value=45000)
    assert figures.raise_above("session.timeout.ms", basis, 1.0, in_force, "x").value is None
    basis, in_force = basis.but(value=44000), in_force.but(value=43500)
    advised = figures.raise_above("session.timeout.ms", basis, 1.0, in_force, "x")
    assert advised.value > in_force.value and advised.value >= basis.value and advised.formula


def test_a_figure_the_logs_do_not_give_says_so_instead_of_zero():
    unknown = figures.setting(None, "session.timeout.ms")
    assert unknown.value is None and unknown.text() == "not in the logs" and unknown.to_dict()["value"] is None


# Every finding of every rule on every shipped incident, before the causal chains fold symptoms into causes (a folded
# symptom's figures are its own, and must hold too): (incident directory, finding).
def _every_finding(directory: Path) -> list:
    from rebalance_doctor import api
    from rebalance_doctor.rules import engine
    from rebalance_doctor.rules.config import AnalysisConfig
    from rebalance_doctor.rules.finding import Finding

    analysis = api.analyze([str(directory)])
    config = AnalysisConfig()
    found = list(analysis.handle_findings)
    for group in analysis.groups:
        for module in engine.rules():
            found += [x for x in module.check(group.timeline, engine.thresholds(module.ID, config))
                      if isinstance(x, Finding)]
    return found


INCIDENTS = sorted(p for p in (REPO / "fixtures" / "incidents").iterdir() if (p / "expected.toml").exists())
_CACHE: dict = {}


def _findings(directory: Path) -> list:
    if directory not in _CACHE:
        _CACHE[directory] = _every_finding(directory)
    return _CACHE[directory]


def _line(directory: Path, ref: str) -> str | None:
    source, _, number = ref.rpartition(":")
    path = directory / source
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines[int(number) - 1] if 0 < int(number) <= len(lines) else None


@pytest.mark.parametrize("directory", INCIDENTS, ids=lambda p: p.name)
def test_every_warning_states_figures_whose_evidence_is_in_the_input(directory):
    """A warning or critical finding states its numbers as figures; a known figure is a threshold of the rule (its
    formula names it), or computed by a formula, or names the lines that give it, each a line of the input that holds
    the evidence's text."""
    for f in _findings(directory):
        if f.severity in ("warning", "critical"):
            assert f.figures, f"{f.rule}: '{f.title}' states no figure"
        for x in f.figures:
            if x.value is None:
                assert x.note, f"{f.rule}: {x.name} is unknown and does not say why"
                continue
            if x.name.startswith("threshold."):
                assert "threshold" in x.formula and not x.evidence, f"{f.rule}: {x.name}"
                continue
            # (a count of nothing names no line)
            assert x.evidence or x.formula or (x.unit == figures.COUNT and x.value == 0), \
                f"{f.rule}: {x.name}={x.value} names no line and no formula"
            for e in x.evidence:
                line = _line(directory, e.ref())
                assert line is not None, f"{f.rule}: {x.name}: {e.ref()} is not a line of the input"
                assert e.text[:60].strip() in line, f"{f.rule}: {x.name}: {e.ref()} does not hold {e.text[:60]!r}"


def test_a_count_is_as_many_lines_as_it_names():
    """A count's evidence is its occurrences: the value is how many lines (or rebalances) it names."""
    for directory in INCIDENTS:
        for f in _findings(directory):
            for x in f.figures:
                if x.unit == figures.COUNT and x.known and not x.formula and x.evidence:
                    assert len(x.evidence) == x.value, f"{directory.name} {f.rule}: {x.name}={x.value}"


def _figure(directory: str, rule: str, name: str):
    found = [x for f in _findings(REPO / "fixtures" / "incidents" / directory) if f.rule == rule
             for x in f.figures if x.name == name]
    assert found, f"{rule} states no {name} on {directory}"
    return found[0]


def _rebalances(directory: str, verdict: str | None = None) -> int:
    from rebalance_doctor import api

    analysis = api.analyze([str(REPO / "fixtures" / "incidents" / directory)])
    return sum(1 for g in analysis.groups for r in g.timeline.rebalances if verdict is None or r.verdict == verdict)


def test_storm_counts_the_rebalances_of_the_groups_table():
    # poll-timeout-storm: 10 "Preparing to rebalance" lines on broker-1, every one harmful (its expected.toml).
    storm = _figure("poll-timeout-storm", "rebalance-storm", "rebalances")
    assert storm.value == _rebalances("poll-timeout-storm", "harmful") == 10
    assert _figure("poll-timeout-storm", "rebalance-storm", "threshold.max_per_window").value == 6
    share = _figure("poll-timeout-storm", "rebalance-storm", "unstable_share")
    lost, window = (_figure("poll-timeout-storm", "rebalance-storm", n) for n in ("unstable_ms", "window_ms"))
    assert share.value == pytest.approx(lost.value / window.value)


def test_exact_figures_of_real_incidents():
    # mass-expiry: broker-2 removed 8 members of 3 groups at 09:01:37,010, three of them in orders-eu.
    assert _figure("mass-expiry", "mass-expiry", "removals").value == 8
    assert _figure("mass-expiry", "mass-expiry", "groups").value == 3
    assert _figure("mass-expiry", "mass-expiry", "burst").value == 0
    # the member of membership-flapping was killed and restarted 4 times (its truth; 8 rebalances: 4 removals on
    # session timeout, each followed by its return, the first of a process whose log is not here);
    assert _figure("membership-flapping", "membership-flapping", "departures.consumer-search-1@search-2").value == 4
    # thread-replacement-loop: 4 "Replacing thread" lines, 4 DEAD transitions, one rebalance each.
    for name in ("replacements", "deaths", "rebalances_caused"):
        assert _figure("thread-replacement-loop", "thread-replacement-loop", name).value == 4
    # sync-group-error-loop: generations 2 to 44 each failed to store the assignment (43 lines on kafka2).
    assert _figure("sync-group-error-loop", "sync-group-error-loop", "failures").value == 43
    # coordinator-moved-members-lost: the coordinator's Loaded member line states sessionTimeoutMs=30000, and the
    # removals came 30.0 s after the load.
    assert _figure("coordinator-moved-members-lost", "coordinator-churn", "session.timeout.ms").value == 30000
    assert _figure("coordinator-moved-members-lost", "coordinator-churn", "after_load_ms").value == 30000
    # streams-thread-died: one thread died with the NullPointerException of application.log:193.
    shown = _figure("streams-thread-died", "thread-died", "exceptions")
    assert shown.value == 1 and shown.evidence[0].ref() == "search-7d9f4/application.log:193"
    # application-shutdown: one request sent (line 105), heard by another thread (line 176).
    assert _figure("application-shutdown", "application-shutdown", "requests").value == 1
    assert _figure("application-shutdown", "application-shutdown", "heard").value == 1


def test_a_member_lost_once_is_not_flapping():
    """coordinator-moved-members-lost: each member was removed once (broker-2 at 09:01:20) and its own log noticed it
    later: one departure each, no flapping."""
    assert not [f for f in _findings(REPO / "fixtures" / "incidents" / "coordinator-moved-members-lost")
                if f.rule == "membership-flapping"]


def test_a_worker_back_within_the_delay_is_no_finding():
    """connect-worker-poll-timeout: connect-2 was removed at 10:05:42 and rejoined 26.9 s later, under a 60000 ms
    scheduled.rebalance.max.delay.ms: the delay had not expired."""
    assert not [f for f in _findings(REPO / "fixtures" / "incidents" / "connect-worker-poll-timeout")
                if f.rule == "connect-scheduled-delay"]


def test_every_unstored_assignment_is_a_failed_rebalance_with_one_reason():
    """sync-group-error-loop: kafka2 logged 45 "Preparing to rebalance" lines; generations 2-44 each failed to store
    the assignment (43 "Appending metadata message ... failed" lines), which the timeline marks as 43 failed
    rebalances under one reason, although the leader's assignment was received first; the 45th is cut off by the
    end of the logs."""
    analysis = _analysis("sync-group-error-loop")
    rebalances = analysis.groups[0].timeline.rebalances
    failed = [r for r in rebalances if r.outcome == "failed"]
    assert len(rebalances) == 45
    assert [r.generation for r in failed] == list(range(2, 45))
    assert {r.failure for r in failed} == {"SyncGroup failed: the coordinator could not store the assignment "
                                           "(UNKNOWN_SERVER_ERROR)"}
    loop = {x.name: x.value for f in _findings(REPO / "fixtures" / "incidents" / "sync-group-error-loop")
            if f.rule == "failed-rebalance-loop" for x in f.figures}
    assert loop["failed"] == 43 and loop["rebalances"] == 45


def _analysis(directory: str):
    from rebalance_doctor import api

    return api.analyze([str(REPO / "fixtures" / "incidents" / directory)])


def test_a_members_own_notice_of_its_removal_is_not_a_second_departure():
    """coordinator-moved-members-lost: broker-2 removed the three members at 09:01:20 (server.log:10-13); tracking-3
    and tracking-5 noticed later in their own logs ("session timed out without receiving a heartbeat response"):
    the classification has one departure per removal, which every rule reads."""
    from rebalance_doctor.classify import of

    timeline = _analysis("coordinator-moved-members-lost").groups[0].timeline
    changes = of(timeline).changes
    departures = [(d.who, d.event["source"]) for r in timeline.rebalances for d in changes[r.index].departures]
    assert sorted(departures) == [(f"consumer-ledger-1@tracking-{n}", "broker-2/server.log") for n in (3, 4, 5)]


def test_thread_deaths_without_a_died_line_are_the_loops_deaths():
    """thread-replacement-loop: with REPLACE_THREAD no line says a thread died (no streams.thread_died event); the
    client's "Replacing thread ..." record carries the NullPointerException and each thread's PENDING_SHUTDOWN ->
    DEAD transition (ledger-a.log:351, 498, 638, 776) is its death. The rule reads the classification's deaths."""
    directory = REPO / "fixtures" / "incidents" / "thread-replacement-loop"
    loop = next(f for f in _findings(directory) if f.rule == "thread-replacement-loop")
    deaths = next(x for x in loop.figures if x.name == "deaths")
    assert [e.ref() for e in deaths.evidence] == [f"ledger-a.log:{n}" for n in (351, 498, 638, 776)]
    assert "died with java.lang.NullPointerException" in loop.summary
    assert loop.evidence[0].ref() == "ledger-a.log:335"      # the record with the exception comes first


def test_a_workers_own_join_of_the_generation_that_ended_the_delay_is_its_return():
    """connect-worker-poll-timeout: connect-2 left on its poll timeout (10:05:41, connect-2/connect.log:52) and twice
    came back with its own join of the generation that ended the delay (generation 3, connect-2/connect.log:37;
    generation 5, connect-2/connect.log:68, after connect-1 logged it with delay 0): returns within
    scheduled.rebalance.max.delay.ms, as the classification records them."""
    from rebalance_doctor.classify import of

    delays = of(_analysis("connect-worker-poll-timeout").groups[0].timeline).connect.delays
    assert [(d.returned["source"], d.returned["line"]) for d in delays] == [("connect-2/connect.log", 37),
                                                                            ("connect-2/connect.log", 68)]
    assert all(d.came_back is None for d in delays)


def test_a_truth_figure_named_by_host_sums_the_members_on_that_host():
    """The lab knows it killed app-2 three times, not which client ids its restarts took."""
    said = {"departures.consumer-orders-1@app-2": 2, "departures.consumer-orders-2@app-2": 1,
            "departures.consumer-orders-1@app-1": 5, "departures.x@app-3": None}
    assert score._stated("departures.*@app-2", said) == 3
    assert score._stated("departures.*@app-3", said) is None
    assert score._stated("departures.consumer-orders-1@app-1", said) == 5


# The "computed once" contract, checked on the prose: every number a finding's summary states is one of the figures it
# exposes (its value, or the value as Figure.text renders it: 16.8s, 86%, 2.5 min). Not measures, and so not checked:
# identifiers (member, client and host names, a broker's node id, a Streams client's id as names() shortens it,
# releases, KIP numbers, times of day, file:line), a generation number (the coordinator's name for a generation),
# "and N more" (the elision of a list of names), a series ("3 -> 2 -> 3": one value per rebalance or per decision,
# which the rebalances table and the classification carry), and the text of an exception the finding shows (quoted
# from the log, as logged).
_NUMBER = re.compile(r"(?<![\w.\-#/:@+'])(-?\d{1,3}(?:,\d{3})+|-?\d+(?:\.\d+)?)(?:ms|s|min|h|%)?"
                     r"(?![\w\-/:@'+]|\.\d)")
_NOT_MEASURES = (re.compile(r"(?:[\w.,]+ -> )+[\w.,]+"),                        # a series
                 re.compile(r"\bgenerations?(?:\(s\))?(?: \d+(?:-\d+)?,?)+"),    # generation numbers (and ranges)
                 re.compile(r"\band \d+ more\b"),                                # names() eliding a list
                 re.compile(r"\bbroker \d+\b"),                                   # a broker's node id
                 re.compile(r"\b(?:Kafka|from|since|before|until) \d+\.\d+(?![\d.]|s\b| ?ms\b| ?min\b)"))  # a release


def _numbers(text: str, quoted: tuple = (), names: set = frozenset()) -> list[tuple[float, str]]:
    for part in quoted:
        text = text.replace(part, " ")
    for pattern in _NOT_MEASURES:
        text = pattern.sub(" ", text)
    return [(float(m.group(1).replace(",", "")), m.group(0)) for m in _NUMBER.finditer(text)
            if m.group(1) not in names]


def _exposed(finding) -> set[float]:
    out = set()
    for x in finding.figures:
        if x.known:
            out.add(round(float(x.value), 3))
            out |= {round(n, 3) for n, _ in _numbers(x.text())}
    return out


def _names(finding) -> set[str]:
    """The all-digit parts of the names the finding gives its culprits (a Streams client id's first UUID group is how
    names() shortens it: 'inventory-aggregator-95918694-6856-...' is '95918694')."""
    ids = list(finding.caused.get("culprits", [])) + list(finding.caused.get("members", []))
    if finding.culprit is not None:
        ids += [v for v in finding.culprit.to_dict().values() if isinstance(v, str)]
    return {part for i in ids for part in re.split(r"[-@#/_.]", i) if part.isdigit()}


# Kafka's own defaults and fixed values a fix names ("group.min.session.timeout.ms (default 6000)", "maxSurge 0",
# "offsets.topic.replication.factor=3"):
# constants of the advice, not measures of the incident
_CONSTANTS = re.compile(r"\b(?:default|maxSurge) \d+\b|\breplication\.factor=\d+")


def _unexposed(finding, field: str = "summary") -> list[str]:
    """The numbers `field` states that no figure of the finding carries. The remediation may also state a number of a
    figure's formula or note (an advice's headroom: '1.5 x the longest poll loop')."""
    exposed = _exposed(finding)
    quoted = tuple(q for x in finding.exceptions for q in (getattr(x, k, None) for k in ("exception", "root_cause",
                                                                                       "frame")) if q)
    text = getattr(finding, field) or ""
    if field == "remediation":
        exposed |= {round(n, 3) for x in finding.figures for t in (x.formula, x.note) for n, _ in _numbers(t)}
        text = _CONSTANTS.sub(" ", text)
    return [said for n, said in _numbers(text, quoted, _names(finding)) if round(n, 3) not in exposed]


@pytest.mark.parametrize("directory", INCIDENTS, ids=lambda p: p.name)
def test_every_number_in_a_summary_is_a_figure_the_finding_exposes(directory):
    """A figure is computed once (rules/figures.py) and the prose is written from it: a number in a finding's summary
    (or its title, cause or remediation) that no figure of it carries was computed beside the figures, and can
    disagree with them."""
    wrong = {f"{f.rule} {field}: '{f.title}'": _unexposed(f, field) for f in _findings(directory)
             for field in ("summary", "title", "cause", "remediation")}
    assert not {k: v for k, v in wrong.items() if v}


def test_a_summary_number_no_figure_carries_is_found():
    """The check itself: a count printed beside the figures, a setting stated in prose only, are found; identifiers,
    times of day, generations and series are not numbers it checks."""
    from rebalance_doctor.rules.finding import Finding

    removals = figures.Figure("removals", 2, figures.COUNT, "removals")
    silence = figures.Figure("longest_silence_ms", 16800, figures.MS, "longest silence")
    ok = Finding("heartbeat-expiration", "warning", "orders", "t",
                 "2 removal(s) on session timeout: consumer-orders-2@broker-1 at 10:05:42 (generation 41, 3 -> 2 -> 3,"
                 " Kafka 3.6.0, KIP-848); it sent no heartbeat for 16.8s.", None, None, figures=[removals, silence])
    assert _unexposed(ok) == []
    bad = Finding("heartbeat-expiration", "warning", "orders", "t",
                  "3 removal(s); session.timeout.ms=10000; a gap of 0.0s.", None, None, figures=[removals, silence])
    assert _unexposed(bad) == ["3", "10000", "0.0s"]


def test_every_unit_is_in_the_json_schema():
    import json

    schema = json.loads((REPO / "docs" / "schema" / "analyze.json").read_text(encoding="utf-8"))
    unit = schema["$defs"]["finding"]["properties"]["figures"]["items"]["properties"]["unit"]
    assert set(unit["enum"]) == set(figures.UNITS)


# Two simulated incidents of seed 7's table (python -m rebalance_doctor.judge.accuracy --per-scenario 20 --seed 7):
# a static member at 2.8 restarts slower than session.timeout.ms. Before 3.0 its close logs no "pro-actively
# leaving" at INFO (only "Revoke previously assigned partitions"), and an all-static 2.8 group gives no clock-skew
# anchor, so the coordinator's clock may be minutes off the member's (75 s in the first). Time away is measured
# on the member's own clock, from its last line (its close) to its new process: 15.7 s and 79.8 s, not 93.3 s
# and 88.6 s (its last heartbeat on the coordinator's clock to its start on its own).
# Rendered at 2.8.0 instead of the release the seed picks, the first seed's member logs with a zone (+01:00) and the
# coordinator without: its last heartbeat then falls after its new process's start. The third (seed 1779207851 at
# 2.8.0) has its member's clock 83 s behind the coordinator's: the heartbeat falls inside its gap and gave 32 s
# for 111 s down. With no anchor checking the two clocks the heartbeat counts for nothing.
@pytest.mark.parametrize("seed,kafka", [(961431866, None), (1988442391, None), (961431866, "2.8.0"),
                                        (1988442391, "2.8.0"), (1779207851, "2.8.0")])
def test_static_time_away_without_a_logged_close_is_measured_on_the_members_clock(seed, kafka):
    from rebalance_doctor.judge.accuracy import evaluate

    scores = evaluate([("static-member-timeout", seed)], kafka=kafka)
    row = scores.rules["static-member-timeout"]
    assert scores.wrong_figures == []
    assert row.figures_right == row.figures == 3       # removals, session.timeout.ms, time_away_ms: all stated
