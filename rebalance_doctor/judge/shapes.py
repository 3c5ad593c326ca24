"""The lines a simulator twin writes beside the lines real Kafka wrote in the lab: template, logger, level.

    python -m rebalance_doctor.judge.shapes fixtures/lab        # every difference, per recorded incident

For each recorded incident whose scenario has a twin (twins.toml), the twin is simulated as judge/twins.py
does it (at the lab's release, with what the lab ran). Every Kafka line the twin writes is one row of the
project's inventory (patterns/kafka/templates.jsonl) at that release: a template, a logger, a level.

* The lint (sim/lint.py) checks that every simulated line is its row's template filled in, at that release.
* A template the recording also holds must be written there under the same logger and level; real Kafka
  writing those words only under another logger or level is a difference.
* A key (lines.toml) the twin writes in one wording while the recording holds only another of the key's
  wordings is a difference too: the release writes the other one.
* A template the recording does not hold is unseen: the lab did not reach that line (no difference).

When they differ, the lab is right and the simulator changes (CONVENTIONS.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .twins import catalog as twin_catalog, simulate_twin

MIN_LITERAL = 8      # a template with no literal this long ("{} in {}ms: {}") says too little to look for


@dataclass(frozen=True)
class Shape:
    key: str
    template: str
    logger: str
    level: str


@dataclass
class Shapes:
    lab: str
    sim: str
    simulated_at: str
    lint: list[str] = field(default_factory=list)
    written: list[Shape] = field(default_factory=list)                   # every Kafka line shape the twin writes
    agree: list[Shape] = field(default_factory=list)
    differ: list[tuple[Shape, str]] = field(default_factory=list)        # and a lab line with its words
    other_wording: list[tuple[Shape, str]] = field(default_factory=list)  # and the lab's line of the key
    unseen: list[Shape] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return (self.lint
                + [f"{s.key}: real Kafka writes {s.template!r} but not as {s.level} {s.logger}: {line[:200]}"
                   for s, line in self.differ]
                + [f"{s.key}: the twin writes {s.template!r}, real Kafka another wording: {line[:200]}"
                   for s, line in self.other_wording])


@lru_cache(maxsize=None)
def _words(template: str) -> tuple[str, re.Pattern] | None:
    """The longest literal of a template's first line (a cheap test) and the line's regex, or None."""
    first = template.split("\n", 1)[0]
    pieces = first.split("{}")
    gate = max(pieces, key=lambda p: len(p.strip()))
    if len(gate.strip()) < MIN_LITERAL:
        return None
    return gate, re.compile(".*?".join(re.escape(p) for p in pieces))


@lru_cache(maxsize=None)
def _logger(logger: str) -> re.Pattern:
    # kafka.coordinator.group.GroupCoordinator is not org.apache.kafka.coordinator.group.GroupCoordinatorShard
    return re.compile(rf"(?<![\w.$]){re.escape(logger)}(?![\w$])")


def _holding(lines: list[str], template: str) -> list[str]:
    words = _words(template)
    if words is None:
        return []
    gate, regex = words
    return [line for line in lines if gate in line and regex.search(line)]


@lru_cache(maxsize=1)
def _kafka_inventory():
    from ..sim.lint import Inventory, load_rows
    return Inventory(load_rows())


def recorded_lines(directory: Path) -> list[str]:
    lines: list[str] = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix not in (".toml",):
            lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines


def compare(directory: Path, sim_name: str, seed: int = 1) -> Shapes:
    from ..sim.catalog import catalog as line_catalog, resolve
    from ..sim.lint import lint
    _, incident, at = simulate_twin(directory, sim_name, seed)
    out = Shapes(directory.name, sim_name, at, lint=lint(incident.world, _kafka_inventory()))
    written: dict[Shape, None] = {}
    for log in incident.world.logs:
        for record in log.records:
            if record.key is not None:
                row = resolve(record.key, record.version or log.version, log.coordinator).row
                written[Shape(record.key, row.template, row.logger, row.level)] = None
    out.written = list(written)
    lines = recorded_lines(directory)
    seen_keys = set()
    for shape in written:
        holding = _holding(lines, shape.template)
        if not holding:
            continue
        seen_keys.add(shape.key)
        level = re.compile(rf"\b{shape.level}\b")
        if any(_logger(shape.logger).search(line) and level.search(line) for line in holding):
            out.agree.append(shape)
        else:
            out.differ.append((shape, holding[0]))
    for shape in written:
        if shape.key in seen_keys or _words(shape.template) is None:
            continue
        others = [c.template for c in line_catalog()[shape.key][1] if c.template != shape.template]
        found = next((line for t in others for line in _holding(lines, t)), None)
        if found is not None:
            out.other_wording.append((shape, found))
        else:
            out.unseen.append(shape)
    return out


def compare_corpus(root: Path) -> list[Shapes]:
    twins = twin_catalog()["twin"]
    return [compare(d, twins[d.name.split("@")[0]]) for d in sorted(p.parent for p in root.glob("*/expected.toml"))
            if d.name.split("@")[0] in twins]


def report(results: list[Shapes]) -> str:
    lines = ["| recorded incident | simulator twin (release) | templates both write, same logger and level | "
             "differ | unseen in the lab | lint |", "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.lab} | {r.sim} ({r.simulated_at}) | {len(r.agree)} | "
                     f"{len(r.differ) + len(r.other_wording)} | {len(r.unseen)} | {len(r.lint)} |")
    problems = [f"- {r.lab} / {r.sim}: {p}" for r in results for p in r.problems]
    return "\n".join(lines + [""] + (problems or ["No difference."])) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rebalance_doctor.judge.shapes",
                                     description="Compare the lines each simulator twin writes with its lab recording.")
    parser.add_argument("root", type=Path, nargs="?", default=Path("fixtures/lab"))
    args = parser.parse_args(argv)
    results = compare_corpus(args.root)
    if not results:
        print(f"error: {args.root}: no recorded incident with a simulator twin", file=sys.stderr)
        return 2
    print(report(results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
