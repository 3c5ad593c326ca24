"""`rebalance-doctor query SQL [PATHS]`: SQL over the events, rebalances, findings and files tables (DuckDB)."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..report.safe_text import visible
from . import common, redaction
from .choices import QueryOutput, value
from .common import EXIT_OK, EXIT_USAGE, Text, stderr
from .engine import ConfOpt, EngineOpt, MasterOpt
from .output import payload, report_console

EPILOG = """Tables: events (docs/events.md), rebalances and findings (docs/analyze.md), files (what was read
or skipped). Examples (docs/query.md has ten more):

  rebalance-doctor query "select trigger_kind, count(*) from rebalances group by 1" logs/

  rebalance-doctor query "select * from events where event = 'member.expired'" events.parquet -f csv

  rebalance-doctor query "select rule, severity, title from findings" /data/rebalances   # batch output
"""


def query(
    sql: Annotated[str, typer.Argument(help="One SQL statement (DuckDB's dialect) over the tables events, "
                                            "rebalances, findings and files; - reads it from standard input.",
                                       show_default=False)],
    paths: Annotated[Optional[list[str]], typer.Argument(
        help="Logs (files, directories, bundles, - for stdin), a Parquet file or directory written by "
             "`events --out`, or a `batch` output directory.", show_default=False)] = None,
    fmt: Annotated[Optional[QueryOutput], typer.Option("--format", "-f", help="A table for the terminal, CSV or "
                                                       "JSON (an array of objects).  [default: table]",
                                                       show_default=False)] = None,
    out: Annotated[str, typer.Option("--out", "-o", "--output", metavar="FILE",
                                     help="Write the result to FILE instead of stdout (as -o in events and batch). "
                                          "-o table|csv|json, the old spelling of --format, still works "
                                          "and says so.")] = "-",
    save: Annotated[Optional[Path], typer.Option("--save", metavar="FILE.duckdb", help="Also keep the four "
                                                 "tables in this DuckDB database for later sessions.")] = None,
    config_file: common.ConfigOpt = None,
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
    redact: redaction.RedactOpt = False,
    redact_key: redaction.RedactKeyOpt = None,
    redact_map: redaction.RedactMapOpt = None,
    quiet: common.QuietOpt = False,
) -> None:
    """SQL over the tables of the logs given: events, rebalances, findings, files (needs the query
    extra: pip install 'rebalance-doctor[query]').

    Exit 0 when the query ran, 2 on a usage error or bad SQL, 5 when DuckDB is not installed.

    With --redact the four tables hold placeholders instead of names (as analyze --redact), and the SQL's
    quoted literals are redacted the same way, so that WHERE "group" = 'orders' still finds group-A
    (not for a batch output directory: its tables are read as they are).
    """
    from .. import api
    from ..core.packs import PackError
    from ..core.toml import DataFileError
    from ..core.writers import check_target, one_run, write_atomic
    from ..engines.workers import WorkersFailed
    from ..query import tables as query_tables

    if out in {o.value for o in QueryOutput} and fmt is None:
        # `-o csv` meant the format before -o meant the output file in every command: still honoured.
        stderr.print(Text(f"note: -o {out} is the old spelling of --format {out}; -o now names an output file"))
        fmt, out = QueryOutput(out), "-"
    if out != "-":
        with common.errors():
            check_target(out)      # refused before anything is read

    try:
        query_tables.duckdb_module()
    except query_tables.MissingDuckDB as exc:
        raise common.fail(str(exc), common.EXIT_ENVIRONMENT)
    if not paths:
        raise common.fail("give the logs (or the events Parquet, or a batch output directory) to query")
    if sql == "-":
        if "-" in paths:
            raise common.fail("the SQL and the logs cannot both come from standard input")
        sql = sys.stdin.read()
    options = common.read_options(tz, host_tz, host, layout, packs, kafka_version, jobs, base_date, clusters=cluster)
    kind = query_tables.kind_of(paths)
    redacting = redaction.asked(redact, redact_key, redact_map)
    if kind == "batch":
        redaction.refuse("for a batch output directory", "its tables are read as batch wrote them; query the logs "
                         "or the events Parquet with --redact", redact, redact_key, redact_map)
    redaction.check_map(redact_map)
    secrets = {"redact": redacting, "redact_key": redaction.key_of(redact, redact_key, redact_map)}

    def analyze(**given):
        return api.analyze(config=config_file, **secrets, **given)

    try:
        if kind == "batch":
            tables = query_tables.from_batch(paths[0])
        elif kind == "parquet":
            tables = query_tables.from_events_parquet(paths, analyze)
        else:
            common.say_when_waiting_for_stdin(paths)
            result = api.analyze(
                paths, config=config_file, tz=options.tz, host_tz=options.host_tz, host=options.host,
                clusters=options.clusters,
                layout=options.layout, packs=options.packs, kafka_version=options.kafka_version,
                jobs=options.jobs, date=options.base_date, engine=value(engine), master=master, conf=conf,
                status=None if quiet else (lambda text: stderr.print(Text(text))), **secrets)
            common.print_accounting(result.stats, verbose_files=False)
            if result.stats.files_read == 0:
                stderr.print(Text("error: nothing could be read"))
                raise typer.Exit(EXIT_USAGE)
            tables = query_tables.from_analysis(result)
        if redacting:
            redactor = tables.redaction
            sql = _QUOTED.sub(lambda m: "'" + redactor.text(m[1].replace("''", "'")).replace("'", "''") + "'", sql)
            if redact_map is not None:
                with common.errors(), one_run():
                    redactor.write_mapping(redact_map)
        connection = query_tables.connect(tables, str(save) if save else ":memory:")
        columns, rows = query_tables.run(connection, sql)
    except (query_tables.QueryError, PackError, DataFileError, ValueError) as exc:
        raise common.fail(str(exc))
    except WorkersFailed as exc:
        raise common.fail(str(exc), common.EXIT_FAILED)
    except OSError as exc:
        raise common.fail(f"cannot write {save}: {exc.strerror or exc}" if save else str(exc))
    chosen = value(fmt) if fmt is not None else "table" if out == "-" else "csv"
    if chosen == "table" and out != "-":
        chosen = "csv"      # a terminal table in a file is of no use to anything that reads files
    with payload():
        if out != "-":
            text = _csv_text(columns, rows) if chosen == "csv" else _json_text(columns, rows)
            with common.errors(), one_run():
                write_atomic(check_target(out), text)
        elif chosen == "csv":
            sys.stdout.write(_csv_text(columns, rows))
        elif chosen == "json":
            sys.stdout.write(_json_text(columns, rows))
        else:
            _table(columns, rows)
    if save and not quiet:
        stderr.print(Text(f"saved the tables events, rebalances, findings, files to {save}"))
    connection.close()
    raise typer.Exit(EXIT_OK)


_QUOTED = re.compile(r"'((?:[^']|'')*)'")     # an SQL string literal ('' inside is a quote)


def _csv_text(columns, rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def _json_text(columns, rows) -> str:
    return json.dumps([dict(zip(columns, (_json_cell(v) for v in row))) for row in rows], indent=2) + "\n"


def _json_cell(value):
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_json_cell(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_cell(v) for k, v in value.items()}
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(_json_cell(value), ensure_ascii=False)
    return _json_cell(value)


def _cell(value):
    if value is None:
        return Text("")
    if isinstance(value, datetime):
        return Text(value.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
    if isinstance(value, (list, tuple, dict)):
        return Text(visible(json.dumps(_json_cell(value), ensure_ascii=False), keep_newlines=False))
    return Text(visible(str(value), keep_newlines=False))


def _table(columns: list[str], rows: list[tuple]) -> None:
    from rich.measure import Measurement
    from rich.table import Table

    from ..report.accounting import fit

    console = report_console()
    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in columns:
        table.add_column(visible(name), overflow="fold")
    for row in rows:
        table.add_row(*[_cell(v) for v in row])
    # When the columns cannot hold their longest words side by side (`select * from rebalances`,
    # 27 columns), rich would cut words and squeeze columns to two characters: one block per row.
    narrowest = Measurement.get(console, console.options.update_width(100_000), table).minimum
    console.print(table if narrowest <= console.width else fit(table, console))
    console.print(Text(f"{len(rows)} row(s)", style="dim"))
