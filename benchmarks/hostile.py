"""Hostile inputs: time and peak memory of `rebalance-doctor events` on bombs, huge lines and
bundles of many members (issue 21), for this tree and optionally the round's baseline.

    python benchmarks/hostile.py                      # this tree, every case
    python benchmarks/hostile.py --baseline --timeout 300 --case tar-2000
    python benchmarks/hostile.py --work /tmp/rd-hostile   # where the inputs are made (kept)

Each run is a subprocess (address space limited to --memory-limit-mb, 4 GiB by default, so that
a run holding a bomb in memory fails instead of taking the machine's); its peak RSS is the
child's ru_maxrss (wait4), its CPU user + sys.
A run that takes longer than --timeout is stopped and reported as such (the baseline needs
minutes for some of them). The inputs are made by tests/hostile.py's generators (our own
records), once, in --work. Results go to benchmarks/results/<date>-hostile.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

import hostile  # noqa: E402  (the generators of the regression corpus)

NOISE = b"[2024-05-01 13:45:12,345] INFO Rolled new log segment at offset 1 (kafka.log.LocalLog)\n"


def _gzip_of(path: Path, block: bytes, size: int) -> None:
    """A gzip file of ``size`` decompressed bytes: one member of 1 MiB repeated (one stream)."""
    member = gzip.compress(block * ((1 << 20) // len(block)), compresslevel=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        for _ in range(size >> 20):
            out.write(member)
        out.write(gzip.compress(hostile.kafka_log(70)))


def _one_line(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        block = b"z" * (1 << 20)
        for _ in range(size >> 20):
            out.write(block)
        out.write(b"\n" + hostile.kafka_log(70))


CASES = {
    "gzip-bomb-2GiB": ("a 9 MB gzip of 2 GiB of log lines (no events) + 70 records",
                       lambda d: _gzip_of(d / "server.log.gz", NOISE, 2 << 30)),
    "zeros-bomb-2GiB": ("a 2 MB gzip of 2 GiB of NUL bytes + 70 records",
                        lambda d: _gzip_of(d / "server.log.gz", b"\x00" * 4096, 2 << 30)),
    "one-line-2GiB": ("a plain file whose first line is 2 GiB long, then 70 records",
                      lambda d: _one_line(d / "server.log", 2 << 30)),
    "long-line-200MB": ("a record start followed by one 200 MB line, then records",
                        lambda d: hostile.long_line_after_record(d / "server.log", 200 << 20)),
    "tar-2000": ("a tar.gz of 2,000 small logs", lambda d: hostile.make_many_member_tar(d, 2000)),
    "zip-2000": ("a zip of 2,000 small logs", lambda d: hostile.make_many_member_zip(d, 2000)),
    "zip-20000": ("a zip of 20,000 small logs", lambda d: hostile.make_many_member_zip(d, 20000)),
}


def make(work: Path, name: str) -> Path:
    directory = work / name
    done = directory / ".made"
    if not done.exists():
        directory.mkdir(parents=True, exist_ok=True)
        CASES[name][1](directory)
        done.write_text("ok\n")
    return directory


def run(tree: Path, directory: Path, timeout: float, jobs: int, memory_mb: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, "-m", "rebalance_doctor.cli", "events", str(directory), "-o", "/dev/null", "-q",
            "--jobs", str(jobs)]

    def limit() -> None:  # the baseline holds a decompressed file in memory: keep the machine safe
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               preexec_fn=limit)
    deadline = started + timeout
    status = usage = None
    while time.perf_counter() < deadline:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.05)
    else:
        process.kill()
        _, status, usage = os.wait4(process.pid, 0)
        return {"status": "timeout", "wall_s": round(time.perf_counter() - started, 1),
                "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_rss_mb": usage.ru_maxrss // 1024}
    wall = time.perf_counter() - started
    err = process.stderr.read().decode(errors="replace") if process.stderr else ""
    summary = next((line for line in err.splitlines() if line.startswith("read ")), err.strip()[-300:])
    return {"status": "ok", "exit": os.waitstatus_to_exitcode(status), "wall_s": round(wall, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_rss_mb": usage.ru_maxrss // 1024,
            "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/rd-hostile"))
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these (repeatable)")
    parser.add_argument("--baseline", action="store_true", help="also run the round's baseline (154b961)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--memory-limit-mb", type=int, default=4096,
                        help="address-space limit of each run (a run that needs more fails with MemoryError)")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args()
    trees = {"current": REPO}
    if args.baseline:
        sys.path.insert(0, str(HERE))
        from compare import BASELINE, checkout

        trees["baseline"] = checkout(BASELINE)
    results = []
    for name in args.case or list(CASES):
        directory = make(args.work, name)
        for label, tree in trees.items():
            row = {"case": name, "what": CASES[name][0], "tree": label, **run(tree, directory, args.timeout, args.jobs, args.memory_limit_mb)}
            results.append(row)
            print(f"{name:16} {label:9} {row['status']:8} exit {row.get('exit', '-')!s:3} "
                  f"wall {row['wall_s']:7.1f} s  cpu {row['cpu_s']:7.1f} s  peak RSS {row['peak_rss_mb']:6} MB",
                  flush=True)
    if not args.no_results:
        out = HERE / "results" / f"{datetime.now(timezone.utc):%Y-%m-%d}-hostile.json"
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        out.write_text(json.dumps({"commit": commit, "jobs": args.jobs, "runs": results}, indent=2) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
