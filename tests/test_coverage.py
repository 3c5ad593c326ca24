"""Every in-scope template of the Kafka inventory (2.4-4.2), rendered into the line its version
writes, is read as the right pattern with the right fields; docs/patterns.md and the generated
packs are current."""

from __future__ import annotations

import re

import pytest

from conftest import TEMPLATES
from rebalance_doctor.packgen import coverage, packgen
from rebalance_doctor.packgen.inventory import COMPONENTS, VERSIONS, load_rows
from rebalance_doctor.packgen.render import LAYOUTS, render

# The whole inventory rendered and read, and the generated packs regenerated: most of a minute.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not TEMPLATES.is_file(), reason="patterns/kafka/templates.jsonl is not present")]


@pytest.fixture(scope="module")
def measured():
    return coverage.measure()


@pytest.mark.parametrize("component", COMPONENTS)
def test_info_and_above_coverage_is_at_least_99_percent_per_version(measured, component):
    for version in VERSIONS:
        share = measured.share(component, version, "reported")
        assert share is not None and share >= 0.99, (component, version, share, [
            (m.row.template[:80], m.got, m.problems[:2]) for m in measured.misses
            if m.row.component == component and m.row.version == version])


def test_records_among_foreign_lines_are_read_in_every_layout(measured):
    """Each layout's file with foreign lines between the records, read as written and hard-wrapped
    (80 or 200 columns): at least 99% of the records read right either way (docs/patterns.md)."""
    assert set(measured.files) == set(LAYOUTS)
    low = {layout: (right / total, wrapped / total) for layout, (total, right, wrapped) in measured.files.items()
           if min(right, wrapped) / total < 0.99}
    assert not low, low


def test_debug_templates_a_diagnosis_uses_are_covered(measured):
    misses = [m for m in measured.misses if m.row.level == "DEBUG"]
    assert not misses, [(m.row.component, m.row.version, m.row.template[:80], m.got, m.problems[:2]) for m in misses]


def test_every_left_out_template_has_a_reason(measured):
    assert measured.excluded and all(len(reason) > 30 for reason in measured.excluded.values())
    assert len(measured.excluded) < 0.03 * measured.templates


def test_docs_patterns_md_is_current(measured):
    assert coverage.DOC.read_text(encoding="utf-8") == coverage.markdown(measured), \
        "docs/patterns.md is stale: run python -m rebalance_doctor.packgen.coverage"


