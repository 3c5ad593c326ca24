"""What the HTML report costs on top of the terminal report: `analyze` with and without `--html`.

    python benchmarks/report_overhead.py /tmp/rd-1g --runs 3 [--out benchmarks/results/X.json]

Runs `rebalance-doctor analyze INPUT -q` (the terminal report to /dev/null) and the same with
`--html FILE`, alternating, and reports each run's CPU seconds (user + sys of the process, robust
to other load on the machine) and wall seconds, the best of each, their ratio and the page's
size. docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(args: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command, its children included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    base = [sys.executable, "-m", "rebalance_doctor.cli", "analyze", options.input, "-q"]
    with tempfile.TemporaryDirectory() as scratch:
        page = Path(scratch) / "report.html"
        terminal, html = [], []
        run(base)  # warm the page cache and the pattern cache
        for _ in range(options.runs):
            terminal.append(run(base))
            html.append(run(base + ["--html", str(page)]))
        size = page.stat().st_size
    best_t = min(c for c, _ in terminal)
    best_h = min(c for c, _ in html)
    result = {
        "input": options.input,
        "input_bytes": sum(p.stat().st_size for p in Path(options.input).rglob("*") if p.is_file()),
        "runs": options.runs,
        "terminal_cpu_s": [round(c, 3) for c, _ in terminal], "terminal_wall_s": [round(w, 3) for _, w in terminal],
        "html_cpu_s": [round(c, 3) for c, _ in html], "html_wall_s": [round(w, 3) for _, w in html],
        "best_terminal_cpu_s": round(best_t, 3), "best_html_cpu_s": round(best_h, 3),
        "html_over_terminal": round(best_h / best_t, 3), "page_bytes": size,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
