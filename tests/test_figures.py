"""Figures in findings (rules/figures.py) against the truth's: no stated figure disagrees with what the source
produced, on the shipped incidents and on the recorded lab incidents whose truth carries figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_doctor.core.toml import load_toml
from rebalance_doctor.judge import score
from rebalance_doctor.judge.truth import from_toml
from rebalance_doctor.rules import figures

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.parent for p in (REPO / "fixtures" / "incidents").glob("*/expected.toml"))
LAB = sorted(p.parent for p in (REPO / "fixtures" / "lab").glob("*/expected.toml")
             if "[[figure]]" in p.read_text(encoding="utf-8"))


def _scored(directory: Path) -> score.Scores:
    truth = from_toml(load_toml(directory / "expected.toml"))
    said = score.analyze_here(directory)
    assert said.error is None, said.error
    return score.score([score.Case(directory.name, truth.seed, truth, said, str(directory))])


@pytest.mark.parametrize("directory", SHIPPED + LAB, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_figure_disagrees_with_the_truth(directory):
    scores = _scored(directory)
    assert scores.wrong_figures == []


@pytest.mark.parametrize("directory", [d for d in SHIPPED + LAB if "[[figure]]" in
                                       (d / "expected.toml").read_text(encoding="utf-8")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_removals_are_stated(directory):
    """The counts the issue found wrong (3 removals where the broker logged 2) are stated, and right."""
    scores = _scored(directory)
    rows = [s for s in scores.rules.values() if s.figures]
    assert rows and all(s.figures_right >= 1 for s in rows)


def test_advice_is_never_below_the_value_in_force_and_says_when_it_would_not_help():
    basis = figures.Figure("longest_silence_ms", 8000, figures.MS, "longest silence")
    in_force = figures.Figure("session.timeout.ms", 45000, figures.MS, "in force")
    advice = figures.raise_above("session.timeout.ms", basis, 1.5, in_force, "longest silence")
    assert advice.value is None and "would not help" in advice.note
    basis.value = 40000
    in_force.value = 45000
    assert figures.raise_above("session.timeout.ms", basis, 1.0, in_force, "x").value is None
    basis.value = 44000
    in_force.value = 43500
    advised = figures.raise_above("session.timeout.ms", basis, 1.0, in_force, "x")
    assert advised.value > in_force.value and advised.value >= basis.value and advised.formula


def test_a_figure_the_logs_do_not_give_says_so_instead_of_zero():
    unknown = figures.setting(None, "session.timeout.ms")
    assert unknown.value is None and unknown.text() == "not in the logs" and unknown.to_dict()["value"] is None
