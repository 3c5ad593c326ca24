"""The accuracy table: simulated incidents analysed by the tool as a user runs it, scored against their truth.

    python -m rebalance_doctor.judge.accuracy --count 300 --seed 7            # print the table
    python -m rebalance_doctor.judge.accuracy --count 300 --seed 7 --out docs/accuracy.md
    python -m rebalance_doctor.judge.accuracy --count 300 --seed 7 --code /tmp/rd-baseline-154b961b8c55

Each incident is simulated (``sim.scenarios``), written to a temporary directory and scored by
``score`` (the scorer of any incident source): read with ``engines.local.read_events`` and analysed
with ``diagnosis.analyze_events`` (in this process, or, with ``--code DIR``, in a subprocess running
the code tree DIR: an older commit for the "before" column). Scoring follows /work/notes/TRUTH.md:
per-rule precision and recall with counts (a rule with fewer than 20 positive incidents and 20
healthy look-alikes is "untested", never 1.00), the healthy false-alarm rate, how often the first
finding names the culprit, and the agreement of the per-rebalance verdicts.

The small API the pytest gate uses: ``plan(count, seed)`` -> cases, ``evaluate(cases)`` -> ``Scores``.
The simulator is never imported by the diagnosis; this module only runs the tool on its output.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

from ..sim.scenarios import SCENARIOS, ScenarioError, run as simulate
from .score import Case, Scores, analyze_here, analyze_with_code, git_commit, rules_of, score, table


# -- the plan ----------------------------------------------------------------------------------------
def plan(count: int, seed: int, scenarios: list[str] | None = None) -> list[tuple[str, int]]:
    """``count`` (scenario, seed) cases: every scenario in turn (shuffled by ``seed``). The k-th incident of a
    scenario has a seed derived from the plan seed, the scenario's name and k only, so that adding a scenario
    (a new module under sim/scenarios/) leaves every other scenario's incidents as they were."""
    import hashlib
    import random

    names = sorted(scenarios or SCENARIOS)
    for name in names:
        if name not in SCENARIOS:
            raise ScenarioError(f"unknown scenario {name!r}")
    order = names[:]
    random.Random(seed).shuffle(order)

    def case_seed(name: str, k: int) -> int:
        digest = hashlib.sha256(f"{seed}/{name}/{k}".encode()).digest()
        return 1 + int.from_bytes(digest[:8], "big") % (2**31 - 1)

    return [(order[i % len(order)], case_seed(order[i % len(order)], i // len(order))) for i in range(count)]


def run_cases(cases: list[tuple[str, int]], kafka: str | None = None, code: Path | None = None,
              keep: Path | None = None, progress=None) -> list[Case]:
    """Simulate, write, analyse and pair each case with its truth."""
    out: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="rd-accuracy-") as tmp:
        root = keep or Path(tmp)
        written = []
        for i, (name, seed) in enumerate(cases):
            incident = simulate(name, seed, kafka)
            directory = root / f"{i:04d}-{name}-{seed}"
            incident.write(directory)
            written.append((name, seed, incident.truth, directory))
            if code is None:
                out.append(Case(name, seed, incident.truth, analyze_here(directory), str(directory)))
            if progress:
                progress(i + 1, len(cases))
        if code is not None:
            saids = analyze_with_code(code, [d for *_, d in written])
            out = [Case(n, s, t, said, str(d)) for (n, s, t, d), said in zip(written, saids)]
    return out


def evaluate(cases: list[tuple[str, int]], kafka: str | None = None, code: Path | None = None) -> Scores:
    """The gate's entry point: (scenario, seed) cases -> scores."""
    return score(run_cases(cases, kafka=kafka, code=code))


def write_doc(path: Path, scores: Scores, header: dict, history_label: str | None) -> None:
    from .accuracy_doc import render_doc
    previous = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(render_doc(previous, table(scores), header, history_label), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rebalance_doctor.judge.accuracy",
                                     description="Score the diagnosis on simulated incidents (docs/accuracy.md).")
    parser.add_argument("--count", type=int, default=300, help="incidents to simulate (default 300)")
    parser.add_argument("--per-scenario", type=int, metavar="N",
                        help="instead of --count: N incidents of every scenario (20 gives every rule with a "
                             "scenario the 20 positives and 20 look-alikes a tested row needs)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the plan (scenarios and their seeds)")
    parser.add_argument("--scenario", action="append", help="only this scenario (repeatable)")
    parser.add_argument("--kafka", help="render every incident at this Kafka release (2.4-4.2)")
    parser.add_argument("--code", type=Path, help="analyse with the code tree DIR (e.g. a baseline checkout)")
    parser.add_argument("--out", type=Path, help="write the table into this markdown file (docs/accuracy.md)")
    parser.add_argument("--history", metavar="LABEL", help="with --out: also record the table in the history")
    parser.add_argument("--keep", type=Path, help="keep the incidents in this directory")
    parser.add_argument("--json", type=Path, help="write the scores as JSON to this file")
    parser.add_argument("--failures", action="store_true", help="list every wrong incident (for tuning)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, spec in sorted(SCENARIOS.items()):
            kind = "healthy" if spec.healthy else ", ".join(spec.rules)
            print(f"{name:36} {spec.protocol:10} {kind:28} {spec.summary}")
        return 0
    try:
        if args.per_scenario is not None:
            if args.per_scenario < 1:
                raise ScenarioError("--per-scenario must be at least 1")
            args.count = args.per_scenario * len(args.scenario or SCENARIOS)
        if args.count < 1:
            raise ScenarioError("--count must be at least 1")
        if args.code is not None and not (args.code / "rebalance_doctor").is_dir():
            raise ScenarioError(f"--code {args.code}: no rebalance_doctor package there")
        cases = plan(args.count, args.seed, args.scenario)
        if args.kafka:
            from ..sim.scenarios import check_version
            check_version(args.kafka)
        started = time.perf_counter()

        def progress(done, total):
            if sys.stderr.isatty() and (done % 10 == 0 or done == total):
                print(f"\r{done}/{total} incidents", end="" if done < total else "\n", file=sys.stderr)

        results = run_cases(cases, kafka=args.kafka, code=args.code, keep=args.keep, progress=progress)
    except ScenarioError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    scores = score(results)
    seconds = time.perf_counter() - started
    code = args.code or Path(__file__).resolve().parents[2]
    scores.analysed_rules = rules_of(code)
    header = {"count": args.count, "per_scenario": args.per_scenario, "seed": args.seed, "date": dt.date.today().isoformat(),
              "commit": git_commit(code), "code": str(args.code) if args.code else "this tree",
              "seconds": round(seconds), "scenarios": len(set(n for n, _ in cases))}
    print(f"accuracy: {args.count} incidents, plan seed {args.seed}, analysed by {header['code']} "
          f"({header['commit']}), {seconds:.0f} s")
    print(table(scores))
    if args.failures:
        print("\n".join(["", "wrong incidents:"] + scores.failures))
    if args.json:
        args.json.write_text(json.dumps({"header": header, "scores": scores.to_dict()}, indent=2), encoding="utf-8")
    if args.out:
        write_doc(args.out, scores, header, args.history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
