"""Small helpers for tests that read logs."""

from __future__ import annotations

import atexit
import functools
import gc
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

from rebalance_doctor.core.options import ReadOptions
from rebalance_doctor.engines.local import read_events


def events_of(*paths, **options) -> tuple[list[dict], object]:
    return read_events([str(p) for p in paths], ReadOptions(**options))


def simulated(scenario: str, seed: int, kafka: str | None, directory: Path):
    """Run a simulator scenario, write its incident into ``directory`` and analyse it: (incident, analysis)."""
    from rebalance_doctor.diagnosis import analyze_events
    from rebalance_doctor.sim.scenarios import run

    incident = run(scenario, seed, kafka)
    incident.write(directory)
    events, _ = events_of(directory)
    return incident, analyze_events(events)


def expectations(path: Path) -> dict[int, str]:
    """`#expect: pattern.id` annotations: line number of the annotated record -> pattern id."""
    expected = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith("#expect:"):
            expected[number + 1] = line.split(":", 1)[1].strip()
    return expected


def hosts_from_directories() -> bool:
    """Whether the reader names hosts after directories when file names collide (worker-a/payments.log and
    worker-b/payments.log: two hosts), the record-assembly engineer's host inference (issue 18a)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        line = ("[2024-03-05 10:00:00,000] INFO [Consumer clientId=c-1, groupId=g] (Re-)joining group "
                "(org.apache.kafka.clients.consumer.internals.AbstractCoordinator)\n")
        for host in ("worker-a", "worker-b"):
            (root / host).mkdir()
            (root / host / "payments.log").write_text(line, encoding="utf-8")
        events, _ = events_of(root)
        return len({e["host"] for e in events}) == 2


def assert_stated_group_and_generation(events: list[dict], groups: list, generations: list) -> None:
    """Each event's group and generation equal what its first line states, read with the first
    of ``groups`` / ``generations`` (compiled regexes, group 1) that finds it."""
    for event in events:
        first = event["message"].split("\n")[0]
        for rx in generations:
            m = rx.search(first)
            if m:
                assert event["generation"] == int(m.group(1)), (event["line"], first[:200])
                break
        for rx in groups:
            m = rx.search(first)
            if m:
                assert event["group"] == m.group(1), (event["line"], first[:200])
                break


# ---------------------------------------------------------------- the command line

REPO = Path(__file__).resolve().parents[1]
HANG_GUARD_S = 300  # a subprocess's hang guard, far above what any command here takes; not a timing


class _Left(BaseException):
    """os._exit, as the console script's _leave calls it, inside this process: carries the status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _OsWithoutExit:
    """``os`` for rebalance_doctor.cli.app while it runs in this process: everything is the real
    module's but ``_exit``, which ends the run instead of the test process."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def _exit(status: int):
        raise _Left(status)


class _AtexitOfTheTests:
    """``atexit`` for the same: the handlers registered in this process are pytest's and the other
    tests'; they run when the test process ends, not after each command."""

    def __getattr__(self, name):
        return getattr(atexit, name)

    @staticmethod
    def _run_exitfuncs() -> None:
        pass


def run_cli(*args, stdin: str | bytes | None = None, env: dict[str, str] | None = None,
            text: bool = True) -> subprocess.CompletedProcess:
    """`rebalance-doctor ARGS` run by the console script's own ``main()`` in this process: the
    same argument parsing, error handling, exit-code precedence and flushing as the installed
    command, stdout and stderr captured separately (click's test isolation: sys.std* replaced,
    ``env`` set in os.environ for the run only). The one difference is the end: ``main()``
    leaves with os._exit, caught here as the exit status. The result looks like the
    subprocess's (returncode, stdout, stderr; bytes with ``text=False``).

    For a test about the process itself (signals, a terminal, real pipes or stdin, a closed
    stdout, resource limits, a hang guard, the interpreter's exit, imports in a fresh
    interpreter) use ``cli_process``."""
    from typer.testing import CliRunner

    from rebalance_doctor.cli import app as console
    from rebalance_doctor.cli import common

    argv = [str(a) for a in args]
    # What the console script gets from sys.argv, passed explicitly: the program name is the
    # installed command's (click would take pytest's from `python -m pytest`).
    command = functools.partial(console.app, args=argv, prog_name="rebalance-doctor")
    debug, thresholds, status = common.debug, gc.get_threshold(), None
    with CliRunner().isolation(input=stdin, env=env) as (out, err, _), \
            mock.patch.object(console, "app", command), \
            mock.patch.object(console, "os", _OsWithoutExit()), \
            mock.patch.object(console, "atexit", _AtexitOfTheTests()):
        try:
            console.main()
        except _Left as left:
            status = left.status
        finally:
            common.debug = debug
            gc.set_threshold(*thresholds)  # main() tunes the collector for a reading process
        stdout, stderr = out.getvalue(), err.getvalue()
    assert status is not None, "main() returned without leaving through _leave"
    if text:
        stdout, stderr = stdout.decode(), stderr.decode()
    return subprocess.CompletedProcess(["rebalance-doctor", *argv], status, stdout, stderr)


def cli_process(*args, stdin: str | bytes | None = None, env: dict[str, str] | None = None, cwd=None,
                text: bool = True, timeout: float = HANG_GUARD_S, prefix: list[str] | None = None,
                **popen) -> subprocess.CompletedProcess:
    """`python -m rebalance_doctor.cli ARGS` in a subprocess, for the tests where the process
    matters (see ``run_cli``): the tree under test first on its path, ``env`` over this process's
    environment, behind an optional ``prefix`` command, with a hang guard."""
    return subprocess.run([*(prefix or []), sys.executable, "-m", "rebalance_doctor.cli", *map(str, args)],
                          input=stdin, capture_output=True, text=text, timeout=timeout, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                               **(env or {})}, **popen)
