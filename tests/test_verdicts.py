"""One verdict per rebalance (issue 30, item 3): every shipped incident's per-rebalance verdicts equal its
expected.toml, and every format states the verdicts of the rows (JSON rows and the groups' harmful count, the
groups table of the terminal, Markdown and HTML, the HTML rebalance rows, the Markdown timeline); a death's
rebalances are harmful."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

import pytest

import rebalance_doctor
from rebalance_doctor.report import html, markdown
from tests.helpers import run_cli

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"
CASES = sorted(p.parent for p in INCIDENTS.glob("*/expected.toml"))
IDS = [c.name for c in CASES]
# Rules whose cause is a member dying (a StreamThread, a process asking the application down): the rebalances they
# say they caused are harm, never an expected operation.
DEATHS = ("thread-died", "thread-replacement-loop", "application-shutdown")


@lru_cache(maxsize=None)
def _analysis(directory: Path):
    """The analysis as a user gets it (the API: the same as the command line's)."""
    return rebalance_doctor.analyze(str(directory))


def _truth(directory: Path) -> list[dict]:
    return tomllib.loads((directory / "expected.toml").read_text()).get("rebalance", [])


def _rows(analysis) -> dict[tuple[str, int | None], object]:
    return {(g.timeline.group, r.generation): r for g in analysis.groups for r in g.timeline.rebalances}


@pytest.mark.parametrize("directory", CASES, ids=IDS)
def test_verdicts_equal_the_truth(directory: Path):
    """Each rebalance the truth lists (group, generation) is a row of the analysis with that verdict."""
    rows = _rows(_analysis(directory))
    wrong = []
    for item in _truth(directory):
        row = rows.get((item["group"], item["generation"]))
        got = (row.verdict, row.operation) if row is not None else ("no such rebalance", None)
        if got[0] != item["verdict"]:
            wrong.append(f"{item['group']} generation {item['generation']}: {got[0]} ({got[1]}), "
                         f"truth {item['verdict']} ({item['operation']})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("directory", CASES, ids=IDS)
def test_every_format_states_the_rows_verdicts(directory: Path):
    analysis = _analysis(directory)
    document = analysis.to_dict()
    page = analysis.to_html()
    text = analysis.to_markdown()
    terminal = run_cli("analyze", str(directory), "--details", env={"COLUMNS": "300"}).stdout
    for g, doc in zip(analysis.groups, document["groups"]):
        tl = g.timeline
        verdicts = [r.verdict for r in tl.rebalances]
        harmful = verdicts.count("harmful")
        assert doc["group"] == tl.group
        assert [r["verdict"] for r in doc["rebalances"]] == verdicts
        assert doc["summary"]["harmful"] == harmful
        state = next(s for s in analysis.answer.groups if s.group == tl.group)
        assert state.harmful == harmful
        # The HTML groups table: rebalances, failed, harmful in that order after kind and protocol.
        cells = re.search(rf'data-group="{re.escape(html.e(tl.group))}">{re.escape(html.e(tl.group))}</a></td>'
                          r'<td>[^<]*</td><td>[^<]*</td><td class="n">(\d+)</td><td class="n">(\d+)</td>'
                          r'<td class="n">(\d+)</td>', page)
        assert cells is not None and int(cells[3]) == harmful, tl.group
        shown = re.findall(rf'<tr class="rb v-([\w-]+) o-[\w-]+" data-group="{re.escape(html.e(tl.group))}" '
                           r'data-index="(\d+)">', page)
        assert [v for v, _ in shown] == verdicts
        # The Markdown groups table: "| group | kind | protocol | rebalances | failed | harmful | ...".
        listed_group = re.search(rf"^\| {re.escape(markdown.md(tl.group))} \| \w+ \| [\w-]+ \| \d+ \| \d+ \| (\d+) \|",
                                 text, re.M)
        assert listed_group is not None and int(listed_group[1]) == harmful, tl.group
        # The terminal's groups table: group, kind, protocol, rebalances, failed, harmful.
        row = next(line.split() for line in terminal.splitlines() if line.split()[:1] == [tl.group])
        assert int(row[5]) == harmful, tl.group
        # The Markdown timeline: "| # | gen | start | took | operation | verdict | ..." (the first rows).
        section = text.split(f"### {markdown.md(tl.group)} (", 1)[1].split("\n### ", 1)[0]
        listed = re.findall(r"^\| (\d+) \| [^|]+ \| [^|]+ \| [^|]+ \| [^|]+ \| ([\w-]+) \|", section, re.M)
        by_index = {r.index: r.verdict for r in tl.rebalances}
        assert listed and all(by_index[int(i)] == v for i, v in listed), tl.group


@pytest.mark.parametrize("directory", CASES, ids=IDS)
def test_a_death_s_rebalances_are_harmful(directory: Path):
    """A finding whose cause is a death names rebalances that are harmful (the dead member's departure), never an
    expected operation: a warning over a group whose table shows 0 harmful rebalances is the defect issue 30 saw."""
    analysis = _analysis(directory)
    for g in analysis.groups:
        by_index = {r.index: r for r in g.timeline.rebalances}
        for f in g.findings:
            if f.rule in DEATHS:
                # Its own rebalances (the dead threads' departures); the followups it takes in as their consequence
                # (rules/chains.py) are the protocol working, expected.
                caused = [by_index[i] for i in f.caused.get("rebalances", []) if i in by_index]
                own = [r for r in caused if r.cause_index is None or r.cause_index not in f.caused["rebalances"]]
                assert not caused or own and all(r.verdict == "harmful" for r in own), \
                    f"{f.rule}: " + ", ".join(f"{r.index} {r.operation}/{r.verdict}" for r in caused)


def test_the_rebalance_a_thread_death_causes_is_harmful():
    """streams-thread-died: the consumer of the StreamThread that died with an exception sends no LeaveGroup; the
    coordinator removes it one session later. That rebalance is the death's (a crash: harmful), not a deploy, and the
    groups table counts it under the warning."""
    analysis = _analysis(INCIDENTS / "streams-thread-died")
    group = analysis.groups[0]
    last = group.timeline.rebalances[-1]
    assert (last.generation, last.operation, last.verdict) == (5, "crash", "harmful")
    head = group.findings[0]
    assert head.rule == "thread-died" and last.index in head.caused["rebalances"]
    assert [s.harmful for s in analysis.answer.groups] == [1]
    assert analysis.to_dict()["groups"][0]["summary"]["harmful"] == 1
    # The expiry of the dead thread's consumer is the death's story, not a finding of its own.
    assert [f.rule for f in group.findings] == ["thread-died"]
