"""Options and helpers shared by the commands that read logs; exit codes live here.

Exit codes (every command; ../README.md and ../docs/layouts.md say the same):

    0  clean
    1  findings at or above --fail-on (analyze), problems found (patterns check), no pattern (patterns test)
    2  usage error: a bad option or data file, an input that does not exist or cannot be read as
       a log (a terminal, a device), nothing at all to read, nothing of Kafka read (no_kafka_line),
       an output path that cannot be written (its directory missing, no permission, a read-only
       filesystem) or is not a regular file (a device, a FIFO, a directory)
    3  input was lost (corrupt, truncated or unreadable data, a file cut short or replaced while
       read) and nothing at or above --fail-on was found
    4  internal error (a bug: one line and a bug-report hint; the traceback with --debug)
    5  environment: something the run needs is missing (an extra, Java, Spark, a temporary directory),
       or the machine failed while writing an output (a full disk, an I/O error)
    128+N  stopped by signal N (SIGHUP 129, SIGINT 130, SIGTERM 143), cleaned up (app.main)

When several hold, the first of 4, 2, 5, 1, 3 wins: findings are the answer, and 3 says that a
clean-looking verdict rests on incomplete input. The accounting always lists what was lost.
"""

from __future__ import annotations

import contextlib
import os
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Iterator, NoReturn, Optional

from typing import TYPE_CHECKING

import typer
import typer.exceptions

from ..core.exceptions import is_machine_error
from ..report.safe_text import visible
from .choices import complete_layout, layout_names

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from ..core.options import ReadOptions
    from ..core.stats import RunStats

# Start-up: this module is imported for `--help` and before any command's arguments are checked.
# rich (~30 ms with its tables and progress bars), the readers' modules and their errors are
# imported where they are used, so `--help` and a usage error do not pay for them.

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INPUT_LOST = 3
EXIT_INTERNAL = 4
EXIT_ENVIRONMENT = 5
PRECEDENCE = (EXIT_INTERNAL, EXIT_USAGE, EXIT_ENVIRONMENT, EXIT_FINDINGS, EXIT_INPUT_LOST)
EXIT_CODES_HELP = ("Exit codes: 0 clean; 1 findings at or above --fail-on; 2 usage error (an output that "
                   "cannot be written included); 3 input was lost "
                   "(corrupt, truncated, unreadable) and nothing at or above --fail-on was found; 4 internal "
                   "error; 5 something the run needs is missing (memory included), or a full disk. When several hold: 4, 2, 5, 1, 3.")
EXIT_FAILED = EXIT_INTERNAL  # the name before the contract: a --jobs worker that died
DEBUG_VARIABLE = "REBALANCE_DOCTOR_DEBUG"
debug = os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")



def Text(*args, **kwargs):  # noqa: N802 - stands for rich's class, which it returns
    """rich's ``Text`` (a message printed as it is, no markup), imported on the first message."""
    from rich.text import Text as RichText

    return RichText(*args, **kwargs)


class _Stderr:
    """The stderr console, a rich ``Console`` made on first use (see ``console``)."""

    _console: "Console | None" = None

    def console(self) -> "Console":
        if self._console is None:
            from rich.console import Console

            # soft_wrap: a message is one line however narrow the terminal, so it can be grepped and
            # tested. Redirected to a file or a CI log there is no terminal width: do not squeeze
            # tables into 80 columns.
            self._console = Console(stderr=True, highlight=False, soft_wrap=True,
                                    width=None if sys.stderr.isatty() else 160)
        return self._console

    def __getattr__(self, name: str):
        return getattr(self.console(), name)


stderr = _Stderr()


def console_of(console) -> "Console":
    """The rich Console behind ``stderr`` (tests put a Console there themselves)."""
    return console.console() if isinstance(console, _Stderr) else console

PathsArg = Annotated[list[str], typer.Argument(help="Log files, directories, bundles (.zip, .tar.gz), or - for stdin.",
                                               show_default=False)]
