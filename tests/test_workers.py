"""The forked workers of `--jobs N`: results in task order, errors and dead workers reported,
nothing left behind (processes, temporary files)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rebalance_doctor.engines.workers import WorkerError, Workers, WorkersFailed

LAYOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "layouts"


def slow_on_even(n):
    # Even tasks finish after odd ones, so results come back out of order.
    time.sleep(0.02 if n % 2 == 0 else 0)
    return {"task": n, "pid": os.getpid()}


def fails_on_five(n):
    if n == 5:
        raise KeyError(f"no such thing as {n}")
    return n


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("cannot pickle this")


def unpicklable_failure(n):
    raise Unpicklable("a worker-only exception")


def sleepy_after_the_first(n):
    time.sleep(10.0 if n else 0)    # far longer than the bound below, so that a loaded machine cannot blur them
    return n


def dies_on_three(n):
    if n == 3:
        os._exit(9)
    return n


def check_left_nothing(workers: Workers) -> None:
    assert not any(process.is_alive() for process in workers._processes)
    assert not Path(workers._directory).exists()


def test_results_come_in_task_order_from_every_worker():
    workers = Workers(2, slow_on_even)
    workers.start(iter(range(40)))
    results = list(workers.results())
    workers.close()
    assert [r["task"] for r in results] == list(range(40))
    assert len({r["pid"] for r in results}) == 2 and os.getpid() not in {r["pid"] for r in results}
    check_left_nothing(workers)


def test_fewer_tasks_than_workers_and_no_tasks():
    with Workers(3, slow_on_even) as workers:
        workers.start(iter([7]))
        assert [r["task"] for r in workers.results()] == [7]
    check_left_nothing(workers)
    with Workers(2, slow_on_even) as workers:
        workers.start(iter([]))
        assert list(workers.results()) == []
    check_left_nothing(workers)


def test_an_exception_in_a_worker_is_raised_in_the_parent_after_the_results_before_it():
    workers = Workers(2, fails_on_five)
    workers.start(iter(range(20)))
    got = []
    with pytest.raises(KeyError, match="no such thing as 5") as raised:
        for result in workers.results():
            got.append(result)
    workers.close()
    assert got == [0, 1, 2, 3, 4]
    # Where it happened in the worker, which pickling an exception drops, comes along.
    assert isinstance(raised.value.__cause__, WorkerError)
    assert "in fails_on_five" in str(raised.value.__cause__)
    check_left_nothing(workers)


def test_an_exception_that_cannot_travel_arrives_as_its_traceback():
    with Workers(2, unpicklable_failure) as workers:
        workers.start(iter(range(3)))
        with pytest.raises(WorkerError, match="Unpicklable: a worker-only exception"):
            list(workers.results())
    check_left_nothing(workers)


def test_a_worker_that_dies_ends_the_run_with_an_error_not_a_hang():
    def hung(*_):
        raise AssertionError("still waiting for the dead worker's result")
    signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    with Workers(2, dies_on_three) as workers:
        workers.start(iter(range(10)))
        with pytest.raises(WorkersFailed, match=r"ended unexpectedly \(exit code 9\)"):
            list(workers.results())
    signal.alarm(0)
    check_left_nothing(workers)


def always_dies(n):
    os._exit(9)


def test_workers_that_all_die_end_the_run_with_an_error():
    # The results pipe then reads as closed, which is not a result.
    with Workers(2, always_dies) as workers:
        workers.start(iter(range(10)))
        for process in workers._processes:  # both gone before the parent looks
            process.join(10)
        with pytest.raises(WorkersFailed, match=r"ended unexpectedly \(exit code 9\)"):
            list(workers.results())
    check_left_nothing(workers)


def test_a_failing_task_plan_stops_the_workers():
    def plan():
        yield 1
        raise OSError("the next file is gone")
    workers = Workers(2, slow_on_even)
    with pytest.raises(OSError, match="gone"):
        workers.start(plan())
    check_left_nothing(workers)


def test_a_caller_that_stops_reading_stops_the_workers_at_once():
    workers = Workers(2, sleepy_after_the_first)
    workers.start(iter(range(1000)))
    results = workers.results()
    assert next(results) == 0
    started = time.perf_counter()
    results.close()
    workers.close()
    assert time.perf_counter() - started < 5  # not the 10 s of a task already handed out
    check_left_nothing(workers)


def test_results_that_cannot_be_written_are_a_clear_error():
    with Workers(2, slow_on_even) as workers:
        shutil.rmtree(workers._directory)
        workers.start(iter(range(4)))
        with pytest.raises(WorkersFailed, match="cannot write a worker's results to .*No such file"):
            list(workers.results())
    check_left_nothing(workers)


def test_no_temporary_directory_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(WorkersFailed, match="cannot make a temporary directory.*--jobs 1"):
        Workers(2, slow_on_even)


def test_the_cli_reports_a_dead_worker_as_an_internal_error(tmp_path):
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_bytes((LAYOUTS / "kafka.log").read_bytes())
    code = ("import os, sys\n"
            "from rebalance_doctor.engines import local\n"
            "local.read_unit = lambda unit, options: os._exit(9)\n"
            "from rebalance_doctor.cli.app import main\n"
            f"sys.argv = ['rebalance-doctor', 'events', {str(tmp_path)!r}, '--jobs', '2', '-q']\n"
            "main()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert result.returncode == 4, result.stderr
    assert "error: a worker process ended unexpectedly (exit code 9)" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_workers_detect_the_layouts_and_the_accounting_is_that_of_one_job(tmp_path: Path):
    """With --jobs 2 the workers detect each file's layout where they read it (engines/local.py
    `_read`): a file that is not a log, one of an unknown layout and one read in byte ranges are
    accounted for as with --jobs 1: one skip, one warning, the same events."""
    from dataclasses import replace as with_options

    from rebalance_doctor.core.options import ReadOptions
    from rebalance_doctor.engines import local

    shutil.copytree(LAYOUTS, tmp_path / "logs")
    (tmp_path / "logs" / "blob.log").write_bytes(bytes(range(32)) * 4096)   # control bytes: not text
    (tmp_path / "logs" / "odd.log").write_text("".join(f"~~ {n} something happened\n" for n in range(50)))
    one = ReadOptions(jobs=1, split_bytes=4096)   # the bigger files are read in several ranges
    events_1, stats_1 = local.read_events([str(tmp_path / "logs")], one)
    events_2, stats_2 = local.read_events([str(tmp_path / "logs")], with_options(one, jobs=2))
    assert [s["source"] for s in stats_2.skipped] == [s["source"] for s in stats_1.skipped]
    assert sum(1 for s in stats_2.skipped if s["source"].endswith("blob.log")) == 1
    assert stats_2.warnings == stats_1.warnings
    assert any(w["source"].endswith("odd.log") for w in stats_2.warnings)
    assert [(e["source"], e["line"], e["event"]) for e in events_2] == \
           [(e["source"], e["line"], e["event"]) for e in events_1]
    assert events_1
