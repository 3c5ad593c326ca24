"""python -m rebalance_doctor.lab: list the scenarios, record one or all of them against real Kafka."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from .errors import INTERNAL, USAGE, LabError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rebalance_doctor.lab",
                                     description="Real Kafka on 127.0.0.1: record scenarios with their truth.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the scenarios, their family and the releases they are recorded at")
    rec = sub.add_parser("record", help="record SCENARIO (or --all) into --out")
    rec.add_argument("scenario", nargs="?", help="a scenario name (see list)")
    rec.add_argument("--all", action="store_true", help="every scenario at every release of its list")
    rec.add_argument("--kafka", help="the Kafka release (e.g. 4.4.0); with --all: only this release")
    rec.add_argument("--out", type=Path, required=True,
                     help="the incident directory (with --all: the corpus root, one SCENARIO@VERSION each)")
    rec.add_argument("--port", type=int, help="the first broker port (default: free ports)")
    rec.add_argument("--family", action="append", help="with --all: only these families")
    rec.add_argument("--missing", action="store_true",
                     help="with --all: only the recordings whose directory has no expected.toml yet")
    again = sub.add_parser("retruth", help="write recorded incidents' expected.toml again from their lab.toml and "
                                            "the scenarios as scenarios.toml states them now")
    again.add_argument("directories", nargs="+", type=Path, help="recorded incidents (SCENARIO@VERSION)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupted)   # a CI cancel or a pod stop: stop what was started, too
    from . import scenario as scenarios
    try:
        if args.command == "list":
            for name in scenarios.names():
                s = scenarios.load(name)
                what = "healthy" if s.healthy else ", ".join(f.rule for f in s.findings)
                print(f"{name:34} {s.family:9} {what:32} {int(s.duration):4d}s  {' '.join(s.releases)}")
            return 0
        if args.command == "retruth":
            from .truth import retruth
            for directory in args.directories:
                if retruth(directory):
                    print(f"rewrote {directory / 'expected.toml'}")
            return 0
        from .recorder import record
        if args.all:
            jobs = [(n, v) for n in scenarios.names() for v in scenarios.load(n).releases
                    if (args.kafka in (None, v)) and (not args.family or scenarios.load(n).family in args.family)
                    and not (args.missing and (args.out / f"{n}@{v}" / "expected.toml").exists())]
            failed = []
            for name, version in jobs:
                started = time.monotonic()
                try:
                    record(name, version, args.out / f"{name}@{version}", args.port)
                    print(f"recorded {name}@{version} in {time.monotonic() - started:.0f} s")
                except LabError as error:
                    if error.code != INTERNAL:
                        raise
                    failed.append(f"{name}@{version}: {error}")
                    print(f"error: {name}@{version}: {error}", file=sys.stderr)
            if failed:
                print(f"error: {len(failed)} of {len(jobs)} recordings failed", file=sys.stderr)
                return INTERNAL
            return 0
        if not args.scenario or not args.kafka:
            raise LabError("record needs SCENARIO and --kafka VERSION (or --all)", USAGE)
        record(args.scenario, args.kafka, args.out, args.port)
        return 0
    except LabError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        print("error: interrupted; every process the lab started was stopped", file=sys.stderr)
        return 130


def _interrupted(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
