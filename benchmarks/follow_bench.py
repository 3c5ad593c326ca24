"""`analyze --follow` against a writer: lag behind it and memory over time.

    python benchmarks/follow_bench.py --rate 500 --seconds 180             # lines/s, for 3 minutes
    python benchmarks/follow_bench.py --rate 5000 --kafka-share 0.02 --seconds 120 --json out.json

A writer appends to one log at ``--rate`` lines per second (in 50 ms batches): the lines of
fixtures/incidents/poll-timeout-storm/node2.log over and over, each pass 10 minutes later in log
time than the one before (5 poll timeouts a pass, one growing poll-timeout finding), mixed with
application lines that name nothing Kafka (``--kafka-share`` of the lines are the incident's).
The follower is `rebalance-doctor analyze --follow` in a subprocess; each poll timeout the writer
writes raises the count in the finding's summary, so the time from writing the Nth poll timeout
to the first output line that counts N is the follower's lag behind the writer, end to end
(reading, parsing, diagnosis, output). RSS and CPU of the follower are sampled from /proc.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NODE2 = REPO / "fixtures" / "incidents" / "poll-timeout-storm" / "node2.log"
STAMP = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
COUNT = re.compile(r"(\d+) poll timeout\(s\)")
PASS_S = 600
FILLER = ("{ts} INFO  [pool-1-thread-1] com.example.orders.OrderProcessor - Processed {n} records in {ms} ms\n")


def incident_lines():
    """(line bytes without its stamp, its offset in seconds from the first line, is a poll timeout)."""
    lines = NODE2.read_bytes().splitlines(keepends=True)
    first = None
    out = []
    for line in lines:
        m = STAMP.match(line)
        if m is None:
            out.append((None, line, 0.0, False))
            continue
        t = datetime.strptime(m[1].decode(), "%Y-%m-%d %H:%M:%S") + timedelta(milliseconds=int(m[2]))
        first = first or t
        out.append((m.end(), line, (t - first).total_seconds(), b"poll timeout has expired" in line and b" WARN " in line))
    return out


def stamp(t: datetime) -> bytes:
    return (t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}").encode()


class Writer(threading.Thread):
    def __init__(self, path: Path, rate: int, seconds: float, share: float):
        super().__init__(daemon=True)
        self.path, self.rate, self.seconds, self.share = path, rate, seconds, share
        self.written_at: list[float] = []   # monotonic time the Nth poll timeout was written (index N-1)
        self.lines = 0
        self.bytes = 0
        self.done = False

    def run(self) -> None:
        incident = incident_lines()
        base = datetime(2024, 3, 5, 9, 59, 10)
        start = time.monotonic()
        index, passes, kafka_due = 0, 0, 0.0
        with open(self.path, "ab", buffering=0) as out:
            while time.monotonic() - start < self.seconds:
                due = int((time.monotonic() - start) * self.rate) - self.lines
                batch, timeouts = [], 0
                for _ in range(max(due, 0)):
                    kafka_due += self.share
                    rest, line, offset, poll = incident[index]
                    when = base + timedelta(seconds=passes * PASS_S + offset)
                    if kafka_due >= 1.0:
                        kafka_due -= 1.0
                        batch.append(line if rest is None else stamp(when) + line[rest:])
                        timeouts += poll
                        index += 1
                        if index == len(incident):
                            index, passes = 0, passes + 1
                    else:
                        batch.append(FILLER.format(ts=stamp(when).decode(), n=self.lines % 500,
                                                   ms=self.lines % 300).encode())
                    self.lines += 1
                if batch:
                    data = b"".join(batch)
                    out.write(data)
                    self.bytes += len(data)
                    now = time.monotonic()
                    self.written_at += [now] * timeouts
                time.sleep(0.05)
        self.done = True


def rss_and_cpu(pid: int) -> tuple[float, float]:
    """RSS in MiB and CPU seconds (user + system) of a process."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(l.split()[1]) for l in status if l.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_offset(pid: int, path: Path) -> int | None:
    """Where the follower's open file on ``path`` is (its offset: the bytes it has read)."""
    target = str(path)
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                    return next(int(l.split()[1]) for l in info if l.startswith("pos:"))
        except OSError:
            continue
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=500, help="lines per second the writer appends")
    parser.add_argument("--seconds", type=float, default=180, help="how long the writer writes")
    parser.add_argument("--kafka-share", type=float, default=0.1, help="share of the lines that are the incident's")
    parser.add_argument("--sample", type=float, default=10, help="seconds between rows of the table")
    parser.add_argument("--json", type=Path, help="write the rows and the summary here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="follow-bench-"))
    log = work / "node2.log"
    log.touch()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    follower = subprocess.Popen([sys.executable, "-m", "rebalance_doctor.cli", "analyze", "--follow", str(log), "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=env)
    seen: list[tuple[float, int]] = []   # (time, count) of each output line that states a count

    def read() -> None:
        for line in follower.stdout:
            m = COUNT.search(line)
            if m:
                seen.append((time.monotonic(), int(m[1])))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    writer = Writer(log, args.rate, args.seconds, args.kafka_share)
    started = time.monotonic()
    writer.start()
    rows = []

    def lags(upto: float) -> list[float]:
        """Lag of every poll timeout written before ``upto`` and already shown (seconds)."""
        out = []
        shown = [(t, c) for t, c in seen]
        for n, written in enumerate(writer.written_at[:], start=1):
            if written > upto:
                break
            when = next((t for t, c in shown if c >= n), None)
            if when is not None:
                out.append(when - written)
        return out

    print(f"{'s':>5} {'lines':>10} {'MiB':>8} {'read KiB behind':>15} {'timeouts':>9} {'shown':>6} {'lag max s':>10} "
          f"{'RSS MiB':>8} {'CPU %':>6}")
    last_cpu, last_t = 0.0, started
    while not writer.done or time.monotonic() - started < args.seconds + 5:
        time.sleep(args.sample)
        now = time.monotonic()
        rss, cpu = rss_and_cpu(follower.pid)
        size, offset = log.stat().st_size, read_offset(follower.pid, log)
        behind = None if offset is None else max(0, size - offset)
        shown = max((c for _, c in seen), default=0)
        recent = lags(now)[-5:]
        row = {"s": round(now - started), "lines": writer.lines, "mib": round(writer.bytes / 2**20, 1),
               "read_behind_kib": None if behind is None else round(behind / 1024),
               "timeouts": len(writer.written_at), "shown": shown,
               "lag_max_recent_s": round(max(recent), 2) if recent else None,
               "behind": len(writer.written_at) - shown, "rss_mib": round(rss), "cpu_pct": round(100 * (cpu - last_cpu) / (now - last_t))}
        last_cpu, last_t = cpu, now
        rows.append(row)
        print(f"{row['s']:>5} {row['lines']:>10,} {row['mib']:>8} {str(row['read_behind_kib']):>15} "
              f"{row['timeouts']:>9} {shown:>6} "
              f"{row['lag_max_recent_s'] if row['lag_max_recent_s'] is not None else '-':>10} {row['rss_mib']:>8} {row['cpu_pct']:>6}")
        if writer.done and shown >= len(writer.written_at):
            break
    follower.send_signal(signal.SIGINT)
    follower.wait(timeout=120)
    all_lags = lags(time.monotonic())
    summary = {"rate": args.rate, "seconds": args.seconds, "kafka_share": args.kafka_share,
               "lines": writer.lines, "mib": round(writer.bytes / 2**20, 1), "timeouts": len(writer.written_at),
               "shown": max((c for _, c in seen), default=0),
               "lag_median_s": round(sorted(all_lags)[len(all_lags) // 2], 2) if all_lags else None,
               "lag_max_s": round(max(all_lags), 2) if all_lags else None,
               "rss_first_mib": rows[0]["rss_mib"] if rows else None, "rss_last_mib": rows[-1]["rss_mib"] if rows else None}
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    for path in work.iterdir():
        path.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
