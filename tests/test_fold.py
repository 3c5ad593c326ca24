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


# -- membership-flapping: a member's departures survive the fold -------------------------------------------------

def _flapping_story(cycles: int, gap_s: float, alternate: bool = False):
    """Two Java consumers (3.6 wording, their own logs only); consumer-orders-2 loses its membership ``cycles``
    times, ``gap_s`` apart, and rejoins told UNKNOWN_MEMBER_ID: the generation completed without it.
    ``alternate``: the two members take turns, each losing it every other cycle."""
    from tests.stories import ClassicGroup, Story

    story = Story("orders")
    group = ClassicGroup(story, None, generation=40)
    a = group.consumer("node-a", "consumer-orders-1", 1)
    b = group.consumer("node-b", "consumer-orders-2", 2)
    group.start_with(a, b)
    for cycle in range(cycles):
        gone = (b, a)[cycle % 2] if alternate else b
        group.tick(gap_s)
        group.members.remove(gone)
        group.gen += 1                       # a generation without it, which only the generation number shows
        group.members.append(gone)
        group.tick(5)
        gone.heartbeat_unknown(group.gen - 1)
        gone.request_join("encountered UNKNOWN_MEMBER_ID from HEARTBEAT response")
        gone.joining()
        group.rebalance(starter=gone)
    return story


def _follow_story(story, directory):
    """The story's files written record by record in time order (each file growing), a follow session reading
    them as they grow; the session after its final step."""
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.live import Live
    from rebalance_doctor.packgen.envelope import render
    from rebalance_doctor.rules.config import load

    records = sorted(((ts, i, path, render(story.layout, ts, level, logger, msg, thread) + "\n")
                      for path, rows in story.files.items() for ts, i, level, logger, msg, thread in rows),
                     key=lambda r: (r[0], r[1]))
    for path in story.files:
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text("")
    ticks = iter(range(1, 10**9))
    live = Live([str(directory)], ReadOptions(), load(None), clock=lambda: float(next(ticks)))
    for _, _, path, line in records:
        with open(directory / path, "a") as out:
            out.write(line)
        live.step()
        live.step()
    live.step(final=True)
    return live


def _flapping(analysis):
    return [f for f in analysis.findings if f.rule == "membership-flapping"]


def test_flapping_whose_departures_are_further_apart_than_the_window_is_found_across_the_fold(tmp_path):
    """Three departures 75 minutes apart: no window the follow holds (one hour) ever shows two of them, so before
    the fold kept a member's departures the follow never found what analyze of the finished log finds. Now the
    finding is analyze's: title, summary (three departures, three UNKNOWN_MEMBER_ID rejoins, the member counts
    of the folded generations), start, end and figures."""
    from rebalance_doctor import api

    story = _flapping_story(cycles=3, gap_s=75 * 60)
    [expected] = _flapping(api.analyze(story.save(tmp_path / "whole")))
    live = _follow_story(story, tmp_path / "followed")
    try:
        result = live.result()
    finally:
        live.close()
    [group] = result.groups
    folded = group.timeline.folded
    assert folded is not None and folded.departures == {next(iter(folded.departures)): 2}, folded
    assert len(group.timeline.rebalances) == 1          # the window held: one departure of the three
    [followed] = _flapping(result)
    assert _shown(followed) == _shown(expected)
    assert followed.end == expected.end
    departures = next(x for x in followed.figures if x.name.startswith("departures."))
    assert departures.value == 3 and "2 of them followed earlier" in departures.note
    assert len(departures.evidence) == 1                 # only the held departure's line is listed


def test_two_members_each_leaving_once_across_the_fold_is_no_flapping(tmp_path):
    """What the folded counts must not do: add one member's departures to another's. Two members each lose their
    membership once, 75 minutes apart (the first folded when the second comes): analyze finds no flapping, nor
    does the follow."""
    from rebalance_doctor import api

    story = _flapping_story(cycles=2, gap_s=75 * 60, alternate=True)
    assert not _flapping(api.analyze(story.save(tmp_path / "whole")))
    live = _follow_story(story, tmp_path / "followed")
    try:
        result = live.result()
    finally:
        live.close()
    assert not _flapping(result)
    assert sorted(result.groups[0].timeline.folded.departures.values()) == [1]   # the first member's, folded
