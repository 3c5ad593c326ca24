"""The HTML report in a real browser: the system's headless Chromium, driven by playwright.

The page loads with no console error and no network request; the fixture's lanes, rebalances and
root cause are in the DOM; hovering a mark shows its evidence line; zoom, the group selector and
the rebalance table's rows work. Skipped where Chromium or playwright is missing, unless
RD_REQUIRE_BROWSER=1 (CI sets it: there, a missing browser is a failure).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rebalance_doctor

from browser import Visit, browser, missing, open_page

REPO = Path(__file__).resolve().parents[1]
INCIDENTS = REPO / "fixtures" / "incidents"

_why = missing()
if _why and os.environ.get("RD_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"RD_REQUIRE_BROWSER=1 but {_why}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(_why is not None, reason=_why or "")]


@pytest.fixture(scope="module")
def context():
    with browser() as ctx:
        yield ctx


@pytest.fixture(scope="module")
def storm_page(tmp_path_factory) -> Path:
    page = tmp_path_factory.mktemp("html") / "storm.html"
    rebalance_doctor.analyze(INCIDENTS / "poll-timeout-storm").write_html(page)
    return page


def test_loads_without_errors_or_requests_and_shows_the_incident(context, storm_page):
    visit = Visit()
    page = open_page(context, storm_page, visit)
    try:
        assert visit.console_errors == [] and visit.requests == []
        answer = page.inner_text("#answer")
        assert "poll-timeout" in answer and "consumer-payments-1@node2" in answer and "node2" in answer
        lanes = page.eval_on_selector_all(
            "#chart g.lane", "els => els.map(e => [e.dataset.title, e.dataset.sub, e.dataset.culprit])")
        assert lanes == [["coordinator", "broker broker-1", ""], ["node1", "consumer-payments-1", ""],
                         ["node2", "consumer-payments-1", "poll-timeout"], ["node3", "consumer-payments-1", ""]]
        assert page.locator('#chart g.mark[data-kind="poll-timeout"][data-lane="2"]').count() == 5
        assert page.locator('#chart g.mark[data-kind="poll-timeout"]:not([data-lane="2"])').count() == 0
        generations = page.eval_on_selector_all("#chart rect.band", "els => els.map(e => e.dataset.generation)")
        assert generations == [str(g) for g in range(13, 23)]
        assert set(page.eval_on_selector_all("#chart rect.band", "els => els.map(e => e.dataset.verdict)")) == {"harmful"}
        kinds = set(page.eval_on_selector_all("#chart g.mark", "els => els.map(e => e.dataset.kind)"))
        assert {"join", "leave", "poll-timeout"} <= kinds
        legend = page.eval_on_selector_all("#legend .entry", "els => els.map(e => e.dataset.legend)")
        assert {"mark:" + k for k in kinds} <= set(legend) and "culprit:culprit" in legend and "ring:evidence" in legend
        assert page.locator("#findings article.finding").count() == 1, "one causal chain"
        assert "symptoms: membership-flapping, missed-rebalance, rebalance-storm" in page.inner_text("#findings")
        assert page.locator("#accounting").inner_text().count(".log") >= 4
    finally:
        page.close()


def test_hover_shows_the_evidence_line_and_click_pins_it(context, storm_page):
    visit = Visit()
    page = open_page(context, storm_page, visit)
    try:
        timeout = page.locator('#chart g.mark[data-kind="poll-timeout"]').first
        timeout.hover()
        tip = page.locator("#tip")
        assert tip.is_visible()
        text = tip.inner_text()
        assert "node2.log:4" in text and "consumer poll timeout has expired" in text and "node2" in text
        assert "evidence of: poll-timeout" in text
        band = page.locator('#chart rect.band[data-generation="13"]')
        band.dispatch_event("click")  # a mark sits on top of the band's middle
        assert tip.is_visible() and "generation 12 → 13" in tip.inner_text()
        page.mouse.move(5, 5)
        assert tip.is_visible(), "a clicked tooltip stays until Escape or a click elsewhere"
        page.keyboard.press("Escape")
        assert not tip.is_visible()
        assert visit.console_errors == []
    finally:
        page.close()


def test_nothing_drawn_over_a_mark_takes_its_pointer(context, storm_page):
    """Grid lines, labels and counts must not sit between the pointer and a mark."""
    page = open_page(context, storm_page, Visit())
    try:
        blocked = page.evaluate("""() => Array.from(document.querySelectorAll('#chart g.mark')).filter(m => {
            const r = m.getBoundingClientRect();
            const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
            return !(hit && m.contains(hit));
        }).length""")
        assert blocked == 0
    finally:
        page.close()


def test_zoom_and_whole_window(context, storm_page):
    page = open_page(context, storm_page, Visit())
    try:
        def width() -> float:
            return float(page.get_attribute('#chart rect.band[data-generation="17"]', "width"))

        before = width()
        page.click("#zoom-in")
        page.click("#zoom-in")
        assert width() > before * 2
        page.click("#zoom-reset")
        assert width() <= before, "the whole window is at least as wide as the first view"
        box = page.locator("#chart").bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 60)
        page.mouse.wheel(0, -600)
        page.wait_for_timeout(50)
        assert width() > before / 4
    finally:
        page.close()


def test_group_selector_and_rebalance_rows(context, tmp_path):
    page_file = tmp_path / "two.html"
    result = rebalance_doctor.analyze([INCIDENTS / "poll-timeout-storm", INCIDENTS / "heartbeat-expiration"])
    result.write_html(page_file)
    visit = Visit()
    page = open_page(context, page_file, visit)
    try:
        assert page.get_attribute("#chart svg", "data-group") == "payments", "the answer's group first"
        page.select_option("#group-select", "orders")
        assert page.get_attribute("#chart svg", "data-group") == "orders"
        lanes = page.eval_on_selector_all("#chart g.lane", "els => els.map(e => e.dataset.title)")
        assert lanes[0] == "coordinator" and len(lanes) >= 2
        page.locator('details#g-payments').evaluate("d => d.open = true")
        page.locator('tr.rb[data-group="payments"][data-index="3"]').click()
        assert page.get_attribute("#chart svg", "data-group") == "payments"
        assert page.get_attribute('#chart rect.band[data-index="3"]', "stroke") == "#1565c0"
        assert visit.console_errors == [] and visit.requests == []
    finally:
        page.close()


def test_a_big_incident_page_stays_small(context, tmp_path):
    """Every shipped incident at once (17 groups): the page is a few hundred KB and draws clean."""
    page_file = tmp_path / "all.html"
    result = rebalance_doctor.analyze(INCIDENTS)
    result.write_html(page_file)
    assert page_file.stat().st_size < 2_000_000
    visit = Visit()
    page = open_page(context, page_file, visit)
    try:
        for name in [g.timeline.group for g in result.groups]:
            page.select_option("#group-select", name)
        assert visit.console_errors == [] and visit.requests == []
    finally:
        page.close()


def test_the_thread_death_is_on_its_own_lane_and_explained(context, tmp_path):
    """streams-thread-died: a lane per StreamThread on the host it runs on, the death ringed on the culprit's
    lane, and the legend says what every shape drawn means."""
    page_file = tmp_path / "died.html"
    rebalance_doctor.analyze(INCIDENTS / "streams-thread-died").write_html(page_file)
    visit = Visit()
    page = open_page(context, page_file, visit)
    try:
        lanes = page.eval_on_selector_all("#chart g.lane", "els => els.map(e => e.dataset.title + ' ' + e.dataset.sub)")
        assert lanes == ["coordinator broker kafka2"] + [f"search-7d9f{h} StreamThread-{t}" for h in (3, 4, 5) for t in (1, 2)]
        died = page.locator('#chart g.mark[data-kind="thread-died"]')
        assert died.count() == 1 and died.get_attribute("data-lane") == "4" and died.get_attribute("data-rules") == "thread-died"
        assert page.locator('#chart g.lane[data-lane="4"]').get_attribute("data-culprit") == "thread-died"
        died.hover()
        assert "search-7d9f4/application.log:192" in page.inner_text("#tip")
        drawn = set(page.eval_on_selector_all("#chart g.mark", "els => els.map(e => e.dataset.kind)"))
        legend = set(page.eval_on_selector_all("#legend .entry", "els => els.map(e => e.dataset.legend)"))
        assert {"mark:" + k for k in drawn} <= legend and "line:life" in legend and "band:failed" in legend
        assert visit.console_errors == [] and visit.requests == []
    finally:
        page.close()
