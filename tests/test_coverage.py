"""Every in-scope template of the Kafka inventory (2.4-4.2), rendered into the line its version
writes, is read as the right pattern with the right fields; docs/patterns.md and the generated
packs are current."""

from __future__ import annotations

import pytest

from conftest import TEMPLATES
from rebalance_doctor.synth import coverage, packgen
from rebalance_doctor.synth.inventory import COMPONENTS, VERSIONS, load_rows
from rebalance_doctor.synth.render import render

pytestmark = pytest.mark.skipif(not TEMPLATES.is_file(), reason="../shared/kafka-templates is not present")


@pytest.fixture(scope="module")
def measured():
    return coverage.measure()


@pytest.mark.parametrize("component", COMPONENTS)
def test_info_and_above_coverage_is_at_least_98_percent_per_version(measured, component):
    for version in VERSIONS:
        share = measured.share(component, version, "reported")
        assert share is not None and share >= 0.98, (component, version, share, [
            (m.row.template[:80], m.got, m.problems[:2]) for m in measured.misses
            if m.row.component == component and m.row.version == version])


def test_debug_templates_a_diagnosis_uses_are_covered(measured):
    misses = [m for m in measured.misses if m.row.level == "DEBUG"]
    assert not misses, [(m.row.component, m.row.version, m.row.template[:80], m.got, m.problems[:2]) for m in misses]


def test_every_left_out_template_has_a_reason(measured):
    assert measured.excluded and all(len(reason) > 30 for reason in measured.excluded.values())
    assert len(measured.excluded) < 0.03 * measured.templates


def test_docs_patterns_md_is_current(measured):
    assert coverage.DOC.read_text(encoding="utf-8") == coverage.markdown(measured), \
        "docs/patterns.md is stale: run python -m rebalance_doctor.synth.coverage"


def test_generated_packs_and_fixtures_are_current():
    files, _ = packgen.build()
    stale = [rel for rel, text in files.items() if (packgen.REPO / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"{stale} are stale: run python -m rebalance_doctor.synth.packgen"


def test_renderer_writes_each_versions_layout_prefix_and_logger():
    rows = {(r.component, r.version, r.cls, r.template): r for r in load_rows()}
    join = rows[("consumer", "2.4.0", "AbstractCoordinator", "(Re-)joining group")]
    assert render(join).line == ("[2024-05-01 13:45:12,345] INFO [Consumer clientId=consumer-orders-1, groupId=orders] "
                                 "(Re-)joining group (org.apache.kafka.clients.consumer.internals.AbstractCoordinator)")
    connect = rows[("connect", "3.0.0", "AbstractCoordinator", "(Re-)joining group")]
    assert render(connect).line.endswith(f"(Re-)joining group (org.apache.kafka.connect.runtime.distributed."
                                         f"WorkerCoordinator:{connect.line})")
    state = rows[("streams", "4.1.0", "StreamThread", "State transition from {} to {}")]
    line = render(state).line
    assert line.startswith("13:45:12,345 INFO  org.apache.kafka.streams.processor.internals.StreamThread ")
    assert " [] - stream-thread [otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1] State transition from " in line
    assert render(state).fields["group"] == "otter-app"