TzOpt = Annotated[str, typer.Option("--tz", help="Zone of timestamps written without one (IANA name or +01:00).")]
HostTzOpt = Annotated[Optional[list[str]], typer.Option("--host-tz", help="Per-host zone override, HOST=ZONE (repeatable).")]
HostOpt = Annotated[Optional[str], typer.Option("--host", help="Host name for every input and line (default: from paths, and per line from docker compose and kubectl --prefix prefixes).")]
LayoutOpt = Annotated[Optional[str], typer.Option(
    "--layout", autocompletion=complete_layout, metavar="LAYOUT",
    help="A shipped layout (" + ", ".join(layout_names()) + ") or a log4j/logback conversion "
         "pattern, e.g. '%d{ISO8601} %-5p [%t] %c - %m%n'.")]
PacksOpt = Annotated[Optional[list[Path]], typer.Option("--packs", help="Extra pattern pack file or directory (repeatable).")]
KafkaVersionOpt = Annotated[Optional[str], typer.Option("--kafka-version", help="Pin the Kafka version of every file.")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (files and byte ranges of large files run in parallel).")]
BaseDateOpt = Annotated[Optional[str], typer.Option("--date", help="Date (YYYY-MM-DD) for layouts that write only the time of day.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary line of the accounting, and the inputs that were skipped (never hidden).")]
ClusterOpt = Annotated[Optional[list[str]], typer.Option(
    "--cluster", metavar="NAME=PATH",
    help="The files under PATH (a directory or file among the inputs; with Spark also a Hadoop URL under an input "
         "URL) are of the Kafka cluster NAME (repeatable): "
         "groups are then keyed by cluster (prod/orders, staging/orders). Without it, clusters come from the "
         "cluster ids the logs print, and a single cluster is not split.")]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML file overriding rule thresholds (tables named by rule id).")]


def read_options(tz: str, host_tz: list[str] | None, host: str | None, layout: str | None,
                 packs: list[Path] | None, kafka_version: str | None, jobs: int,
                 base_date: str | None = None, outputs: list | None = None,
                 clusters: list[str] | None = None) -> ReadOptions:
    """The reading options, checked here so that a bad value is a usage error before any
    reading (not an error in a worker). ``outputs``: the run's output files, never read as input."""
    from ..core import timestamps
    from ..core.options import ReadOptions
    from ..core.timestamps import TimestampError
    from ..engines.choose import is_remote

    zones = {}
    for item in host_tz or []:
        if "=" not in item:
            raise typer.BadParameter(f"--host-tz takes HOST=ZONE, got {item!r}")
        name, zone = item.split("=", 1)
        zones[name] = zone
    for option, zone in [("--tz", tz)] + [(f"--host-tz {h}", z) for h, z in zones.items()]:
        try:
            timestamps.zone(zone)
        except TimestampError as exc:
            raise typer.BadParameter(f"{option}: {exc}")
    named = {}
    for item in clusters or []:
        name, _, path = item.partition("=")
        if not name or not path or "/" in name:
            raise typer.BadParameter(f"--cluster takes NAME=PATH (a NAME without /), got {item!r}")
        if not is_remote(path) and not Path(path).exists():   # a Hadoop URL (batch): Spark lists it
            raise typer.BadParameter(f"--cluster {name}: {path} does not exist")
        named[path] = name
    if base_date:
        try:
            date.fromisoformat(base_date)
        except ValueError:
            raise typer.BadParameter(f"--date takes YYYY-MM-DD, got {base_date!r}")
    return ReadOptions(tz=tz, host_tz=zones, host=host, layout=layout, packs=list(packs or []),
                       kafka_version=kafka_version, jobs=jobs, base_date=base_date,
                       exclude=[str(o) for o in outputs or [] if o and str(o) != "-"], clusters=named)


def worst(codes: list[int]) -> int:
    """The exit code when several hold (``PRECEDENCE``); 0 when none."""
    return next((code for code in PRECEDENCE if code in codes), EXIT_OK)


@contextlib.contextmanager
def errors() -> Iterator[None]:
    """Turn the library's errors into a one-line message and their exit code. Anything else is
    a bug: it goes on to ``app.main``, which reports it as an internal error (4)."""
    from ..core.conversion import ConversionError
    from ..core.exceptions import EnvironmentMissing, UsageError
    from ..core.timestamps import TimestampError
    from ..core.toml import DataFileError
    from ..core.writers import CannotWrite, OutputError
    from ..engines.choose import EngineError, SparkUnavailable
    from ..engines.workers import WorkersFailed

    try:
        yield
    except (typer.Exit, typer.exceptions.TyperException):
        raise
    except (EnvironmentMissing, SparkUnavailable) as exc:
        raise fail(str(exc), EXIT_ENVIRONMENT)
    except WorkersFailed as exc:
        raise fail(str(exc), EXIT_ENVIRONMENT if exc.environment else EXIT_INTERNAL)
    except CannotWrite as exc:
        raise fail(str(exc), EXIT_ENVIRONMENT if is_machine_error(exc) else EXIT_USAGE)
    except (DataFileError, OutputError, EngineError, TimestampError, ConversionError, UsageError) as exc:
        raise fail(str(exc), EXIT_USAGE)
    except ImportError as exc:  # an optional dependency (pyarrow, zstandard, pyspark) is missing
        raise fail(f"a dependency is missing: {exc}", EXIT_ENVIRONMENT)


def input_codes(stats: RunStats) -> list[int]:
    """Exit codes the inputs call for, each said once on stderr: inputs that do not exist or
    were refused (2), nothing to read (2, or 3 when it was lost to damage only), lost input (3)."""
    codes = []
    for item in stats.usage_errors():
        stderr.print(Text(f"error: {visible(item['source'])}: {visible(item['reason'])}"))
        codes.append(EXIT_USAGE)
    lost = stats.lost_input()
    if lost:
        shown = ", ".join(visible(name) for name in lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        stderr.print(Text(f"warning: input was lost in {len(lost)} file(s) ({shown}); see the accounting above"))
        codes.append(EXIT_INPUT_LOST)
    if stats.files_read == 0 and not stats.usage_errors():
        stderr.print(Text("error: nothing could be read"))
        # Lost to damage alone, nothing read is lost input (3); an archive nested too deep is the
        # user's to unpack, like a refused input (2, which wins over 3).
        if not lost or any(s.get("kind") == "too-deep" for s in stats.skipped):
            codes.append(EXIT_USAGE)
    elif stats.files and no_kafka_line(stats):
        lines = sum(f.lines for f in stats.files)
        stderr.print(Text(f"error: no Kafka log line in the input: read {len(stats.files)} file(s), {lines:,} lines, "
                          f"none in a log layout this tool knows and none with a Kafka message (not Kafka logs? "
                          f"--layout PATTERN reads another layout)"))
        codes.append(EXIT_USAGE)
    return codes


def withhold_outputs(stats: RunStats) -> bool:
    """Whether the run's output files are withheld: an input given does not exist (a typo: the
    output would look like the whole answer), or nothing read is a Kafka log. A refused file met
    inside a directory (a FIFO) is still exit 2, but the rest was read and is written."""
    return any(s.get("kind") == "missing" for s in stats.skipped) or (bool(stats.files) and no_kafka_line(stats))


def no_kafka_line(stats: RunStats) -> bool:
    """Nothing read looks like a Kafka log (`analyze /etc`): every file read with the generic
    layout (no known layout recognised, none given), and no event or near miss in any. Is a
    usage error (2): a script must not read it as a clean run."""
    from ..core.layouts import GENERIC

    return all(f.layout.split(",")[0] == GENERIC.name and not f.events and not f.near_misses for f in stats.files)


def progress_bar(enabled: bool) -> Progress | None:
    if not enabled or not stderr.is_terminal:
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    return Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), TimeRemainingColumn(), console=console_of(stderr), transient=True)


