"""Analysis at scale: time and peak memory of `rebalance-doctor analyze` as rebalances, groups and events grow.

    python benchmarks/scale_bench.py one-group 10000 50000 100000   # rebalances of one long-running group
    python benchmarks/scale_bench.py groups 1000 10000 40000        # groups of 2 rebalances each
    python benchmarks/scale_bench.py events 1000000 5000000         # events (100 groups, rebalances to fill)

Each size is written into a directory of its own (``--dir``, default /tmp/rd-scale), then analysed by one
subprocess at a time (``analyze DIR --format json -q --fail-on never``, the JSON thrown away; ``--html``
also writes the HTML page and reports its size). CPU seconds and the peak resident memory are the
kernel's accounting of the finished process (``wait4``). The logs are those of ``long_group.py``: a member
leaving on a poll timeout and rejoining under a new member id, broker and client side (9 events a cycle
of 2 rebalances). Results in docs/performance.md ("Analysis at scale").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from long_group import write_group  # noqa: E402

EVENTS_PER_CYCLE = 9        # 7 broker lines and 2 client lines read as events, for 2 rebalances
EVENT_GROUPS = 100


def write(kind: str, size: int, out: Path, seed: int = 1) -> dict:
    """The logs of one size: (groups, rebalances each) for the kind."""
    if kind == "one-group":
        groups, each = 1, size
    elif kind == "groups":
        groups, each = size, 2
    else:
        groups = EVENT_GROUPS
        each = max(2, 2 * round(size / EVENTS_PER_CYCLE / groups))
    out.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    t = datetime(2024, 3, 5, 10, 0, 0)
    with open(out / "broker-1.log", "w") as broker, open(out / "node1.log", "w") as node:
        for g in range(groups):
            t = write_group(broker, node, "payments" if groups == 1 else f"group-{g:05d}", each, rnd, t)
    return {"groups": groups, "rebalances": groups * each, "events": groups * each // 2 * EVENTS_PER_CYCLE,
            "bytes": sum(p.stat().st_size for p in out.iterdir())}


# The regex time budget (core/regex_guard.py) is lifted in the measured process for the trees compared against:
# up to 652bc28 it summed the wall time of every record, and one 60 MB file of well-formed records spent it on
# this shared 2-vCPU VM under load (exit 3, two thirds of one group's 100,000 rebalances read). A benchmark of
# the analysis must read every event; since then only slow calls' CPU time is spent and the lift changes nothing.
_RUN = ("import sys; from rebalance_doctor.core import regex_guard as g; g.FILE_BUDGET_S = g.RUN_BUDGET_S = 1e9; "
        "sys.argv[0] = 'rebalance-doctor'; from rebalance_doctor.cli.app import main; main()")


def measure(directory: Path, html: bool, timeout: float, limit_mib: int, tree: Path | None = None,
            command_name: str = "analyze") -> dict:
    command = [sys.executable, "-c", _RUN, command_name, str(directory)]
    command += (["--format", "json", "-q", "--fail-on", "never"] if command_name == "analyze"
                else ["-q", "-o", os.devnull])
    page = directory.with_suffix(".html")
    if html:
        command += ["--html", str(page)]
    began = time.perf_counter()
    with open(os.devnull, "wb") as sink, open(directory.with_suffix(f".{os.getpid()}.err"), "w+b") as err:
        def bounded():   # a run that outgrows the bound fails alone (MemoryError: exit 4 or 5), not the machine
            resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))

        process = subprocess.Popen(command, stdout=sink, stderr=err, preexec_fn=bounded, cwd=tree)
        while True:   # wait4: this process's own CPU time and peak memory
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - began > timeout:
                process.kill()
                os.wait4(process.pid, 0)
                return {"exit": "timeout", "wall_s": round(time.perf_counter() - began, 1)}
            time.sleep(0.2)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    directory.with_suffix(f".{os.getpid()}.err").unlink()
    result = {"exit": process.returncode, "wall_s": round(time.perf_counter() - began, 1),
              "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_mib": round(usage.ru_maxrss / 1024)}
    if process.returncode:
        result["stderr"] = text[-300:]
    if html and page.exists():
        result["html_bytes"] = page.stat().st_size
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("one-group", "groups", "events"))
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/rd-scale"))
    parser.add_argument("--html", action="store_true", help="also write the HTML page and give its size")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--limit-mib", type=int, default=4096, help="address-space bound of the analysis")
    parser.add_argument("--keep", action="store_true", help="keep the written logs (and reuse kept ones)")
    parser.add_argument("--tree", type=Path, help="the source tree to run (default: this one), e.g. main beside it")
    parser.add_argument("--command", choices=("analyze", "events"), default="analyze",
                        help="events: `events DIR -o /dev/null` (reading alone)")
    args = parser.parse_args(argv)
    for size in args.sizes:
        directory = args.dir / f"{args.kind}-{size}"
        kept = directory.with_suffix(".written.json")   # beside the logs, not among them: the tool would read it
        if args.keep and kept.exists():
            written = json.loads(kept.read_text())
        else:
            written = write(args.kind, size, directory)
            if args.keep:
                kept.write_text(json.dumps(written))
        result = measure(directory, args.html, args.timeout, args.limit_mib, args.tree, args.command)
        print(json.dumps({"kind": args.kind, "size": size, "command": args.command, "tree": str(args.tree or "."),
                          **written, **result}), flush=True)
        if not args.keep:
            for path in directory.iterdir():
                path.unlink()
            directory.rmdir()
            directory.with_suffix(".html").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
