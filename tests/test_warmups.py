"""Kafka Streams warmups (KIP-441): probing that never converges is a finding, probing that converges is healthy.

Inputs are simulator runs (the StreamsPartitionAssignor and HighAvailabilityTaskAssignor lines of a scale-out
with warmups, rendered for the run's Kafka release) and the shipped probing-rebalance-cadence fixture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_doctor.diagnosis import analyze_events
from rebalance_doctor.classify import of
from rebalance_doctor.sim import scenarios
from tests.helpers import events_of

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"


def _analysis(directory: Path):
    events, _stats = events_of(directory)
    return analyze_events(events)


def _simulated(tmp_path: Path, name: str, seed: int, kafka: str):
    incident = scenarios.run(name, seed, kafka)
    incident.write(tmp_path / name)
    return _analysis(tmp_path / name)


def test_the_assignors_decisions_belong_to_the_application_they_name():
    """'Decided on assignment' has no log prefix: its process ids name the group; each rebalance has its decision."""
    [group] = _analysis(INCIDENTS / "probing-rebalance-cadence").groups
    timeline = group.timeline
    decisions = of(timeline).warmups.decisions
    assert len(decisions) == len(timeline.of("streams.assignment.decided")) >= 4
    assert {d.rebalance for d in decisions} <= {r.index for r in timeline.rebalances}
    probing = [d for d in decisions if d.probing]
    assert len(probing) >= 3 and all(d.warmups(10_000) for d in probing), "every probe has warmups still lagging"


@pytest.mark.parametrize("kafka", ["2.8.0", "3.6.0", "4.2.0"])
def test_warmups_that_never_catch_up_are_the_answer(tmp_path, kafka):
    analysis = _simulated(tmp_path, "warmup-never-converges", 11, kafka)
    [group] = analysis.groups
    first = analysis.findings[0]
    assert (first.rule, first.severity) == ("probing-rebalance-cadence", "warning")
    assert "healthy-operation" not in {f.rule for f in analysis.findings}
    [stall] = of(group.timeline).warmups.stalls(10_000, 3)
    assert stall.lags and all(last >= first_lag for first_lag, last in stall.lags.values()), "no warmup got closer"
    assert not stall.converged_after
    assert first.culprit is not None and first.culprit.host, "the client restoring the warmups is named"
    assert {e.ref() for e in first.evidence} >= {f"{d.event['source']}:{d.event['line']}"
                                                 for d in (stall.decisions[0], stall.decisions[-1])}
    # The timeline agrees with the finding: the probes of the stall are harmful, not 'expected'.
    probes = [r for r in group.timeline.rebalances if r.operation == "probing-followup"]
    stalled = {d.rebalance for d in stall.decisions}
    assert probes and all(r.verdict == "harmful" for r in probes if r.index in stalled)
    assert sum(r.index in stalled for r in probes) >= 2


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_warmups_that_catch_up_are_healthy_however_many_probes(tmp_path, seed):
    """A scale-out whose warmups restore (some over several probing intervals): lags shrink, tasks move, the last
    decision needs no probe. One healthy note; every rebalance has its generation (a thread triggering the
    cooperative followup while the others still apply their assignment opens no phantom rebalance)."""
    analysis = _simulated(tmp_path, "healthy-streams-probing", seed, "3.9.0")
    [group] = analysis.groups
    decisions = of(group.timeline).warmups.decisions
    assert any(d.probing for d in decisions) and not decisions[-1].probing
    assert [f.rule for f in analysis.findings] == ["healthy-operation"]
    assert all(r.generation is not None for r in group.timeline.rebalances)
    assert all(r.verdict == "expected" for r in group.timeline.rebalances)


def test_version_probing_is_a_note_of_its_own_naming_the_releases(tmp_path):
    """A rolling upgrade from 3.0.0 with version probing: the version-probing note is a top-level info finding (never
    folded away) and names the releases that met, the old and the new."""
    analysis = _simulated(tmp_path, "healthy-streams-upgrade", 4, "3.0.0")
    [note] = [f for f in analysis.findings if f.rule == "version-probing"]
    assert note.severity == "info"
    target = (tmp_path / "healthy-streams-upgrade" / "expected.toml").read_text().split(" to ")[-1].split('"')[0]
    assert f"Kafka versions seen: 3.0.0, {target}" in note.summary


LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"


@pytest.mark.parametrize("release", ["3.9.2", "4.2.1", "4.4.0"])
def test_one_clients_stuck_warmups_are_a_stall_while_the_others_trade_tasks(release):
    """Real Kafka (the lab's streams-warmup-stalled): app-3 joins a Streams application on a slow disk; its warmups
    fall further behind at every probe, while app-1 and app-2 trade tasks between themselves (their warmups catch
    up at once). Progress is judged warmup by warmup: the stall runs from the first probe that gave app-3 a warmup
    to the last decision of the logs (judged for the whole group, every task the others traded cut it short: 3 of
    the 6 probes at 3.9.2, its span from 21:12:23 instead of 21:10:14)."""
    directory = LAB / f"streams-warmup-stalled@{release}"
    analysis = _analysis(directory)
    [group] = [g for g in analysis.groups if g.timeline.group == "order-counts"]
    first = analysis.findings[0]
    assert (first.rule, first.culprit.host) == ("probing-rebalance-cadence", "app-3")
    app3 = next(line.split("order-counts-", 1)[1][:36] for line in (directory / "app-3.log").read_text().splitlines()
                if "order-counts-" in line and "-StreamThread-" in line)
    warmups = of(group.timeline).warmups
    [stall] = warmups.stalls(10_000, 3)
    with_app3 = [d for d in warmups.decisions if d.probing and any(p == app3 for p, _t in d.warmups(10_000))]
    assert stall.decisions[0] is with_app3[0] and stall.decisions[-1] is warmups.decisions[-1]
    assert {p for p, _t in stall.lags} == {app3}
    assert all(last > first_lag for first_lag, last in stall.lags.values()), "app-3's warmups only fell behind"
    probes = next(f for f in first.figures if f.name == "probes")
    assert probes.value == len(stall.decisions) >= 5