def print_accounting(stats: RunStats, verbose_files: bool = True) -> None:
    """The end-of-run accounting on stderr: what was read, found and skipped (nothing silent).

    Every name and reason that came from an input is escaped (``visible``): a file name or a
    log line can hold terminal escape sequences."""
    from rich.table import Table

    from ..core import cache
    from ..report.accounting import fit, time_phrase

    d = stats.to_dict()
    lost = _lost_summary(d)
    stderr.print(Text(
        f"read {d['files_read']} file(s), {_size(d['bytes'])}, {d['lines']:,} lines in {d['seconds']:.2f}s; "
        f"{d['candidates']:,} candidate records, {d['events']:,} events, "
        f"{d['near_misses']:,} near misses; {len(d['skipped'])} skipped" + (f"; {lost}" if lost else "")
        + (f"; times: {times}" if (times := time_phrase(d["time"])) else "")))
    if verbose_files and stats.files:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for column in ("file", "host", "layout", "kafka", "events", "near misses", "notes"):
            # Paths and hosts are copied from here into commands: never break them mid-name.
            table.add_column(column, overflow="fold", no_wrap=column in ("file", "host", "layout"))
        for f in stats.files:
            notes = "; ".join(f.problems[:3]) + (f" (+{len(f.problems) - 3} more)" if len(f.problems) > 3 else "")
            if f.non_utf8_records:
                notes = (notes + "; " if notes else "") + f"{f.non_utf8_records} records with non-UTF-8 bytes"
            unread = ", ".join(f"{_size(n)} {reason}" for reason, n in sorted(f.unread.items()) if n)
            if unread:
                notes = (notes + "; " if notes else "") + f"not text: {unread}"
            layout = f.layout + (f" in {f.container}" if f.container else "")
            table.add_row(Text(visible(f.source, False)), Text(visible(f.host, False)), Text(layout),
                          Text(f.kafka_version or "-"), str(f.events), str(f.near_misses),
                          Text(visible(notes, False)))
        stderr.print(fit(table, console_of(stderr)), soft_wrap=False)  # stacked where the columns do not fit
    if stats.executors:
        where = ", ".join(f"{e['executor']} on {e['host']} ({e.get('units', 0)} units)" for e in stats.executors)
        pythons = ", ".join(sorted({e["python"] for e in stats.executors}))
        stderr.print(Text(f"spark executors: {visible(where, False)}; Python {visible(pythons, False)}"))
    for item in stats.warnings:
        stderr.print(Text(f"warning: {visible(item['source'], False)}: {visible(item['message'], False)}"))
    for item in stats.skipped:
        stderr.print(Text(f"skipped: {visible(item['source'], False)}: {visible(item['reason'], False)}"))
    for note in cache.notes:
        stderr.print(Text(f"note: {visible(note, False)}"))