def test_generated_packs_and_fixtures_are_current():
    files, _ = packgen.build()
    stale = [rel for rel, text in files.items() if (packgen.REPO / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"{stale} are stale: run python -m rebalance_doctor.packgen.packgen"


def test_renderer_writes_each_versions_layout_prefix_and_logger():
    rows = {(r.component, r.version, r.cls, r.template): r for r in load_rows()}
    join = rows[("consumer", "2.4.0", "AbstractCoordinator", "(Re-)joining group")]
    rendered = render(join)
    assert re.fullmatch(r"\[2024-05-01 13:45:12,345\] INFO \[Consumer (?:instanceId=\S+, )?clientId=(\S+), groupId=(\S+)\] "
                        r"\(Re-\)joining group \(org\.apache\.kafka\.clients\.consumer\.internals\.AbstractCoordinator\)",
                        rendered.line)
    assert rendered.fields["client"] in rendered.line and rendered.fields["group"] in rendered.line
    connect = rows[("connect", "3.0.0", "AbstractCoordinator", "(Re-)joining group")]
    assert render(connect).line.endswith(f"(Re-)joining group (org.apache.kafka.connect.runtime.distributed."
                                         f"WorkerCoordinator:{connect.line})")
    state = rows[("streams", "4.1.0", "StreamThread", "State transition from {} to {}")]
    rendered = render(state)
    assert rendered.line.startswith("13:45:12,345 INFO  org.apache.kafka.streams.processor.internals.StreamThread ")
    thread = rendered.fields["thread"]
    assert re.fullmatch(r".+-[0-9a-f-]{36}-StreamThread-\d+", thread)
    assert f" [] - stream-thread [{thread}] State transition from " in rendered.line
    assert thread.startswith(rendered.fields["group"] + "-")


def test_the_same_seed_renders_the_same_line_and_others_vary():
    rows = {(r.component, r.version, r.cls, r.template): r for r in load_rows()}
    row = rows[("broker", "3.6.0", "GroupCoordinator", "Member {} has left group {} through explicit `LeaveGroup`; client reason: {}")]
    assert render(row, seed=7).line == render(row, seed=7).line
    lines = {render(row, seed=s, layout="kafka").line for s in range(20)}
    assert len(lines) == 20


def test_objects_are_printed_as_their_type_prints_them():
    """The Scala coordinator logs the MemberMetadata itself; the line then names the leaving client's
    host and timeouts, and the event carries them."""
    rows = {(r.component, r.version, r.cls, r.template): r for r in load_rows()}
    row = rows[("broker", "3.6.0", "GroupCoordinator", "Member {} has left group {} through explicit `LeaveGroup`; client reason: {}")]
    rendered = render(row, seed=3)
    assert re.search(r"Member MemberMetadata\(memberId=\S.*, groupInstanceId=(?:None|Some\(.+\)), clientId=.+, "
                     r"clientHost=/10\.\d+\.\d+\.\d+, sessionTimeoutMs=\d+, rebalanceTimeoutMs=\d+, "
                     r"supportedProtocols=List\([\w, -]+\)\) has left group", rendered.line)
    assert rendered.fields["client_host"].startswith("/10.")
    old = rows[("broker", "2.8.0", "GroupCoordinator", "Member[group.instance.id {}, member.id {}] in group {} has left, removing it from the group")]
    assert re.search(r"Member\[group\.instance\.id (?:None|Some\(\S+\)), member\.id ", render(old, seed=1).line)


@pytest.mark.parametrize("indent", ["    ", "        "], ids=["4-spaces", "8-spaces"])
@pytest.mark.parametrize("layout", ["log4j2-pattern", "spring-boot", "kafka"])
def test_every_multi_line_template_reads_the_same_with_space_indents(tmp_path, layout, indent):
    """Issue 18, class 3: every inventory template that spans lines ("Updating assignment with",
    "Handle new assignment with:", "Client {} per-consumer assignment:", "... participating in this
    rebalance:", "ConsumerConfig values:", ...), written into one log with its tab indents turned
    into spaces by a shipper, gives the events (pattern and every field) of the tab-indented log,
    each on its record's first line, with no near miss."""
    from helpers import events_of

    from rebalance_doctor.packgen.check import field_problems

    rows = [r for r in load_rows() if "\n" in r.template]
    assert len(rows) > 100
    records = [render(row, seed=n, layout=layout) for n, row in enumerate(rows)]
    tabs = [r.line.rstrip("\n") for r in records]
    spaces = [re.sub(r"(?m)^\t+", lambda m: indent * len(m.group()), line) for line in tabs]
    assert spaces != tabs
    read = {}
    for name, lines in (("tabs", tabs), ("spaces", spaces)):
        path = tmp_path / name / "app.log"
        path.parent.mkdir()
        path.write_text("\n".join(lines) + "\n")
        events, stats = events_of(path, base_date="2024-05-01", host="h")
        assert stats.files[0].near_misses == 0, (name, stats.files[0].near_miss_samples[:2])
        read[name] = events
    columns = ("line", "event", "pattern", "group", "generation", "member", "client", "thread", "partitions", "tasks",
               "members", "consumers", "delay_ms", "state", "reason")
    assert [tuple(str(e[c]) for c in columns) for e in read["spaces"]] == \
        [tuple(str(e[c]) for c in columns) for e in read["tabs"]]
    first_lines, line = [], 1
    for record in tabs:
        first_lines.append(line)
        line += record.count("\n") + 1
    by_line = {e["line"]: e for e in read["spaces"]}
    wrong = [(rendered.row.template[:60], by_line.get(at, {}).get("pattern"),
              field_problems(by_line[at], rendered.fields)[:2] if at in by_line else None)
             for rendered, at in zip(records, first_lines)
             if at not in by_line or field_problems(by_line[at], rendered.fields)]
    assert not wrong, wrong
