"""Issue 33's goals, every row measured in one run (python benchmarks/goals.py).

    .venv/bin/python benchmarks/goals.py                       # corpora of 100M, 343M, 1G in /tmp/rd-goals
    .venv/bin/python benchmarks/goals.py --runs 3              # each row the best of 3 rounds
    .venv/bin/python benchmarks/goals.py --tree /tmp/rd-main   # another checkout, measured the same way
    .venv/bin/python benchmarks/goals.py --sizes 20M,50M --no-spark --quiet-wait 0   # a quick check

The corpora are make_corpus.py's (its sizes: M and G are MiB and GiB, so 1G is the issue's 1.06 GB
corpus), one directory per size under --dir, made when missing and reused after; each is read once
(``cat``) before its lines run, so every line reads from the page cache. Per round, one after the other:

  grep          ``grep -r -c -F`` with the ten GREP_LITERALS, at every size
  events        ``events CORPUS -o TMP.parquet --jobs 1`` at every size, ``--jobs 2`` at every size but
                the smallest (the issue's speed-up is at 343 MB and 1 GB)
  analyze       ``analyze CORPUS --format json -q --fail-on never`` with --jobs 1 and 2 on the largest
                size, the JSON to /dev/null
  start-up      ``--help`` and ``events`` on an empty file, 5 times each

Then, unless --no-spark, the events pipeline on local[2] against ``spark.read.text().count()`` in one
warm session on the largest corpus (spark_bench.child in a process of its own).

The CLI runs as ``python -P -m rebalance_doctor.cli`` with this interpreter and the tree (--tree,
default this repository) first on PYTHONPATH, as compare.py runs a baseline: only the code and packs
differ between two trees. Each line is measured by run.measure: wall time, CPU seconds (user + sys of the process and
its reaped children, from wait4), the process tree's peak RSS (sampled from /proc) and the largest
single process (ru_maxrss); before it, a wait of up to --quiet-wait seconds for other processes to
leave the CPUs. With --runs N every row keeps its lowest wall and lowest CPU time, and its highest
memory peak. MB per CPU-second counts the bytes each command reads: decompressed for the tool, as
they are on disk for grep (it does not decompress the .gz files).

Prints the goals as a Markdown table (what, measured, goal, met?) and the lines measured, and writes
everything to benchmarks/results/<date>-goals.json (<date>-goals-<commit>.json for another --tree).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import compare  # noqa: E402
import make_corpus  # noqa: E402
import run  # noqa: E402
import spark_bench  # noqa: E402

DEFAULT_SIZES = "100M,343M,1G"
DEFAULT_DIR = Path("/tmp/rd-goals")
STARTUP_RUNS = 5
# spark_bench's default: the JVM's JIT burns CPU in a session's first events runs (its docstring).
SPARK_WARM_RUNS = 4
# Ten of the packs' scan literals (run.scan_literals()), the stems of Kafka's rebalance wording. Written
# out, not read from the packs, so that grep's side is the same for every tree and every pack change.
GREP_LITERALS = ("ebalanc", "evok", "ssign", "Join", "SyncGroup", "Heartbeat", "Generation",
                 "Coordinator", "Leav", "poll interval")


@dataclass(frozen=True)
class Goal:
    """A figure's goal: under ``below``, or at least ``at_least``."""

    unit: str
    below: float | None = None
    at_least: float | None = None

    def met(self, value: float) -> bool:
        return value < self.below if self.below is not None else value >= self.at_least

    def __str__(self) -> str:
        return f"< {self.below}{self.unit}" if self.below is not None else f"≥ {self.at_least}{self.unit}"


# Issue 33's table, "goal" column.
ANALYZE_JOBS2_WALL = Goal(" s", below=2.0)
ANALYZE_JOBS1_WALL = Goal(" s", below=3.0)
EVENTS_VS_GREP_PER_CPU_S = Goal("x", at_least=0.6)
EVENTS_JOBS2_SPEEDUP = Goal("x", at_least=1.8)
SPARK_VS_TEXT_FLOOR = Goal("x", at_least=0.5)
HELP_CPU_S = Goal(" CPU-s", below=0.12)
EMPTY_EVENTS_CPU_S = Goal(" CPU-s", below=0.2)
PEAK_RSS_MB = Goal(" MB", below=200)


