"""Many groups reported compactly (issue 34 item 6): 20,000 groups wrote a 65 MB HTML page on fe6ad67.

The limits of report/detail.py are made small here; the logs are benchmarks/scale_bench.py's (groups whose
member leaves on a poll timeout and rejoins: every group has a finding). Every format keeps a row per group up
to its table's limit and says what the rest add up to; the full detail goes to the most hurt groups only;
the JSON keeps every group.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from rebalance_doctor import api
from rebalance_doctor.report import detail, human

REPO = Path(__file__).resolve().parent.parent
GROUPS = 30


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("scale_bench", REPO / "benchmarks" / "scale_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path_factory.mktemp("groups")
    bench.write("groups", GROUPS, out)
    return api.analyze([str(out)])


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(detail, "HTML_DETAILED", 5)
    monkeypatch.setattr(detail, "TEXT_DETAILED", 3)
    monkeypatch.setattr(detail, "TABLE_ROWS", 10)


def _data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S).group(1))


def test_the_html_draws_the_most_hurt_groups_and_tables_the_rest(analysis, small):
    page = analysis.to_html()
    drawn = [g["name"] for g in _data(page)["groups"]]
    assert len(drawn) == 5
    ranked = sorted(analysis.answer.groups, key=detail.rank)
    assert set(drawn) == {g.group for g in ranked[:5]}
    assert page.count('class="group-rebalances"') == 5
    assert f"5 of {GROUPS} groups are drawn" in page
    groups_table = page[page.index('<section id="groups">'):page.index('<section id="findings">')]
    assert groups_table.count("<tr class=") == 10
    assert f"{GROUPS - 10} more group(s)" in groups_table
    findings = page[page.index('<section id="findings">'):page.index("</section>", page.index('<section id="findings">'))]
    assert findings.count('<article class="finding') == sum(1 for f in analysis.findings if f.group in drawn)
    assert f"In the {GROUPS - 5} groups not shown in full" in findings


def test_the_html_of_few_groups_is_whole(analysis):
    page = analysis.to_html()
    assert len(_data(page)["groups"]) == GROUPS
    assert "groups are drawn" not in page and "more group(s)" not in page


def test_markdown_and_terminal_give_sections_to_the_most_hurt_only(analysis, small):
    text = analysis.to_markdown()
    assert text.count("\n### ") == 3
    assert f"{GROUPS - 10} more group(s)" in text and f"{GROUPS - 3} more group(s) not shown in full" in text
    buffer = io.StringIO()
    human.render(analysis, Console(file=buffer, width=120, highlight=False))
    screen = buffer.getvalue()
    assert f"{GROUPS - 3} more group(s) not shown in full" in screen


def test_json_keeps_every_group(analysis, small):
    assert len(analysis.to_dict()["groups"]) == GROUPS
