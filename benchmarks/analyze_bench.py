"""Measure `rebalance-doctor analyze`: reading and analysis timed apart, and the analysis's growth with events.

    python benchmarks/analyze_bench.py /tmp/rd-corpus --gb 1          # the first 1 GB of a corpus
    python benchmarks/analyze_bench.py /tmp/rd-corpus --gb 1 --cli    # also the CLI's wall time, --jobs 2
    python benchmarks/analyze_bench.py --scaling                      # analysis time for 2x, 4x, 8x events

Reading is `engines.local.read_events` (the events table, --jobs as given); the analysis is what
`analyze` does after reading: the timelines (`timeline.build_timelines`), the classification
(`classify.classify`) and the rules with their causal chains (`rules.engine.run`), each timed. The
figure issue 16 sets: `analyze` of 1 GB under 5 s on 2 cores, and the analysis linear in events
and cheaper than the reading. `--scaling` repeats one group's events (a long incident: every copy
a later hour, its generations renumbered) 1, 2, 4 and 8 times and reports the analysis time per
thousand events at each size: a linear analysis keeps it flat.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from rebalance_doctor.core.options import ReadOptions  # noqa: E402
from rebalance_doctor.engines.local import read_events  # noqa: E402
from rebalance_doctor.rules import engine  # noqa: E402
from rebalance_doctor.rules.config import AnalysisConfig  # noqa: E402
from rebalance_doctor.timeline.builder import build_timelines  # noqa: E402

try:
    from rebalance_doctor.classify import classify  # noqa: E402
except ImportError:        # an older tree (the round's baseline) has no classification stage
    classify = None


def first_gb(corpus: Path, gb: float) -> list[str]:
    """Files of the corpus, smallest first, until `gb` GB on disk (a reproducible 1 GB slice)."""
    files = sorted((p for p in corpus.rglob("*") if p.is_file()), key=lambda p: (p.stat().st_size, str(p)))
    chosen, total = [], 0
    for path in files:
        if total >= gb * 1e9:
            break
        chosen.append(str(path))
        total += path.stat().st_size
    return chosen


def analyse(events: list[dict]) -> dict:
    """The analysis after reading, stage by stage (wall seconds), and its CPU seconds (robust to other
    processes loading the machine)."""
    config = AnalysisConfig()
    cpu = time.process_time()
    started = time.perf_counter()
    timelines = build_timelines(events)
    built = time.perf_counter()
    for timeline in timelines:
        if classify is not None:
            classify(timeline)
    classified = time.perf_counter()
    findings = 0
    for timeline in timelines:
        heads, _ = engine.run(timeline, config)
        findings += len(heads)
    done = time.perf_counter()
    return {"groups": len(timelines), "rebalances": sum(len(t.rebalances) for t in timelines),
            "findings": findings, "timeline_s": round(built - started, 3),
            "classify_s": round(classified - built, 3), "rules_s": round(done - classified, 3),
            "analysis_s": round(done - started, 3), "analysis_cpu_s": round(time.process_time() - cpu, 3)}


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the --jobs workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_corpus(paths: list[str], jobs: int, cli: bool) -> dict:
    size = sum(os.path.getsize(p) for p in paths)
    started = time.perf_counter()
    cpu = _cpu()
    events, _ = read_events(paths, ReadOptions(jobs=jobs))
    read_s = time.perf_counter() - started
    out = {"files": len(paths), "bytes": size, "events": len(events), "jobs": jobs, "read_s": round(read_s, 3),
           "read_cpu_s": round(_cpu() - cpu, 3)}
    out.update(analyse(events))
    if cli:
        command = [sys.executable, "-m", "rebalance_doctor.cli", "analyze", *paths, "--jobs", str(jobs),
                   "--format", "json", "-q", "--fail-on", "never"]
        started = time.perf_counter()
        run = subprocess.run(command, capture_output=True, cwd=str(REPO), timeout=3600)
        out["cli_wall_s"] = round(time.perf_counter() - started, 3)
        out["cli_exit"] = run.returncode
    return out


def long_incident(copies: int, story: str) -> list[dict]:
    """One group's events repeated `copies` times, each copy an hour later with its generations moved
    past the previous copy's: a long incident whose size grows with `copies`."""
    import tempfile

    from tests import test_diagnosis  # the stories are the tests' own, in Kafka's wording
    from tests.helpers import events_of

    with tempfile.TemporaryDirectory() as tmp:
        events, _ = events_of(getattr(test_diagnosis, story)().save(Path(tmp)))
    span = max(e["generation"] or 0 for e in events) + 1
    out = []
    for copy in range(copies):
        for e in events:
            moved = dict(e)
            if moved["ts"] is not None:
                moved["ts"] = e["ts"] + timedelta(hours=copy)
            if moved["generation"] is not None:
                moved["generation"] = e["generation"] + copy * span
            out.append(moved)
    return out


# A poll-timeout storm (leaves, returns, lost partitions) and a Streams group whose SyncGroups keep
# failing while its leader changes (failed attempts: the quadratic scan of the round's baseline).
STORIES = ("poll_timeouts", "streams_leader_churn_failing_syncs")


def scaling(sizes=(50, 100, 200, 400)) -> list[dict]:
    rows = []
    for story in STORIES:
        for copies in sizes:
            events = long_incident(copies, story)
            result = analyse(events)
            rows.append({"story": story, "copies": copies, "events": len(events),
                         "analysis_s": result["analysis_s"], "analysis_cpu_s": result["analysis_cpu_s"],
                         "cpu_ms_per_1k_events": round(result["analysis_cpu_s"] * 1e6 / len(events), 2),
                         "rebalances": result["rebalances"]})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path)
    parser.add_argument("--gb", type=float, default=1.0, help="read the first GB of the corpus (default 1)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cli", action="store_true", help="also time `rebalance-doctor analyze` as a user runs it")
    parser.add_argument("--scaling", action="store_true", help="analysis time as the events grow")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    args = parser.parse_args(argv)
    figures = {}
    if args.corpus:
        figures["corpus"] = run_corpus(first_gb(args.corpus, args.gb), args.jobs, args.cli)
        c = figures["corpus"]
        print(f"{c['bytes'] / 1e9:.2f} GB, {c['files']} files, {c['events']} events, jobs {c['jobs']}: "
              f"read {c['read_s']} s ({c['read_cpu_s']} s CPU), analysis {c['analysis_s']} s ({c['analysis_cpu_s']} s "
              f"CPU; timelines {c['timeline_s']}, classification {c['classify_s']}, rules {c['rules_s']}); "
              f"{c['groups']} groups, {c['rebalances']} rebalances, "
              f"{c['findings']} findings" + (f"; analyze CLI {c['cli_wall_s']} s wall" if args.cli else ""))
    if args.scaling:
        figures["scaling"] = scaling()
        for row in figures["scaling"]:
            print(f"{row['story']:36} {row['events']:>8} events ({row['rebalances']} rebalances): analysis {row['analysis_s']} s "
              f"({row['analysis_cpu_s']} s CPU), {row['cpu_ms_per_1k_events']} CPU ms per 1000 events")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