@dataclass(frozen=True)
class Corpus:
    size: str       # make_corpus.py's --size, also the directory's name
    path: Path
    files: list[Path]
    bytes: int      # decompressed, what the tool reads
    on_disk: int    # what grep and cat read

    @property
    def label(self) -> str:
        return f"{self.size} ({self.bytes / 1e6:,.0f} MB)"


def ensure_corpus(root: Path, size: str) -> Corpus:
    """The corpus of this size under ``root``, made with make_corpus.py unless already there."""
    path = root / size
    manifest_path = Path(f"{path}.manifest.json")  # written last: without it the corpus is unfinished
    if not manifest_path.exists():
        if path.exists():
            shutil.rmtree(path)
        print(f"making a {size} corpus in {path} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(HERE / "make_corpus.py"), "--size", size, "--out", str(path)],
                       check=True)
    manifest = json.loads(manifest_path.read_text())
    return Corpus(size, path, run.corpus_files(path), manifest["bytes"], manifest["on_disk"])


def warm_page_cache(corpus: Corpus) -> None:
    subprocess.run(["cat", *map(str, corpus.files)], stdout=subprocess.DEVNULL, check=True)


class Tree:
    """A checkout whose CLI is measured: this interpreter, the tree first on PYTHONPATH."""

    def __init__(self, path: Path):
        self.path = path
        self.env = {"PYTHONPATH": str(path)}
        self.commit = compare._describe(path)

    def cli(self, *args: str) -> list[str]:
        # -P: no current directory ahead of PYTHONPATH (run from this repository, -m would import its code)
        return [sys.executable, "-P", "-m", "rebalance_doctor.cli", *args]


class Lines:
    """The lines measured, by name, each keeping its best wall and CPU time and highest memory."""

    def __init__(self, quiet_threshold: float):
        self.best: dict[str, dict] = {}
        self.quiet_threshold = quiet_threshold

    def measure(self, name: str, cmd: list[str], nbytes: int | None = None, env: dict | None = None,
                ok_exits: tuple[int, ...] = (0, 1), stdout=subprocess.DEVNULL) -> dict:
        """Run one line once; its best so far, this run included."""
        print(f"  {name} ...", file=sys.stderr, flush=True)
        row = run.measure(name, cmd, nbytes, stdout=stdout, env=env)
        row.pop("_stdout", None)
        if row["exit"] not in ok_exits:
            raise SystemExit(f"{name}: exit {row['exit']}\n{row.get('stderr', '')}")
        row.pop("stderr", None)
        best = self.best.get(name)
        if best is None:
            best = self.best[name] = {**row, "runs_seconds": [row["seconds"]],
                                      "runs_cpu_seconds": [row["cpu_seconds"]]}
            return best
        best["runs_seconds"].append(row["seconds"])
        best["runs_cpu_seconds"].append(row["cpu_seconds"])
        best["seconds"] = min(best["runs_seconds"])
        best["cpu_seconds"] = min(best["runs_cpu_seconds"])
        for key in ("max_process_rss_mb", "tree_peak_rss_mb", "tree_peak_pss_mb", "others_busy_before"):
            best[key] = max(best[key], row[key])
        if nbytes:
            best["mb_per_s"] = round(nbytes / best["seconds"] / 1e6, 1)
            best["mb_per_cpu_s"] = round(nbytes / max(0.01, best["cpu_seconds"]) / 1e6, 1)
        return best

    def busy(self) -> list[str]:
        return [name for name, row in self.best.items() if row["others_busy_before"] > self.quiet_threshold]


