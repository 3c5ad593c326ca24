"""Measure `rebalance-doctor events` against the floors on one corpus (python benchmarks/run.py).

On the same corpus, in the same run, one after the other (page cache warmed first; the three floors
are the fastest of three runs, the tool lines run once, or --tool-runs N times alternating
jobs1 and jobs2, keeping each one's fastest run and the highest memory peak of all):

  cat            every file to /dev/null (bytes on disk: .gz files are not decompressed)
  python-read    a plain Python loop reading every source in 16 MiB chunks, decompressing .gz
                 through the tool's own Source.open(): the floor for any Python tool
  rg             rg -j1 -c -F -z with the packs' scan literals (skipped when rg is absent)
  jobs1, jobs2   rebalance-doctor events CORPUS -o OUT.parquet --jobs 1 / --jobs 2
  jobs1-find     --jobs 1 with REBALANCE_DOCTOR_SCAN=find (when ahocorasick_rs is installed): the
                 figure without the optional engine

Before each line it waits (--quiet-wait, up to 180 s) for other processes to leave the CPUs and
records how busy they were: on a shared machine the figures are only as good as that column.

For each: wall time, MB/s (10^6 bytes per second of the bytes that command actually read) and
memory: the largest single process (ru_maxrss from wait4, which covers reaped descendants such
as the fork pool's workers) and the process tree's peak, sampled from /proc every 50 ms (sum of
RSS, and sum of PSS which counts pages shared after fork once).

Then the ratios that issue 2 targets: jobs1 / python-read >= 0.15, jobs2 / jobs1 >= 1.7, and
peak memory < 300 MB. Results go to benchmarks/results/<date>-<corpus size>.json.

--quick uses (and creates when missing) a 200 MB corpus for iteration.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

TARGET_JOBS1_VS_READ = 0.15
TARGET_JOBS2_VS_JOBS1 = 1.7
TARGET_PEAK_MB = 300
CHUNK = 16 << 20

READ_LOOP = f"""
import sys
from rebalance_doctor.core.sources import discover
total = 0
for source in discover(sys.argv[1:]).sources:
    with source.open() as stream:
        while True:
            data = stream.read({CHUNK})
            if not data:
                break
            total += len(data)
print(total)
"""


def installed_tool() -> str:
    """The console script installed beside this interpreter (what a venv or pipx user runs).

    A version manager's shim found first on PATH (pyenv's is a bash script that runs
    ``pyenv exec``) would add 0.05-0.1 s to every run, serial time that is not the tool's.
    """
    beside = Path(sys.executable).parent / "rebalance-doctor"
    return str(beside) if beside.exists() else (shutil.which("rebalance-doctor") or "rebalance-doctor")


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def scan_engine() -> str:
    """The scan engine the tool picks by itself here."""
    return "aho-corasick" if importlib.util.find_spec("ahocorasick_rs") is not None else "find"


def scan_literals() -> list[str]:
    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.core.reader import toolkit

    return list(toolkit(ReadOptions()).matcher.scan_keys)


class TreeSampler(threading.Thread):
    """Peak RSS and PSS summed over a process and all its descendants, sampled from /proc."""

    def __init__(self, pid: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0
        self.peak_procs = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            pids = self._tree()
            rss = pss = 0
            for pid in pids:
                rss += _kb(f"/proc/{pid}/status", "VmRSS:")
                pss += _kb(f"/proc/{pid}/smaps_rollup", "Pss:")
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_procs = max(self.peak_procs, len(pids))
            self.done.wait(self.interval)

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    stat = handle.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
        tree, stack = [], [self.pid]
        while stack:
            pid = stack.pop()
            tree.append(pid)
            stack.extend(children.get(pid, []))
        return tree


def _kb(path: str, key: str) -> int:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def busy_share(seconds: float = 1.0) -> float:
    """Share of all CPUs busy over the next `seconds` (from /proc/stat): what others are running."""
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields), idle
    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


QUIET = {"wait": 0.0, "threshold": 0.15}


def wait_for_quiet() -> float:
    """Wait (up to QUIET['wait'] seconds) until other processes use under the threshold of the CPUs."""
    deadline = time.monotonic() + QUIET["wait"]
    busy = busy_share()
    while busy > QUIET["threshold"] and time.monotonic() < deadline:
        time.sleep(2)
        busy = busy_share()
    return busy


def measure(name: str, cmd: list[str], nbytes: int | None, stdout=subprocess.DEVNULL,
            env: dict | None = None) -> dict:
    busy_before = wait_for_quiet()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE,
                            env=None if env is None else {**os.environ, **env})
    sampler = TreeSampler(proc.pid)
    sampler.start()
    err = b""
    # wait4 reports this child's rusage (max RSS over it and its reaped descendants).
    assert proc.stderr is not None
    err_reader = threading.Thread(target=lambda: setattr(proc, "_err", proc.stderr.read()), daemon=True)
    err_reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    sampler.done.set()
    sampler.join()
    err_reader.join()
    err = getattr(proc, "_err", b"")
    out = proc.stdout.read() if proc.stdout else b""
    row = {"name": name, "cmd": " ".join(cmd if len(cmd) < 12 else cmd[:6] + ["..."]), "exit": proc.returncode,
           "seconds": round(seconds, 3), "bytes": nbytes,
           "mb_per_s": round(nbytes / seconds / 1e6, 1) if nbytes else None,
           "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
           "mb_per_cpu_s": round(nbytes / max(0.01, usage.ru_utime + usage.ru_stime) / 1e6, 1) if nbytes else None,
           "max_process_rss_mb": round(usage.ru_maxrss / 1024, 1),
           "tree_peak_rss_mb": round(sampler.peak_rss / 1024, 1),
           "tree_peak_pss_mb": round(sampler.peak_pss / 1024, 1),
           "tree_peak_processes": sampler.peak_procs,
           "others_busy_before": round(busy_before, 2),
           "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
    if proc.returncode not in (0, 1):
        row["stderr"] = err.decode(errors="replace")[-2000:]
    row["_stdout"] = out
    return row


def best_of(times: int, *args, **kwargs) -> dict:
    """The fastest of a few runs: the floors take seconds, and one slow run says nothing."""
    runs = [measure(*args, **kwargs)]
    wait, QUIET["wait"] = QUIET["wait"], 0.0  # waited once already
    try:
        runs += [measure(*args, **kwargs) for _ in range(times - 1)]
    finally:
        QUIET["wait"] = wait
    return min(runs, key=lambda r: r["seconds"])


def commit() -> str:
    """The repository's commit, with '+dirty' when the working tree differs (packs change figures)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine() -> dict:
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = _kb("/proc/meminfo", "MemTotal:")
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_gb": round(mem / 1024 / 1024, 1),
            "python": platform.python_version(), "platform": platform.platform()}


