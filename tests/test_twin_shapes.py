"""The lines each simulator twin writes beside the lab's recording of the same operation (judge/shapes.py)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from rebalance_doctor.judge import shapes, twins
from rebalance_doctor.packgen.inventory import load_rows
from rebalance_doctor.sim.catalog import release

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
RECORDED = [d.name for d in sorted(p.parent for p in CORPUS.glob("*/expected.toml"))
            if d.name.split("@")[0] in twins.catalog()["twin"]]


@lru_cache(maxsize=1)
def _inventory() -> set[tuple[str, str, str, str]]:
    return {(r.version, r.template, r.logger, r.level) for r in load_rows()}


# Pairs whose operations differ in set-up, not in what Kafka writes: each says what differs (strict: a fix shows).
KNOWN = {
    "connect-config-topic-mismatch@3.9.2": "the twin's workers start with connectors already configured, so its leader "
    "revokes work when the others join and rejoins ('Leader ... re-joining group during Stable'); the lab's connector "
    "is created after all three joined, and the coordinator's only Stable rejoins are the forcing worker's "
    "('Updating metadata for member ...'). At 4.2.1 and 4.4.0 the pair agrees.",
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n]))
                                  if n in KNOWN else n for n in RECORDED])
def test_the_twin_writes_kafka_lines_as_the_lab_recorded_them(name):
    """Every Kafka line the twin writes is a row of the project's inventory at the lab's release (template,
    logger, level, and the lint's full match of the message); where the recording holds the same words,
    real Kafka wrote them under the same logger and level, and in the wording the twin chose."""
    result = shapes.compare(CORPUS / name, twins.catalog()["twin"][name.split("@")[0]])
    assert result.simulated_at == twins.simulated_release(name.split("@")[1])
    rel = release(result.simulated_at)
    for shape in result.written:
        assert (rel, shape.template, shape.logger, shape.level) in _inventory(), shape
    assert result.written and result.agree, "the twin and the recording share lines"
    assert result.problems == []


def test_a_difference_is_named_with_the_lab_line(tmp_path):
    """A twin writing words the recording holds only under another logger is a difference, shown with the lab's
    line; words the recording does not hold are unseen, not a difference."""
    lab = tmp_path / "x@4.2.1"
    lab.mkdir()
    (lab / "app-1.log").write_text(
        "[2026-12-06 05:06:24,264] INFO [Consumer clientId=c-1, groupId=g] Request joining group due to: "
        "need to re-join with the given member-id: m-1 (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n")
    lines = shapes.recorded_lines(lab)
    worker = shapes.Shape("connect.request_rejoin", "Request joining group due to: {}",
                          "org.apache.kafka.connect.runtime.distributed.WorkerCoordinator", "INFO")
    assert shapes._holding(lines, worker.template) == lines
    assert not shapes._logger(worker.logger).search(lines[0])
    assert shapes._holding(lines, "Successfully joined group with generation {}") == []
    # a generic template says too little to look for
    assert shapes._words("{} in {}ms: {}") is None