def measure_round(tree: Tree, corpora: list[Corpus], scratch: Path, lines: Lines) -> None:
    """Every line of the table once (start-up: STARTUP_RUNS times)."""
    grep = ["grep", "-r", "-c", "-F", *(arg for literal in GREP_LITERALS for arg in ("-e", literal))]
    parquet, stats, grep_out = scratch / "events.parquet", scratch / "events.stats.json", scratch / "grep.out"
    largest = corpora[-1]
    for corpus in corpora:
        print(f"{corpus.label}:", file=sys.stderr, flush=True)
        warm_page_cache(corpus)
        # Into a file: GNU grep stops at the first match when its output is /dev/null.
        with open(grep_out, "wb") as counts:
            best = lines.measure(f"grep {corpus.size}", [*grep, str(corpus.path)], corpus.on_disk, stdout=counts)
        best["matching_lines"] = sum(int(line.rsplit(b":", 1)[1]) for line in grep_out.read_bytes().splitlines())
        # --jobs 2 at every size but the smallest: the speed-up is at 343 MB and 1 GB.
        for jobs in (1,) if corpus is corpora[0] and len(corpora) > 1 else (1, 2):
            best = lines.measure(f"events --jobs {jobs} {corpus.size}",
                                 tree.cli("events", str(corpus.path), "-o", str(parquet), "--jobs", str(jobs),
                                          "--stats", str(stats), "-q"), corpus.bytes, env=tree.env)
            best["events"] = json.loads(stats.read_text()).get("events") if stats.exists() else None
            parquet.unlink(missing_ok=True)
            stats.unlink(missing_ok=True)
        if corpus is largest:
            for jobs in (1, 2):
                lines.measure(f"analyze --jobs {jobs} {corpus.size}",
                              tree.cli("analyze", str(corpus.path), "--format", "json", "-q", "--fail-on", "never",
                                       "--jobs", str(jobs)), corpus.bytes, env=tree.env)
    empty = scratch / "empty.log"
    empty.touch()
    print("start-up:", file=sys.stderr, flush=True)
    for _ in range(STARTUP_RUNS):
        lines.measure("--help", tree.cli("--help"), env=tree.env)
        # Exit 2: "nothing could be read" is the answer for an empty file. The default output (JSON lines on
        # stdout), as tests/test_startup.py runs it: `-o FILE.parquet` also imports pyarrow to write the empty
        # table's schema (about 0.1 CPU-s more).
        lines.measure("events on an empty file", tree.cli("events", str(empty), "-q"),
                      env=tree.env, ok_exits=(0, 1, 2))


def spark_child(tree: Path, corpus: str, repeat: int, warm_runs: int) -> dict:
    """spark_bench.child on local[2], the tree's engine imported (run in a process of its own)."""
    sys.path.insert(0, str(tree))   # ahead of this repository, which spark_bench put first
    spark_bench.REPO = tree         # its warm-up job reads the tree's fixtures/layouts
    try:
        return spark_bench.child("local[2]", corpus, repeat, warm_runs)
    finally:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is not None:  # child() stops its session unless it failed
            session.stop()


