"""Advice follows the thresholds the rule detects with: a user's override (--config FILE) changes the advised value,
its formula and the remediation that renders it, on real incidents (the recorded lab's and the shipped ones)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rebalance_doctor import api

REPO = Path(__file__).resolve().parent.parent


def _finding(directory: str, rule: str, tmp_path: Path, overrides: str = ""):
    config = None
    if overrides:
        config = tmp_path / "override.toml"
        config.write_text(overrides, encoding="utf-8")
    analysis = api.analyze([str(REPO / "fixtures" / directory)], config=config)
    return next(f for f in analysis.findings if f.rule == rule)


def _figures(finding) -> dict:
    return {x.name: x for x in finding.figures}


@pytest.mark.parametrize("headroom", [1.5, 2.0, 3.0])
def test_poll_timeout_advice_follows_advice_headroom(tmp_path, headroom):
    """lab poll-timeout@4.4.0: the member's poll loop overran max.poll.interval.ms; the advised interval is
    advice_headroom x the longest loop, rounded up to a second, whatever the user set it to."""
    finding = _finding("lab/poll-timeout@4.4.0", "poll-timeout", tmp_path,
                       f"[poll-timeout]\nadvice_headroom = {headroom}\n" if headroom != 1.5 else "")
    f = _figures(finding)
    loop, advice = f["poll_loop_ms"], f["advised.max.poll.interval.ms"]
    assert loop.known and advice.value == math.ceil(loop.value * headroom / 1000) * 1000
    assert advice.formula.startswith(f"{headroom:g} x the longest poll loop")
    assert f"raise max.poll.interval.ms to {advice.value} ms ({advice.formula})" in finding.remediation


@pytest.mark.parametrize("per_session", [3, 4, 5])
def test_heartbeat_ratio_advice_follows_heartbeats_per_session(tmp_path, per_session):
    """config-heartbeat-ratio: heartbeat.interval.ms=25711 of session.timeout.ms=30000; the advised interval, the
    remediation and the prose state the ratio the rule detected with (heartbeats_per_session), not "a third"."""
    finding = _finding("incidents/config-heartbeat-ratio", "config-heartbeat-ratio", tmp_path,
                       f"[config-heartbeat-ratio]\nheartbeats_per_session = {per_session}\n" if per_session != 3 else "")
    f = _figures(finding)
    session, advice = f["session.timeout.ms"].value, f["advised.heartbeat.interval.ms"]
    assert advice.value == session // per_session
    assert advice.formula == f"session.timeout.ms / {per_session} (heartbeats_per_session), rounded down"
    assert f"at most 1/{per_session} of session.timeout.ms (at most {session // per_session} on" in finding.remediation
    assert f"(at most 1/{per_session})" in finding.summary


@pytest.mark.parametrize("per_session, words", [(3, None), (4, "a quarter"), (6, "1/6")])
def test_heartbeat_ratio_detects_and_titles_with_the_users_ratio(tmp_path, per_session, words):
    """Two members with heartbeat.interval.ms=10000 of session.timeout.ms=30000 and a quiet group: fine at Kafka's
    1/3, tight at a user's stricter ratio; the title then names that ratio, not "a third"."""
    from tests import stories_config as s

    story, group, a, b = s._group(s.THIRD)
    group.tick(60)
    a.processing()
    story.save(tmp_path / "logs")
    config = tmp_path / "override.toml"
    config.write_text(f"[config-heartbeat-ratio]\nheartbeats_per_session = {per_session}\n", encoding="utf-8")
    analysis = api.analyze([str(tmp_path / "logs")], config=config)
    found = [f for f in analysis.findings if f.rule == "config-heartbeat-ratio"]
    if words is None:
        assert not found
        return
    (finding,) = found
    assert finding.title.startswith(f"heartbeat.interval.ms above {words} of session.timeout.ms on 2 member(s)")
    assert f"at most {30000 // per_session} on" in finding.remediation


def test_connect_scheduled_delay_advice_follows_advice_headroom(tmp_path):
    """lab connect-healthy-worker-restart@4.4.0: connect-3 came back 38.7 s after leaving, past a 20000 ms delay; the
    advised scheduled.rebalance.max.delay.ms is advice_headroom x the time away (it was a hard-coded 1.5)."""
    default = _finding("lab/connect-healthy-worker-restart@4.4.0", "connect-scheduled-delay", tmp_path)
    doubled = _finding("lab/connect-healthy-worker-restart@4.4.0", "connect-scheduled-delay", tmp_path,
                       "[connect-scheduled-delay]\nadvice_headroom = 2.0\n")
    for finding, headroom in ((default, 1.5), (doubled, 2.0)):
        f = _figures(finding)
        away, advice = f["away_ms"], f["advised.scheduled.rebalance.max.delay.ms"]
        assert advice.value == math.ceil(away.value * headroom / 1000) * 1000
        assert f"{advice.value} ms ({headroom:g} x the time away" in finding.remediation
    assert _figures(default)["advised.scheduled.rebalance.max.delay.ms"].value == 59000


@pytest.mark.parametrize("per_session, words", [(3, "a third"), (4, "a quarter"), (6, "1/6")])
def test_heartbeat_expiration_advice_states_the_ratio_config_heartbeat_ratio_detects_with(tmp_path, per_session, words):
    """lab session-timeout-pause@4.4.0: app-2 was paused past session.timeout.ms; the advice pairs the advised
    session.timeout.ms with heartbeat.interval.ms at the share of it that config-heartbeat-ratio detects with (its
    heartbeats_per_session, overridden by the user), not a hard-coded third. The advised session itself does not move.
    (At a stricter ratio config-heartbeat-ratio fires too and this finding folds into it: the rule is run itself.)"""
    from rebalance_doctor.rules import engine, heartbeat_expiration
    from rebalance_doctor.rules.config import AnalysisConfig

    config = AnalysisConfig()
    config.thresholds["config-heartbeat-ratio"]["heartbeats_per_session"] = per_session
    analysis = api.analyze([str(REPO / "fixtures" / "lab" / "session-timeout-pause@4.4.0")])
    [finding] = [f for g in analysis.groups
                 for f in heartbeat_expiration.check(g.timeline, engine.thresholds(heartbeat_expiration.ID, config))]
    advice = _figures(finding)["advised.session.timeout.ms"]
    assert advice.value == 26000
    assert (f"raise session.timeout.ms to 26000 ms ({advice.formula}; heartbeat.interval.ms at {words} of it)"
            in finding.remediation)
    assert ("a third" in finding.remediation) == (per_session == 3)


@pytest.mark.parametrize("per_session, words", [(3, "a third"), (5, "1/5")])
def test_missed_rebalance_advice_states_the_ratio_config_heartbeat_ratio_detects_with(tmp_path, per_session, words):
    """The simulator's heartbeat-misses-rebalance (seed 11, 3.6.0): a member whose heartbeat.interval.ms is not below
    the rebalance timeout misses rebalances; its advice bounds heartbeat.interval.ms by the share of
    session.timeout.ms config-heartbeat-ratio detects with (1/5 when the user sets heartbeats_per_session = 5)."""
    from rebalance_doctor.sim.scenarios import run

    logs = run("heartbeat-misses-rebalance", 11, "3.6.0").write(tmp_path / "logs")
    config = tmp_path / "override.toml"
    config.write_text(f"[config-heartbeat-ratio]\nheartbeats_per_session = {per_session}\n", encoding="utf-8")
    finding = next(f for f in api.analyze([str(logs)], config=config).findings if f.rule == "missed-rebalance")
    assert f"to at most {words} of session.timeout.ms" in finding.remediation, finding.remediation
