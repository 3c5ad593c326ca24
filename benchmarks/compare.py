"""CPU seconds per GB of `rebalance-doctor events` against a baseline commit, side by side, in one run.

    python benchmarks/compare.py                       # this tree vs 154b961 on /tmp/rd-corpus
    python benchmarks/compare.py --runs 5 --jobs 2     # more pairs, --jobs 2
    python benchmarks/compare.py --command analyze     # `analyze --format json` instead of `events`

The round's baseline is main at 154b961 (../shared/CONVENTIONS.md, "Measuring"). The baseline is
checked out once as a detached git worktree under /tmp and run with the same interpreter and
dependencies as this tree (``python -m rebalance_doctor.cli`` with the tree on PYTHONPATH), so only
the code and the packs differ. Runs alternate baseline and current, pair by pair, so that a slow
stretch of a shared VM falls on both; the ratio is the median of the pairs' ratios of CPU seconds
(user + sys of the process and its reaped children, from wait4). Within 10% means a ratio <= 1.10.
Results go to benchmarks/results/<date>-compare-<command>.json (--no-results to skip).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BASELINE = "154b961"


def checkout(ref: str) -> Path:
    """A detached worktree of ``ref`` under /tmp (made once, reused)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"rd-baseline-{sha[:12]}"
    if not (path / "rebalance_doctor").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(path), sha],
                       check=True, capture_output=True)
    return path


def run_once(tree: Path, command: str, corpus: Path, jobs: int) -> dict:
    """One run of the tree's CLI; CPU seconds of it and its children, wall seconds, events."""
    out = Path(tempfile.gettempdir()) / f"rd-compare-{os.getpid()}.parquet"
    stats = Path(tempfile.gettempdir()) / f"rd-compare-{os.getpid()}.stats.json"
    if command == "events":
        args = ["events", str(corpus), "-o", str(out), "--jobs", str(jobs), "--stats", str(stats), "-q"]
    else:
        args = ["analyze", str(corpus), "--format", "json", "--jobs", str(jobs), "-q"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = datetime.now().timestamp()
    proc = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", *args], cwd=tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = datetime.now().timestamp() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{tree}: exit {code}\n{err.decode(errors='replace')[-2000:]}")
    row = {"cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3), "seconds": round(wall, 3),
           "max_rss_mb": round(usage.ru_maxrss / 1024, 1)}
    if stats.exists():
        s = json.loads(stats.read_text())
        row.update({k: s.get(k) for k in ("events", "lines", "near_misses", "bytes")})
        stats.unlink()
    out.unlink(missing_ok=True)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=Path("/tmp/rd-corpus"))
    ap.add_argument("--baseline", default=BASELINE, help=f"git ref of the baseline (default {BASELINE})")
    ap.add_argument("--runs", type=int, default=3, help="pairs of runs (default 3)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--command", choices=("events", "analyze"), default="events")
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"error: no corpus at {args.corpus}; run benchmarks/make_corpus.py --size 2G --out {args.corpus}",
              file=sys.stderr)
        return 2
    files = [p for p in args.corpus.rglob("*") if p.is_file()]
    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    on_disk = sum(p.stat().st_size for p in files)
    base = checkout(args.baseline)
    pairs = []
    for i in range(args.runs):
        # Alternate which goes first, so neither always runs right after the other warmed the caches.
        order = [("baseline", base), ("current", REPO)] if i % 2 == 0 else [("current", REPO), ("baseline", base)]
        pair = {name: run_once(tree, args.command, args.corpus, args.jobs) for name, tree in order}
        pair["ratio"] = round(pair["current"]["cpu_seconds"] / pair["baseline"]["cpu_seconds"], 3)
        pairs.append(pair)
        print(f"pair {i + 1}: baseline {pair['baseline']['cpu_seconds']:.2f} cpu-s, "
              f"current {pair['current']['cpu_seconds']:.2f} cpu-s, ratio {pair['ratio']:.3f}", file=sys.stderr)
    gb = on_disk / 1e9
    summary = {
        "command": args.command, "jobs": args.jobs, "corpus": str(args.corpus), "gb_on_disk": round(gb, 3),
        "baseline": args.baseline, "current": _describe(REPO),
        "baseline_cpu_s_per_gb": round(statistics.median(p["baseline"]["cpu_seconds"] for p in pairs) / gb, 2),
        "current_cpu_s_per_gb": round(statistics.median(p["current"]["cpu_seconds"] for p in pairs) / gb, 2),
        "ratio_median": statistics.median(p["ratio"] for p in pairs),
        "ratio_min": min(p["ratio"] for p in pairs), "ratio_max": max(p["ratio"] for p in pairs),
        "events": {"baseline": pairs[0]["baseline"].get("events"), "current": pairs[0]["current"].get("events")},
        "pairs": pairs, "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "pairs"}, indent=2))
    verdict = "within 10%" if summary["ratio_median"] <= 1.10 else "MORE THAN 10% SLOWER"
    print(f"current / baseline CPU: {summary['ratio_median']:.3f} (median of {len(pairs)} pairs): {verdict}")
    if not args.no_results:
        name = f"{datetime.now():%Y-%m-%d-%H%M}-compare-{args.command}-jobs{args.jobs}.json"
        (HERE / "results" / name).write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def _describe(repo: Path) -> str:
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