def measure_spark(tree: Tree, corpus: Corpus, repeat: int, warm_runs: int) -> dict:
    print(f"Spark local[2] on {corpus.label} ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, __file__, "--spark-child", str(corpus.path), "--tree", str(tree.path),
           "--runs", str(repeat), "--spark-warm-runs", str(warm_runs)]
    # In the tree: Spark's Python workers put their current directory first on their path.
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **tree.env}, cwd=tree.path)
    if done.returncode != 0:
        raise SystemExit(f"Spark: exit {done.returncode}\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    measured["corpus"] = corpus.size
    measured["events_over_text"] = round(measured["text_s"] / measured["events_s"], 3)
    return measured


def goal_rows(corpora: list[Corpus], lines: dict[str, dict], spark: dict | None) -> list[dict]:
    """Issue 33's table from the lines measured: what, measured, goal, met."""
    rows = []

    def add(what: str, value: float, measured: str, goal: Goal) -> None:
        rows.append({"what": what, "value": value, "measured": measured, "goal": str(goal), "met": goal.met(value)})

    largest = corpora[-1]
    for jobs, goal in ((2, ANALYZE_JOBS2_WALL), (1, ANALYZE_JOBS1_WALL)):
        line = lines[f"analyze --jobs {jobs} {largest.size}"]
        add(f"`analyze --jobs {jobs}` (wall), {largest.label}", line["seconds"],
            f"{line['seconds']:.2f} s ({line['cpu_seconds']:.2f} CPU-s)", goal)
    for corpus in corpora:
        tool, grep = lines[f"events --jobs 1 {corpus.size}"], lines[f"grep {corpus.size}"]
        ratio = tool["mb_per_cpu_s"] / grep["mb_per_cpu_s"]
        add(f"`events --jobs 1` against `grep -r -c -F` ({len(GREP_LITERALS)} literals) per CPU-second, "
            f"{corpus.label}", round(ratio, 3),
            f"{ratio:.2f}x ({tool['mb_per_cpu_s']:.0f} vs {grep['mb_per_cpu_s']:.0f} MB/cpu-s)",
            EVENTS_VS_GREP_PER_CPU_S)
    for corpus in corpora:
        one, two = lines[f"events --jobs 1 {corpus.size}"], lines.get(f"events --jobs 2 {corpus.size}")
        if two is not None:
            speedup = one["seconds"] / two["seconds"]
            add(f"`events --jobs 2` speed-up over `--jobs 1` (wall), {corpus.label}", round(speedup, 3),
                f"{speedup:.2f}x ({two['seconds']:.2f} vs {one['seconds']:.2f} s)", EVENTS_JOBS2_SPEEDUP)
    if spark is not None:
        add(f"Spark events pipeline on `local[2]` against `spark.read.text().count()` (warm session), "
            f"{largest.label}", spark["events_over_text"],
            f"{spark['events_over_text']:.2f}x ({spark['events_s']:.1f} vs {spark['text_s']:.1f} s)",
            SPARK_VS_TEXT_FLOOR)
    for name, what, goal in (("--help", "`--help`", HELP_CPU_S),
                             ("events on an empty file", "`events` on an empty file", EMPTY_EVENTS_CPU_S)):
        line = lines[name]
        add(f"start-up: {what} (best of {len(line['runs_cpu_seconds'])})", line["cpu_seconds"],
            f"{line['cpu_seconds']:.3f} CPU-s ({min(line['runs_seconds']):.2f} s wall)", goal)
    for jobs in (1, 2):
        tool_lines = [line for name, line in lines.items()
                      if name.startswith(("events --jobs", "analyze --jobs")) and f"--jobs {jobs} " in name]
        # The tree's sum is sampled every 50 ms: a short peak of one process can fall between samples.
        def peak_mb(line: dict) -> float:
            return max(line["tree_peak_rss_mb"], line["max_process_rss_mb"])

        peak = max(tool_lines, key=peak_mb)
        add(f"peak RSS, any size, {jobs} job{'s' * (jobs > 1)} (process tree)", peak_mb(peak),
            f"{peak_mb(peak):.0f} MB ({peak['name']}; largest process {peak['max_process_rss_mb']:.0f} MB)",
            PEAK_RSS_MB)
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| what | measured | goal | met? |", "|---|---|---|---|"]
    out += [f"| {r['what']} | {r['measured']} | {r['goal']} | {'yes' if r['met'] else '**no**'} |" for r in rows]
    return "\n".join(out)


def lines_table(lines: dict[str, dict]) -> str:
    out = [f"{'line':32} {'wall s':>7} {'CPU s':>7} {'MB/cpu-s':>8} {'tree RSS':>8} {'max proc':>8} {'others':>6}"]
    for name, r in lines.items():
        per_cpu = f"{r['mb_per_cpu_s']:8.0f}" if r.get("mb_per_cpu_s") else f"{'':8}"
        out.append(f"{name:32} {r['seconds']:7.2f} {r['cpu_seconds']:7.3f} {per_cpu} {r['tree_peak_rss_mb']:8.0f} "
                   f"{r['max_process_rss_mb']:8.0f} {r['others_busy_before']:6.0%}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"where the corpora live (default {DEFAULT_DIR})")
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help=f"make_corpus.py sizes, comma-separated (default "
                    f"{DEFAULT_SIZES}); analyze and Spark run on the largest")
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout to measure (default this repository)")
    ap.add_argument("--runs", type=int, default=1, help="rounds; each row keeps its best wall and CPU time")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark row")
    ap.add_argument("--spark-warm-runs", type=int, default=SPARK_WARM_RUNS,
                    help=f"untimed events runs in the Spark session first (default {SPARK_WARM_RUNS})")
    ap.add_argument("--quiet-wait", type=float, default=180, metavar="SECONDS",
                    help="before each line, wait up to this long for other processes to leave the CPUs "
                         "(under 15%% busy); default 180")
    ap.add_argument("--results", type=Path, help="JSON file to write (default benchmarks/results/<date>-goals.json)")
    ap.add_argument("--no-results", action="store_true", help="print only, write no JSON")
    ap.add_argument("--spark-child", metavar="CORPUS", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    tree_path = args.tree.resolve()
    if args.spark_child:
        print(json.dumps(spark_child(tree_path, args.spark_child, args.runs, args.spark_warm_runs)))
        return 0
    if not (tree_path / "rebalance_doctor").is_dir():
        ap.error(f"{tree_path} is not a rebalance-doctor checkout")
    if not args.no_spark and importlib.util.find_spec("pyspark") is None:
        ap.error("pyspark is not installed here: install it (pip install -e '.[spark]') or give --no-spark")

    tree = Tree(tree_path)
    run.QUIET["wait"] = args.quiet_wait
    sizes = sorted(args.sizes.split(","), key=make_corpus.parse_size)
    args.dir.mkdir(parents=True, exist_ok=True)
    corpora = [ensure_corpus(args.dir, size) for size in sizes]
    started = datetime.now(timezone.utc)
    print(f"tree {tree.path} ({tree.commit}); load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    cpu_scaling = spark_bench.cpu_scaling()
    lines = Lines(run.QUIET["threshold"])
    scratch = args.dir / f"scratch-{os.getpid()}"   # beside the corpora, never inside one
    scratch.mkdir()
    try:
        for round_ in range(args.runs):
            print(f"round {round_ + 1} of {args.runs}", file=sys.stderr, flush=True)
            measure_round(tree, corpora, scratch, lines)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    spark = None
    if not args.no_spark:
        warm_page_cache(corpora[-1])
        spark = measure_spark(tree, corpora[-1], args.runs, args.spark_warm_runs)

    rows = goal_rows(corpora, lines.best, spark)
    notes = [f"two Python processes ran {cpu_scaling:.2f}x one on this machine before the run (the ceiling of "
             "any --jobs 2 speed-up)",
             "MB/cpu-s: decompressed bytes for the tool, on-disk bytes for grep (it does not decompress the .gz files)"]
    for corpus in corpora:
        counts = {lines.best[name]["events"] for name in (f"events --jobs 1 {corpus.size}",
                                                          f"events --jobs 2 {corpus.size}") if name in lines.best}
        if len(counts) > 1:
            notes.append(f"WARNING: --jobs 1 and --jobs 2 found different numbers of events in {corpus.size}: {counts}")
    busy = lines.busy()
    if busy:
        notes.append(f"other processes kept over {run.QUIET['threshold']:.0%} of the CPUs busy before: "
                     f"{', '.join(busy)}; those figures are low, re-run on a quiet machine")

    print(f"\nIssue 33's goals: {tree.path} ({tree.commit}), {started:%Y-%m-%d %H:%M} UTC, "
          f"{os.cpu_count()} CPUs, best of {args.runs} round{'s' * (args.runs > 1)}\n")
    print(markdown(rows))
    print()
    print(lines_table(lines.best))
    if spark is not None:
        print(f"Spark local[2], {spark['corpus']}: start-up {spark['startup_s']:.1f} s, text floor "
              f"{spark['text_s']:.2f} s, events pipeline {spark['events_s']:.2f} s ({spark['events']:,} events)")
    for note in notes:
        print(f"note: {note}")

    if not args.no_results:
        suffix = "" if tree.path == REPO else f"-{tree.commit}"
        path = args.results or HERE / "results" / f"{started:%Y-%m-%d}-goals{suffix}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        result = {"date": started.isoformat(timespec="seconds"), "machine": run.machine(),
                  "tree": str(tree.path), "commit": tree.commit, "runs": args.runs,
                  "locale": os.environ.get("LC_ALL") or os.environ.get("LANG"), "cpu_scaling": round(cpu_scaling, 3),
                  "corpora": [{"size": c.size, "path": str(c.path), "files": len(c.files), "bytes": c.bytes,
                               "on_disk": c.on_disk} for c in corpora],
                  "grep_literals": list(GREP_LITERALS), "goals": rows, "lines": lines.best, "spark": spark,
                  "notes": notes}
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