def _lost_summary(d: dict) -> str:
    """What did not become text, in one phrase: "lost: 12.0 KiB corrupt, 1 truncated; not text: ..."."""
    parts = []
    lost = {reason: n for reason, n in d["lost"].items()}
    skipped = {}
    for item in d["skipped"]:
        if item.get("kind") in ("unreadable", "corrupt", "truncated", "too-deep"):
            skipped[item["kind"]] = skipped.get(item["kind"], 0) + 1
    if lost or skipped:
        pieces = [f"{_size(n)} {reason}" if n else reason for reason, n in sorted(lost.items())]
        pieces += [f"{n} file(s) {kind}" for kind, n in sorted(skipped.items())]
        parts.append("input lost: " + ", ".join(pieces))
    unread = {reason: n for reason, n in d["unread"].items() if n}
    if unread:
        parts.append("not text: " + ", ".join(f"{_size(n)} {reason}" for reason, n in sorted(unread.items())))
    if d.get("regex_timeouts"):
        parts.append(f"{d['regex_timeouts']} regex timeout(s)")
    if d.get("regex_skipped"):
        parts.append(f"{d['regex_skipped']} regex call(s) not made (regex time budget spent)")
    return "; ".join(parts)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def fail(message: str, code: int = EXIT_USAGE) -> "typer.Exit":
    stderr.print(Text(f"error: {visible(message, keep_newlines=True)}"))
    return typer.Exit(code)


def internal_error(exc: BaseException) -> int:
    """Report a bug: one line with what to send, the traceback only with --debug."""
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    what = "ran out of memory" if isinstance(exc, MemoryError) else f"{type(exc).__name__}: {exc}"
    stderr.print(Text(f"error: internal error ({visible(what, keep_newlines=False)[:300]}). This is a bug in "
                      f"rebalance-doctor: please report it with the command line, `rebalance-doctor --version` "
                      f"and the output of the same command run with --debug (the traceback)."))
    return EXIT_INTERNAL


def say_when_waiting_for_stdin(paths: list[str]) -> None:
    """`-` read from a terminal waits for typed or pasted lines: say so instead of hanging silently."""
    if "-" in paths and sys.stdin is not None and sys.stdin.isatty():
        stderr.print(Text("reading logs from standard input (a terminal): paste them, then press Ctrl-D; "
                          "or pipe them in, e.g. kubectl logs POD | rebalance-doctor analyze -"))


def is_stdout(path: str) -> bool:
    return path == "-" or path == "/dev/stdout" or (path == sys.stdout.name)
