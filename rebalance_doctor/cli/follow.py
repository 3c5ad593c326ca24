"""`rebalance-doctor analyze --follow`: follow the inputs, show findings as they appear, and on Ctrl-C
(or SIGTERM) print the final report and exit with the code it earns (``live.Live`` does the work)."""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import typer
from rich.console import Console
from rich.text import Text

from ..core.options import ReadOptions
from ..core.packs import PackError
from ..core.toml import DataFileError
from ..report.safe_text import visible
from . import common
from .common import stderr
from .output import quiet_stdout

TICK_S = 0.25     # how often the inputs are polled (a finding shows within a tick or two of its line)
_SLICE_S = 0.05   # sleep in slices: a stop request is seen within this


class _Stop:
    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self, signum, frame) -> None:
        self.signum = signum


@contextmanager
def _stopped_by_signals(stop: _Stop) -> Iterator[None]:
    """SIGINT and SIGTERM end the follow at the next tick (not in the middle of a read), so that
    the final report covers everything read."""
    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def run(paths: list[str], options: ReadOptions, config_file: Path | None, groups, since, until,
        fmt: str, final_report, quiet: bool = False, redactor=None) -> tuple:
    """Follow until stopped; then ``final_report(result)`` prints the usual report. Returns the
    final ``api.Analysis`` and the exit codes the inputs call for (the caller adds the findings').
    ``redactor`` (--redact): every line, note and screen shown while following, and the final report,
    name placeholders, the same ones throughout (it learns each identifier as the lines are read)."""
    from .. import api
    from ..live import Live
    from ..report import live as shown
    from ..rules import config as rule_config

    with common.errors():
        config = rule_config.load(config_file)
        config.groups = list(groups or [])
        config.since = api.parse_time(since, options.tz, "since")
        config.until = api.parse_time(until, options.tz, "until")
    common.say_when_waiting_for_stdin(paths)
    name = redactor.text if redactor is not None else _same
    try:
        with common.errors():
            session = Live(paths, options, config, redactor=redactor, background=True)
    except (PackError, DataFileError, ValueError) as exc:
        raise common.fail(str(exc))
    try:
        if session.stats.usage_errors():
            for item in session.stats.usage_errors():
                stderr.print(Text(f"error: {visible(item['source'])}: {visible(item['reason'])}"))
            raise typer.Exit(common.EXIT_USAGE)
        if not session.followable:
            raise common.fail("--follow: nothing here can be followed (give log files, directories, or - for "
                              "standard input; compressed files, bundles and rotated files are read once)")
        for item in session.stats.skipped:
            stderr.print(Text(f"skipped: {visible(name(item['source']), False)}: {visible(name(item['reason']), False)}"))
        plan = session.follower.plan
        stderr.print(Text(f"following {len(plan.tails)} file(s) or stream(s) and {len(plan.directories)} "
                          f"directory(ies){f'; {len(plan.once)} file(s) read once' if plan.once else ''} "
                          f"(Ctrl-C or SIGTERM: the final report)"))
        console = Console(highlight=False)
        on_screen = fmt == "human" and console.is_terminal
        stop = _Stop()
        with _stopped_by_signals(stop):
            if on_screen:
                _follow_on_screen(session, console, stop, shown, redactor)
            else:
                _follow_in_lines(session, stop, fmt, shown, redactor)
    finally:
        session.close()
    result = session.result()
    if redactor is not None:
        from ..report.redact import redact

        # The final report with the placeholders of the lines already printed (the events are no longer
        # needed by the session: the follow is over).
        result.redaction = redact(result, redactor=redactor)
    common.print_accounting(result.stats, verbose_files=not quiet)
    if session.nothing_matched is not None:
        raise common.fail(name(str(session.nothing_matched)))
    codes = common.input_codes(result.stats)
    if result.stats.files_read:   # as analyze: no report when nothing was read
        final_report(result)
    return result, codes


def _ticks(session, stop: "_Stop") -> Iterator[list]:
    """The changes of each tick until a stop is asked for, then those of the last read."""
    while stop.signum is None:
        started = time.monotonic()
        yield session.step()
        # Behind the writer (a big file at the start, a burst): read on at once; a diagnosis that ended in the
        # background: its findings now.
        while (stop.signum is None and not session.follower.behind and not session.diagnosed
               and time.monotonic() - started < TICK_S):
            time.sleep(_SLICE_S)
    yield session.step(final=True)


def _same(text: str) -> str:
    return text


def _follow_in_lines(session, stop: "_Stop", fmt: str, shown, redactor=None) -> None:
    name = redactor.text if redactor is not None else _same
    for changes in _ticks(session, stop):
        for note in session.take_notes():
            stderr.print(Text(f"note: {visible(name(note), False)}"))
        if not changes:
            continue
        analysis = getattr(session, "analysis", None)
        clusters = {g.timeline.group: g.timeline.cluster for g in analysis.groups} if analysis is not None else {}
        try:
            for change in changes:
                print(shown.json_line(change, redactor, clusters.get(change.finding.group)) if fmt == "json"
                      else shown.line(change, name))
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader of the lines went away (an alerter that died, `| head`): nothing will read
            # more; the follow ends as on Ctrl-C, its report going nowhere, its exit code kept.
            quiet_stdout()
            stop.signum = signal.SIGPIPE


def _follow_on_screen(session, console: Console, stop: "_Stop", shown, redactor=None) -> None:
    from rich.live import Live as LiveDisplay

    name = redactor.text if redactor is not None else _same
    notes: list[str] = []
    with LiveDisplay(shown.screen(session, notes, name), console=console, refresh_per_second=4,
                     transient=True, redirect_stderr=False) as display:
        for _ in _ticks(session, stop):
            notes += session.take_notes()
            display.update(shown.screen(session, notes, name))
    for note in notes:
        stderr.print(Text(f"note: {visible(name(note), False)}"))


__all__ = ["TICK_S", "run"]
