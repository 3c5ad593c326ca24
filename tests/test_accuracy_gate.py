"""The accuracy gate: the diagnosis judged on simulated incidents (rebalance_doctor.synth.accuracy).

A fixed plan seed that was never used while tuning (tuning used plan seeds 1001-1010; docs/accuracy.md
uses 7): 20 incidents per scenario, so that every rule with a simulator scenario has at least 20
positive incidents. Pinned, per TRUTH.md and issue 16: precision and recall >= 0.95 for every rule the
run tests (>= 20 positives and >= 20 healthy look-alikes), no warning on any healthy incident, and the
first finding names the culprit in >= 95% of the incidents whose truth names one.
"""

from __future__ import annotations

import pytest

from rebalance_doctor.synth import accuracy
from rebalance_doctor.synth.sim.scenarios import SCENARIOS
from tests.helpers import hosts_from_directories

GATE_SEED = 1616
PER_SCENARIO = 20
# The simulator writes worker-N/payments.log: until the reader names hosts after directories (issue 18a),
# several processes share one host and the gate cannot hold.
needs_hosts = pytest.mark.xfail(not hosts_from_directories(), strict=True,
                                reason="hosts from directories (issue 18a's host inference) not on main yet")


@pytest.fixture(scope="module")
def scores():
    return accuracy.evaluate(accuracy.plan(PER_SCENARIO * len(SCENARIOS), GATE_SEED))


def test_no_analysis_error(scores):
    assert scores.errors == []


def test_every_rule_with_a_scenario_is_tested(scores):
    rules = {rule for spec in SCENARIOS.values() for rule in spec.rules}
    untested = sorted(r for r in rules if scores.rules[r].positives < accuracy.MIN_POSITIVES)
    assert not untested, f"rules with scenarios but fewer than {accuracy.MIN_POSITIVES} positives: {untested}"


def test_precision_and_recall_of_every_tested_rule(scores):
    low = {rule: (s.precision, s.recall) for rule, s in scores.rules.items()
           if s.tested and ((s.precision or 0) < 0.95 or (s.recall or 0) < 0.95)}
    assert not low, "\n".join([str(low)] + scores.failures[:20])


@needs_hosts
def test_no_false_positive_of_any_rule(scores):
    """Untested rules too: any top-level finding the truth neither expects nor allows is a false alarm."""
    false = {rule: s.fp for rule, s in scores.rules.items() if s.fp}
    assert not false, "\n".join([str(false)] + [f for f in scores.failures if "false" in f][:20])


@needs_hosts
def test_healthy_incidents_never_warn(scores):
    assert scores.healthy > 0 and scores.healthy_alarms == 0, \
        "\n".join(f for f in scores.failures if "healthy but warned" in f)


@needs_hosts
def test_the_first_finding_names_the_culprit(scores):
    assert scores.culprit_cases > 0 and scores.culprit_first_rate >= 0.95, scores.failures[:20]
