"""`rebalance-doctor events`: export the events table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from ..core.packs import PackError
from ..core.schema import COLUMNS
from ..core.toml import DataFileError
from ..core.writers import EventWriter, OutputError, format_for
from ..engines.workers import WorkersFailed
from . import common
from .engine import ConfOpt, EngineError, EngineOpt, MasterOpt, RemoteOpt, SparkUnavailable, read_with_engine
from .choices import EventsFormat, value
from .common import EXIT_OK, EXIT_USAGE, stderr
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
    layout: common.LayoutOpt = None,
    packs: common.PacksOpt = None,
    kafka_version: common.KafkaVersionOpt = None,
    jobs: common.JobsOpt = 1,
    base_date: common.BaseDateOpt = None,
    engine: EngineOpt = "auto",
    master: MasterOpt = None,
    conf: ConfOpt = None,
    remote: RemoteOpt = None,
    quiet: common.QuietOpt = False,
) -> None:
    """Turn every rebalance-related log record into a row of the events table."""
    options = common.read_options(tz, host_tz, host, layout, packs, kafka_version, jobs, base_date)
    common.say_when_waiting_for_stdin(paths)
    try:
        fmt = format_for(out, value(fmt))
        bar = common.progress_bar(not quiet)
        stream, stats = None, None
        if bar is not None:
            bar.start()
            task = bar.add_task("scanning", total=None)
            stream, stats = read_with_engine(paths, options, engine, master, conf,
                                             progress=lambda n: bar.advance(task, n), quiet=quiet, remote=remote)
        else:
            stream, stats = read_with_engine(paths, options, engine, master, conf, quiet=quiet, remote=remote)
        with EventWriter(out, fmt) as writer:
            for batch in stream:
                writer.write(batch)
        if bar is not None:
            bar.stop()
    except (PackError, DataFileError, OutputError, EngineError, ValueError) as exc:
        raise common.fail(str(exc))
    except WorkersFailed as exc:
        raise common.fail(str(exc), common.EXIT_FAILED)
    except SparkUnavailable as exc:
        raise common.fail(str(exc), common.EXIT_ENVIRONMENT)
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): it has what it wanted; stop quietly.
        quiet_stdout()
        raise typer.Exit(EXIT_OK)
    except OSError as exc:
        raise common.fail(f"cannot write {out}: {exc.strerror or exc}")
    common.print_accounting(stats, verbose_files=not quiet)
    if stats_file:
        stats_file.write_text(json.dumps(stats.to_dict(), indent=2) + "\n")
    if unmatched:
        with open(unmatched, "w", encoding="utf-8") as handle:
            for f in stats.files:
                for miss in f.near_miss_samples:
                    handle.write(json.dumps({"source": miss.source, "line": miss.line,
                                             "closest": miss.closest, "text": miss.text}) + "\n")
    if stats.files_read == 0:
        stderr.print(Text("error: nothing could be read"))
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_OK)


def schema() -> None:
    """Print the events table's columns, types and meanings."""
    with payload():
        for column in COLUMNS:
            typer.echo(f"{column.name:14} {column.kind:10} {column.doc}")