def ensure_corpus(path: Path, size: str) -> None:
    if path.exists() and any(path.iterdir()):
        return
    print(f"generating a {size} corpus in {path} ...", file=sys.stderr)
    subprocess.run([sys.executable, str(HERE / "make_corpus.py"), "--size", size, "--out", str(path)], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, help="corpus directory (default /tmp/rd-corpus, "
                    "or /tmp/rd-corpus-quick with --quick)")
    ap.add_argument("--quick", action="store_true", help="a 200 MB corpus, for iteration")
    ap.add_argument("--generate", metavar="SIZE", help="create the corpus with this size when missing (e.g. 2G)")
    ap.add_argument("--only", help="comma-separated subset of: cat,python-read,rg,jobs1,jobs2,jobs1-find "
                    "(jobs1-find: --jobs 1 with the bytes.find scan engine, run when ahocorasick_rs is installed)")
    ap.add_argument("--results", type=Path, help="JSON file to write (default benchmarks/results/<date>-<size>.json)")
    ap.add_argument("--no-results", action="store_true", help="print only, write no JSON")
    ap.add_argument("--tool-runs", type=int, default=1, metavar="N",
                    help="run jobs1 and jobs2 N times, interleaved, and keep each one's fastest run "
                         "(memory: the highest peak of all runs); default 1")
    ap.add_argument("--quiet-wait", type=float, default=180, metavar="SECONDS",
                    help="before each line, wait up to this long for other processes to leave the CPUs "
                         "(under 15%% busy); default 180")
    args = ap.parse_args(argv)

    QUIET["wait"] = args.quiet_wait
    corpus = args.corpus or Path("/tmp/rd-corpus-quick" if args.quick else "/tmp/rd-corpus")
    size = args.generate or ("200M" if args.quick else None)
    if size:
        ensure_corpus(corpus, size)
    if not corpus.is_dir():
        print(f"error: no corpus at {corpus}; run benchmarks/make_corpus.py --out {corpus} "
              f"or give --generate 2G", file=sys.stderr)
        return 2
    wanted = set((args.only or "cat,python-read,rg,jobs1,jobs2,jobs1-find").split(","))
    if importlib.util.find_spec("ahocorasick_rs") is None:
        wanted.discard("jobs1-find")  # jobs1 already uses the find engine
    files = corpus_files(corpus)
    on_disk = sum(p.stat().st_size for p in files)
    manifest_path = Path(str(corpus) + ".manifest.json")
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}

    rows: list[dict] = []
    notes: list[str] = []
    print(f"corpus {corpus}: {len(files)} files, {on_disk / 1e6:.0f} MB on disk; load {os.getloadavg()}",
          file=sys.stderr)
    # Warm the page cache so that every line reads from memory, not from the disk.
    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)

    # python-read always runs first: it also counts the decompressed bytes every other line reads.
    read = best_of(3, "python-read", [sys.executable, "-c", READ_LOOP, str(corpus)], None, stdout=subprocess.PIPE)
    logical = int(read.pop("_stdout").strip() or 0)
    read["bytes"] = logical
    read["mb_per_s"] = round(logical / read["seconds"] / 1e6, 1)
    read["mb_per_cpu_s"] = round(logical / max(0.01, read["cpu_seconds"]) / 1e6, 1)
    if "python-read" in wanted:
        rows.append(read)
    if "cat" in wanted:
        rows.append(best_of(3, "cat", ["cat", *map(str, files)], on_disk))
        notes.append("cat reads the .gz files as they are on disk (its bytes are the on-disk size)")
    if "rg" in wanted:
        rg = shutil.which("rg")
        if rg:
            literals = scan_literals()
            cmd = [rg, "-j1", "-c", "-F", "-z", "--no-ignore", "--hidden", "--no-messages"]
            for literal in literals:
                cmd += ["-e", literal]
            rows.append(best_of(3, "rg", cmd + [str(corpus)], logical))
            notes.append(f"rg -j1 -c -F -z with the {len(literals)} scan literals of the packs "
                         f"(-z decompresses .gz in a child process)")
        else:
            notes.append("rg skipped: ripgrep is not installed")
    tool = installed_tool()
    events: dict[str, dict] = {}
    runs: dict[str, list[dict]] = {}
    # On a shared VM one run can be 30% slow: repeated runs alternate jobs1 and jobs2 so that a
    # slow stretch of the machine does not fall on one of them only.
    lines = [("jobs1", 1, None), ("jobs2", 2, None)] * max(1, args.tool_runs) + [("jobs1-find", 1, "find")]
    for name, jobs, engine in lines:
        if name not in wanted:
            continue
        out = Path(f"/tmp/rd-bench-{name}.parquet")
        stats = Path(f"/tmp/rd-bench-{name}.stats.json")
        row = measure(name, [tool, "events", str(corpus), "-o", str(out), "--jobs", str(jobs),
                             "--stats", str(stats), "-q"], logical,
                      env={"REBALANCE_DOCTOR_SCAN": engine} if engine else None)
        row["scan_engine"] = engine or scan_engine()
        if stats.exists():
            s = json.loads(stats.read_text())
            events[name] = {k: s.get(k) for k in ("files_read", "lines", "candidates", "events", "near_misses")}
            events[name]["bytes_read_by_units"] = s.get("bytes")  # ranges overlap a little at their edges
            row.update(events[name])
            stats.unlink()
        out.unlink(missing_ok=True)
        runs.setdefault(name, []).append(row)
    for name, measured in runs.items():
        row = dict(min(measured, key=lambda r: r["seconds"]))
        if len(measured) > 1:
            row["runs_seconds"] = [r["seconds"] for r in measured]
            for key in ("max_process_rss_mb", "tree_peak_rss_mb", "tree_peak_pss_mb"):
                row[key] = max(r[key] for r in measured)
        rows.append(row)
    for row in rows:
        row.pop("_stdout", None)

    by = {r["name"]: r for r in rows}
    ratios = {}
    if "jobs1" in by and read["mb_per_s"]:
        ratios["jobs1_vs_python_read"] = round(by["jobs1"]["mb_per_s"] / read["mb_per_s"], 3)
    if "jobs1" in by and "jobs2" in by:
        ratios["jobs2_vs_jobs1"] = round(by["jobs2"]["mb_per_s"] / by["jobs1"]["mb_per_s"], 3)
    tool_rows = [by[n] for n in ("jobs1", "jobs2") if n in by]
    if tool_rows:
        ratios["peak_tree_rss_mb"] = max(r["tree_peak_rss_mb"] for r in tool_rows)
        ratios["peak_tree_pss_mb"] = max(r["tree_peak_pss_mb"] for r in tool_rows)
        ratios["peak_process_rss_mb"] = max(r["max_process_rss_mb"] for r in tool_rows)
    if "jobs1" in events and "jobs2" in events:
        same = events["jobs1"]["events"] == events["jobs2"]["events"]
        ratios["jobs1_jobs2_same_events"] = same
    if "jobs1-find" in by and read["mb_per_s"]:
        ratios["jobs1_find_vs_python_read"] = round(by["jobs1-find"]["mb_per_s"] / read["mb_per_s"], 3)

    checks = []
    if "jobs1_vs_python_read" in ratios:
        checks.append(("jobs1 / python-read", ratios["jobs1_vs_python_read"], f">= {TARGET_JOBS1_VS_READ}",
                       ratios["jobs1_vs_python_read"] >= TARGET_JOBS1_VS_READ))
    if "jobs2_vs_jobs1" in ratios:
        checks.append(("jobs2 / jobs1", ratios["jobs2_vs_jobs1"], f">= {TARGET_JOBS2_VS_JOBS1}",
                       ratios["jobs2_vs_jobs1"] >= TARGET_JOBS2_VS_JOBS1))
    if "peak_tree_rss_mb" in ratios:
        checks.append(("peak memory, tree RSS (MB)", ratios["peak_tree_rss_mb"], f"< {TARGET_PEAK_MB}",
                       ratios["peak_tree_rss_mb"] < TARGET_PEAK_MB))

    print()
    print(f"corpus: {corpus} — {len(files)} files, {logical / 1e6:.0f} MB decompressed, {on_disk / 1e6:.0f} MB on disk")
    print(f"{'line':12} {'MB':>8} {'seconds':>8} {'MB/s':>8} {'cpu s':>7} {'MB/cpu-s':>8} {'max proc MB':>11} "
          f"{'tree RSS MB':>11} {'tree PSS MB':>11} {'others':>6} {'load':>9}")
    for r in rows:
        print(f"{r['name']:12} {r['bytes'] / 1e6:8.0f} {r['seconds']:8.2f} {r['mb_per_s']:8.1f} "
              f"{r['cpu_seconds']:7.1f} {r['mb_per_cpu_s']:8.0f} {r['max_process_rss_mb']:11.0f} {r['tree_peak_rss_mb']:11.0f} "
              f"{r['tree_peak_pss_mb']:11.0f} {r['others_busy_before']:6.0%} "
              f"{r['load_before']:4.1f}>{r['load_after']:<4.1f}"
              + ("" if r["exit"] in (0, 1) else f"  EXIT {r['exit']}"))
    for r in rows:
        if "runs_seconds" in r:
            print(f"{r['name']}: fastest of {len(r['runs_seconds'])} runs "
                  f"({', '.join(f'{t:.2f}' for t in r['runs_seconds'])} s); memory: the highest peak of all")
    for name, got in events.items():
        print(f"{name}: {got['candidates']} candidate records, {got['events']} events, "
              f"{got['near_misses']} near misses, {got['lines']} lines")
    print()
    for label, value, target, ok in checks:
        print(f"{label:28} {value:>8} target {target:8} {'ok' if ok else 'MISSED'}")
    counted = ("files_read", "lines", "candidates", "events", "near_misses")
    if len({tuple(e[k] for k in counted) for e in events.values()}) > 1:
        print("WARNING: the tool runs found different numbers of lines, candidates or events")
    if "jobs1_find_vs_python_read" in ratios:
        print(f"{'jobs1-find / python-read':28} {ratios['jobs1_find_vs_python_read']:>8} (without ahocorasick_rs)")
    for note in notes:
        print(f"note: {note}")
    high = [r["name"] for r in rows if r["others_busy_before"] > QUIET["threshold"]]
    if high:
        print(f"note: other processes kept over {QUIET['threshold']:.0%} of the CPUs busy just before "
              f"{', '.join(high)}: those figures are low; re-run on a quiet machine")
    print("note: 'others' is the CPU share other processes used in the second before a line started; "
          "load is the 1-minute load average before > after (it includes this benchmark)")

    if not args.no_results:
        stamp = datetime.now(timezone.utc)
        label = f"{logical / 2**30:.1f}GiB" if logical >= 2**30 else f"{logical / 2**20:.0f}MiB"
        path = args.results or HERE / "results" / f"{stamp:%Y-%m-%d}-{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        result = {"date": stamp.isoformat(timespec="seconds"), "machine": machine(), "commit": commit(),
                  "corpus": {"path": str(corpus), "files": len(files), "bytes": logical, "on_disk": on_disk,
                             "seed": manifest.get("seed"), "size_flag": manifest.get("size")},
                  "rows": rows, "ratios": ratios,
                  "targets": {"jobs1_vs_python_read": TARGET_JOBS1_VS_READ,
                              "jobs2_vs_jobs1": TARGET_JOBS2_VS_JOBS1, "peak_mb": TARGET_PEAK_MB},
                  "checks": [{"what": c[0], "value": c[1], "target": c[2], "ok": c[3]} for c in checks],
                  "notes": notes}
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"results: {path}")
    return 0 if all(c[3] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
