"""`analyze --follow` folds what is older than the rules' window into counts (rebalance_doctor/fold.py): a
storm's figures count across the fold as `analyze` of the whole log counts them.

The log is one member's own lines (Kafka 3.x ConsumerCoordinator wording): it is told again and again that
the group is already rebalancing, rejoins and syncs, with no logged cause: `rebalance-storm` stands alone.
The first hour storms harder than the hours after it, so that the busiest window, the first rebalance and
most of the rebalances are folded long before the follow ends.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

START = datetime(2024, 3, 5, 9, 0, 0)
MEMBER = "consumer-ledger-1-6f6b8421-ad95-43b4-8ff9-134d53e9cfd2"


def _line(t: datetime, thread: str, message: str) -> str:
    return (f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} INFO  [{thread}] org.apache.kafka.clients.consumer."
            f"internals.ConsumerCoordinator - [Consumer clientId=consumer-ledger-1, groupId=ledger] {message}\n")


def storm_log(hours: float, hard_minutes: float = 60, seed: int = 1) -> list[str]:
    """A rebalance every minute or so for ``hard_minutes``, every two minutes after it."""
    rnd = random.Random(seed)
    t, generation, out = START, 1, []
    while t < START + timedelta(hours=hours):
        out.append(_line(t, "kafka-coordinator-heartbeat-thread | ledger",
                         "Request joining group due to: group is already rebalancing"))
        t += timedelta(milliseconds=200 + rnd.randint(0, 100))
        out.append(_line(t, "main", "(Re-)joining group"))
        t += timedelta(milliseconds=2000 + rnd.randint(0, 3000))
        generation += 1
        joined = f"Generation{{generationId={generation}, memberId='{MEMBER}', protocol='range'}}"
        out.append(_line(t, "main", f"Successfully joined group with generation {joined}"))
        t += timedelta(milliseconds=11)
        out.append(_line(t, "main", f"Successfully synced group in generation {joined}"))
        hard = t - START < timedelta(minutes=hard_minutes)
        t += timedelta(seconds=(50 if hard else 110) + rnd.randint(0, 30))
    return out


def follow(tmp_path, lines: list[str], piece: int = 40):
    """The log written ``piece`` lines at a time while a follow session reads it (in-process; its clock moves a
    second a step, so that every step reads, ends the held-back record and diagnoses). The session, the log,
    and the most events it held."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.rules.config import load

    log = tmp_path / "node1.log"
    log.write_text("")
    ticks = iter(range(1, 10**9))
    live = Live([str(log)], ReadOptions(), load(None), clock=lambda: float(next(ticks)))
    most = 0
    for i in range(0, len(lines), piece):
        with open(log, "a") as out:
            out.write("".join(lines[i:i + piece]))
        live.step()
        live.step()
        most = max(most, len(live.events))
    live.step(final=True)
    return live, log, most


def _storm(analysis):
    [storm] = [f for f in analysis.findings if f.rule == "rebalance-storm"]
    return storm


def _shown(f) -> tuple:
    return (f.severity, f.title, f.summary, f.start, f.culprit.label if f.culprit else None,
            [(x.name, x.value) for x in f.figures])


@pytest.mark.parametrize("hours,hard_minutes", [(3.0, 60), (4.0, 150)], ids=["busiest-first-hour", "storm-then-calm"])
def test_a_storm_followed_for_hours_counts_across_the_fold_as_analyze_does(tmp_path, hours, hard_minutes):
    """Three or four log-hours, folded down to one window: the storm's rebalances, those by what started them,
    its peak (in a window folded long before), the time the logs cover, the unstable time and share, the hourly
    rate, its first rebalance, its title and summary are analyze's of the same file."""
    from rebalance_doctor import api

    lines = storm_log(hours, hard_minutes)
    live, log, most = follow(tmp_path, lines)
    assert live.events_read == len(lines)
    assert most < len(lines) / 2, "held: one window, not the log"
    [group] = live.result().groups
    assert group.timeline.folded is not None and group.timeline.folded.counted > len(group.timeline.rebalances)
    followed, expected = _storm(live.result()), _storm(api.analyze(str(log)))
    assert _shown(followed) == _shown(expected)
    figures = {x.name: x.value for x in followed.figures}
    assert figures["rebalances"] == figures["rebalances.unknown"] == len(lines) // 4
    # What decides it: the busiest window lies among the folded rebalances, not in the window held.
    held = [r.start for r in group.timeline.rebalances]
    assert max(sum(1 for s in held if t <= s < t + timedelta(minutes=10)) for t in held) < figures["peak"]


def test_the_folded_rebalances_say_they_are_counted_not_listed(tmp_path):
    """A count that includes folded rebalances names only the lines held; its note says how many are folded."""
    live, _, _ = follow(tmp_path, storm_log(3.0))
    storm = _storm(live.result())
    count = next(x for x in storm.figures if x.name == "rebalances")
    folded = live.result().groups[0].timeline.folded.counted
    assert f"{folded} of them followed earlier" in count.note
    assert len(count.evidence) == count.value - folded
