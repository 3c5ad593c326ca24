"""`rebalance-doctor events`: export the events table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import common, redaction
from .engine import ConfOpt, EngineOpt, MasterOpt, RemoteOpt, read_with_engine
from .choices import EventsFormat, value
from .common import EXIT_OK
from .output import payload, quiet_stdout


def events(
    paths: common.PathsArg,
    out: Annotated[str, typer.Option("--out", "-o", help="Output file: .jsonl, .csv or .parquet; - for JSONL on stdout.")] = "-",
    fmt: Annotated[Optional[EventsFormat], typer.Option("--format", help="Default: from --out's extension (JSONL for -).")] = None,
    stats_file: Annotated[Optional[Path], typer.Option("--stats", help="Write the run's accounting as JSON to this file.")] = None,
    unmatched: Annotated[Optional[Path], typer.Option("--unmatched", help="Write near misses (records with a gate literal that no pattern matched) as JSONL.")] = None,
    tz: common.TzOpt = "UTC",
    host_tz: common.HostTzOpt = None,
    host: common.HostOpt = None,
    cluster: common.ClusterOpt = None,
    layout: common.LayoutOpt = None,
    packs: common.PacksOpt = None,
    kafka_version: common.KafkaVersionOpt = None,
    jobs: common.JobsOpt = 1,
    base_date: common.BaseDateOpt = None,
    engine: EngineOpt = "auto",
    master: MasterOpt = None,
    conf: ConfOpt = None,
    remote: RemoteOpt = None,
    redact: redaction.RedactOpt = False,
    redact_key: redaction.RedactKeyOpt = None,
    redact_map: redaction.RedactMapOpt = None,
    quiet: common.QuietOpt = False,
) -> None:
    """Turn every rebalance-related log record into a row of the events table.

    With --redact every identifier in the rows (columns, attrs, the line's text), in --stats,
    --unmatched and the accounting is a placeholder (as analyze --redact; docs/analyze.md).

    Exit codes: 0 read, 2 usage error (an output path that cannot be written, read-only included)
    or nothing to read, 3 input was lost (corrupt, truncated, unreadable; see the accounting), 4
    internal error, 5 something missing (an extra, Java, Spark) or a full disk. A run that fails
    leaves none of its output files (-o, --stats, --unmatched).
    """
    from ..core.writers import EventWriter, check_target, format_for, one_run, write_atomic

    options = common.read_options(tz, host_tz, host, layout, packs, kafka_version, jobs, base_date,
                                  outputs=[out, stats_file, unmatched], clusters=cluster)
    if redaction.asked(redact, redact_key, redact_map) and (value(engine) == "spark" or master or remote):
        redaction.refuse("with the Spark engine", "the rows are redacted as they are read, in this process; "
                         "use --engine local", redact, redact_key, redact_map)
    redaction.check_map(redact_map)
    redactor = redaction.redactor(redact, redact_key, redact_map)
    common.say_when_waiting_for_stdin(paths)
    try:
        with common.errors():
            for target in (out, stats_file, unmatched):   # refused before anything is read
                if target is not None:
                    check_target(target)
            fmt = format_for(out, value(fmt))
            bar = common.progress_bar(not quiet)
            try:
                if bar is not None:
                    bar.start()
                    task = bar.add_task("scanning", total=None)
                    stream, stats = read_with_engine(paths, options, engine, master, conf,
                                                     progress=lambda n: bar.advance(task, n), quiet=quiet,
                                                     remote=remote)
                else:
                    stream, stats = read_with_engine(paths, options, engine, master, conf, quiet=quiet, remote=remote)
                with one_run():   # the events, --stats and --unmatched files: all or none
                    with EventWriter(out, fmt) as writer:
                        for batch in stream:
                            if redactor is not None:
                                batch = _redacted(batch, redactor)
                            writer.write(batch)
                    if redactor is not None:
                        _redact_stats(stats, redactor)
                    if bar is not None:
                        bar.stop()
                        bar = None
                    common.print_accounting(stats, verbose_files=not quiet)
                    if stats_file:
                        write_atomic(stats_file, json.dumps(stats.to_dict(), indent=2) + "\n")
                    if unmatched:
                        write_atomic(unmatched, "".join(
                            json.dumps({"source": miss.source, "line": miss.line, "closest": miss.closest,
                                        "text": miss.text}) + "\n"
                            for f in stats.files for miss in f.near_miss_samples))
                    if redact_map is not None:
                        redactor.write_mapping(redact_map)
                    codes = common.input_codes(stats)
                    if common.withhold_outputs(stats):   # a missing input: no output looks complete
                        raise _Discarded()
            finally:
                if bar is not None:
                    bar.stop()
    except _Discarded:
        raise typer.Exit(common.worst(codes))
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): it has what it wanted; stop quietly.
        quiet_stdout()
        raise typer.Exit(EXIT_OK)
    raise typer.Exit(common.worst(codes))


def _redacted(batch, redactor):
    from ..core.batches import EventBatch
    from ..report.redact import redact_rows

    rows = batch.rows() if isinstance(batch, EventBatch) else list(batch)
    return EventBatch(rows=redact_rows(rows, redactor))


def _redact_stats(stats, redactor) -> None:
    """The accounting names files (hosts) and holds lines no pattern read: redacted like the rows, after
    them (every identifier is known by then)."""
    from ..report.redact import redact_value

    for f in stats.files:
        redactor.know(f.host, "host")
        for miss in f.near_miss_samples:
            redactor.know_text(miss.text)
    redact_value(stats, redactor)


class _Discarded(Exception):
    """The run's outputs are withdrawn (an input was missing or refused: exit code 2)."""


def schema() -> None:
    """Print the events table's columns, types and meanings."""
    from ..core.schema import COLUMNS

    with payload():
        for column in COLUMNS:
            typer.echo(f"{column.name:14} {column.kind:10} {column.doc}")
