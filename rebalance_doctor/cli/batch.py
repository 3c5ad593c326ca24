"""`rebalance-doctor batch`: the archive job on Spark (events, rebalances, findings as Parquet)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import common, redaction
from .choices import SummaryFormat, value
from .common import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USAGE, Text, stderr
from .engine import ConfOpt, MasterOpt, RemoteOpt, announce


def batch(
    paths: Annotated[list[str], typer.Argument(help="Log files or directories, local or Hadoop URLs (hdfs://, s3a://, abfss://, ...).",
                                               show_default=False)],
    out: Annotated[str, typer.Option("--out", "-o", help="Output directory (created; re-runs append what is new).",
                                     show_default=False)],
    by_host: Annotated[bool, typer.Option("--by-host", help="Partition the events table by host as well as by date.")] = False,
    config_file: common.ConfigOpt = None,
    master: MasterOpt = None,
    conf: ConfOpt = None,
    remote: RemoteOpt = None,
    tz: common.TzOpt = "UTC",
    host_tz: common.HostTzOpt = None,
    host: common.HostOpt = None,
    layout: common.LayoutOpt = None,
    packs: common.PacksOpt = None,
    kafka_version: common.KafkaVersionOpt = None,
    base_date: common.BaseDateOpt = None,
    cluster: common.ClusterOpt = None,
    fmt: Annotated[SummaryFormat, typer.Option("--format", "-f", help="The summary on stdout: human, or JSON.")] = SummaryFormat.human,
    redact: Annotated[bool, typer.Option("--redact", hidden=True)] = False,
    redact_key: Annotated[Optional[str], typer.Option("--redact-key", hidden=True)] = None,
    redact_map: Annotated[Optional[Path], typer.Option("--redact-map", hidden=True)] = None,
    quiet: common.QuietOpt = False,
) -> None:
    """Analyze an archive of logs on Spark into Parquet tables: events (partitioned by date),
    rebalances and findings, plus summary.json. Re-runs read only new or grown files.

    Exits 0 when the run completed (findings are in the tables, not in the exit code), 2 on a
    usage error or when nothing at all could be read, 5 when Spark cannot run (no Java, no
    pyspark, a master or Connect server out of reach, executors without a dependency).
    Progress goes to stderr. --redact is refused (exit 2): the tables are the archive's data; redact the
    report made from them (analyze --redact, query --redact over the logs).
    """
    fmt = value(fmt)
    # Its output is data kept for later queries (re-runs append to it), not a report to hand over: redacting
    # it would lose the names for good. Asked for, it is refused in one line rather than ignored.
    redaction.refuse("for batch", "its tables are the archive's data, kept for later runs; redact the report made "
                     "from them (query --redact over the logs, analyze --redact)", redact, redact_key, redact_map)
    if master and remote:
        raise common.fail("--master and --remote exclude each other (a Spark Connect server has its own master)")
    from ..engines.choose import SparkUnavailable, remote_url, spark_available

    missing = spark_available(remote=bool(remote_url(remote)) and not master)
    if missing:
        raise common.fail(f"batch runs on Spark: {missing}", EXIT_ENVIRONMENT)
    options = common.read_options(tz, host_tz, host, layout, packs, kafka_version, 1, base_date, clusters=cluster)
    # Imported here, not at the top: pyspark and pyarrow cost every other command ~60 MB and
    # 0.3 s of start-up (and every forked worker of `events --jobs N` carries them).
    from ..batch import BatchError, run_batch
    from ..core.packs import PackError
    from ..core.toml import DataFileError
    from ..engines import spark as spark_engine
    from ..rules import config as rule_config

    try:
        config = rule_config.load(config_file)
        settings = spark_engine.parse_conf(conf)
        announce("batch", master, remote, quiet)
        progress = None if quiet else (lambda message: stderr.print(Text(f"batch: {message}")))
        with spark_engine.session(master, settings, remote=remote) as spark:
            summary = run_batch(spark, paths, out, options, config, by_host=by_host, progress=progress)
    except SparkUnavailable as exc:
        raise common.fail(str(exc), EXIT_ENVIRONMENT)
    except (BatchError, PackError, DataFileError, ValueError) as exc:
        raise common.fail(str(exc))
    except OSError as exc:
        raise common.fail(f"cannot write {out}: {exc.strerror or exc}")
    stats = summary.pop("stats")
    common.print_accounting(stats, verbose_files=not quiet)
    if fmt == "json":
        typer.echo(json.dumps(summary, indent=2, default=str))
    else:
        _print(summary)
    if stats.files_read == 0 and not summary["files"].get("unchanged"):
        stderr.print(Text("error: nothing could be read"))
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_OK)


def _print(summary: dict) -> None:
    run, table, files = summary["run"], summary["table"], summary["files"]
    decided = ", ".join(f"{n} {kind}" for kind, n in files.items()) or "no files"
    typer.echo(f"batch: {decided}; {run['events']:,} events appended in {run['seconds']:.1f}s")
    severity = ", ".join(f"{n} {s}" for s, n in table["by_severity"].items()) or "none"
    # (groups: the names the events log; the diagnosis keys them by cluster when the archive holds several)
    clusters = f"; groups keyed by cluster: {', '.join(table['clusters'])}" if table.get("clusters") else ""
    typer.echo(f"archive: {table['events']:,} events, {table['groups']} groups, {table['rebalances']:,} rebalances, "
               f"{table['findings']:,} findings ({severity}){clusters}")
    for finding in table["top"]:
        typer.echo(f"  {finding['severity']:8} {finding['group']:24} {finding['rule']:28} "
                   f"{finding['start'] or '-':32} {finding['title']}")
    for name in summary.get("changed", []):
        typer.echo(Text(f"note: {name} changed in place and was read again whole; "
                        f"its earlier events are still in the table").plain)
    if summary.get("outdated"):
        typer.echo(f"note: {len(summary['outdated'])} files were read again with the current packs "
                   f"(packs or events schema changed); their earlier events were replaced")
    if summary.get("stale"):
        typer.echo(f"note: {len(summary['stale'])} files read by earlier packs are no longer under the inputs; "
                   f"their events stay as those packs read them")
    if summary.get("columns_added"):
        typer.echo(f"note: columns added to the events table: {', '.join(summary['columns_added'])} "
                   f"(null in earlier files; read the table with mergeSchema)")
    out = summary["out"].rstrip("/")
    typer.echo(f"wrote {out}/events, {out}/rebalances, {out}/findings, {out}/manifest, {out}/runs")
