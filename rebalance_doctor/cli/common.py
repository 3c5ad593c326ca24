"""Options and helpers shared by the commands that read logs; exit codes live here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table
from rich.text import Text

from ..core.options import ReadOptions
from ..core.stats import RunStats
from ..report.accounting import fit
from .choices import complete_layout, layout_names

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2  # bad usage, or nothing at all could be read
EXIT_FAILED = 3  # the run broke off: a worker died, or its temporary files could not be made or written
# The contract's names (notes/HELPERS.md 1); the reading contract's landing gives them their full use.
EXIT_INPUT_LOST = 3
EXIT_INTERNAL = 4
EXIT_ENVIRONMENT = 5  # environment missing: a JDK, pyarrow, an optional extra (DuckDB); Spark unreachable, executors lacking a dependency

# soft_wrap: a message is one line however narrow the terminal, so it can be grepped and tested.
# Redirected to a file or a CI log there is no terminal width: do not squeeze tables into 80 columns.
stderr = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)

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
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary line of the accounting.")]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML file overriding rule thresholds (tables named by rule id).")]


def read_options(tz: str, host_tz: list[str] | None, host: str | None, layout: str | None,
                 packs: list[Path] | None, kafka_version: str | None, jobs: int,
                 base_date: str | None = None) -> ReadOptions:
    zones = {}
    for item in host_tz or []:
        if "=" not in item:
            raise typer.BadParameter(f"--host-tz takes HOST=ZONE, got {item!r}")
        name, zone = item.split("=", 1)
        zones[name] = zone
    return ReadOptions(tz=tz, host_tz=zones, host=host, layout=layout, packs=list(packs or []),
                       kafka_version=kafka_version, jobs=jobs, base_date=base_date)


def progress_bar(enabled: bool) -> Progress | None:
    if not enabled or not stderr.is_terminal:
        return None
    return Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), TimeRemainingColumn(), console=stderr, transient=True)


def print_accounting(stats: RunStats, verbose_files: bool = True) -> None:
    """The end-of-run accounting on stderr: what was read, found and skipped (nothing silent)."""
    d = stats.to_dict()
    stderr.print(Text(
        f"read {d['files_read']} file(s), {_size(d['bytes'])}, {d['lines']:,} lines in {d['seconds']:.2f}s; "
        f"{d['candidates']:,} candidate records, {d['events']:,} events, "
        f"{d['near_misses']:,} near misses; {len(d['skipped'])} skipped"))
    if verbose_files and stats.files:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for column in ("file", "host", "layout", "kafka", "events", "near misses", "notes"):
            # Paths and hosts are copied from here into commands: never break them mid-name.
            table.add_column(column, overflow="fold", no_wrap=column in ("file", "host", "layout"))
        for f in stats.files:
            notes = "; ".join(f.problems[:3]) + (f" (+{len(f.problems) - 3} more)" if len(f.problems) > 3 else "")
            if f.non_utf8_records:
                notes = (notes + "; " if notes else "") + f"{f.non_utf8_records} records with non-UTF-8 bytes"
            layout = f.layout + (f" in {f.container}" if f.container else "")
            table.add_row(Text(f.source), Text(f.host), Text(layout), Text(f.kafka_version or "-"),
                          str(f.events), str(f.near_misses), Text(notes))
        stderr.print(fit(table, stderr), soft_wrap=False)  # stacked where the columns do not fit
    if stats.executors:
        where = ", ".join(f"{e['executor']} on {e['host']} ({e.get('units', 0)} units)" for e in stats.executors)
        pythons = ", ".join(sorted({e["python"] for e in stats.executors}))
        stderr.print(Text(f"spark executors: {where}; Python {pythons}"))
    for item in stats.warnings:
        stderr.print(Text(f"warning: {item['source']}: {item['message']}"))
    for item in stats.skipped:
        stderr.print(Text(f"skipped: {item['source']}: {item['reason']}"))


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def fail(message: str, code: int = EXIT_USAGE) -> "typer.Exit":
    stderr.print(Text(f"error: {message}"))
    return typer.Exit(code)


def say_when_waiting_for_stdin(paths: list[str]) -> None:
    """`-` read from a terminal waits for typed or pasted lines: say so instead of hanging silently."""
    if "-" in paths and sys.stdin is not None and sys.stdin.isatty():
        stderr.print(Text("reading logs from standard input (a terminal): paste them, then press Ctrl-D; "
                          "or pipe them in, e.g. kubectl logs POD | rebalance-doctor analyze -"))


def is_stdout(path: str) -> bool:
    return path == "-" or path == "/dev/stdout" or (path == sys.stdout.name)
