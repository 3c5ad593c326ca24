"""The public Python API: ``analyze(paths, **options) -> Analysis``; the CLI is built on it.

    import rebalance_doctor

    result = rebalance_doctor.analyze("fixtures/incidents/poll-timeout-storm/")
    result.answer.finding.rule              # 'poll-timeout'
    result.findings.to_pandas()             # one row per finding (pandas installed)
    result.events                           # the events table (pyarrow.Table)
    result.write_html("incident.html")      # the self-contained HTML report

Everything here raises (``AnalysisError`` and its kin, ``ValueError`` for a bad option); only
the command line turns errors into exit codes. docs/api.md documents it; names and fields only
ever grow.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import replace
from datetime import date as _date, datetime
from functools import cached_property
from pathlib import Path
from typing import IO, Callable, Iterable, Sequence

from . import result
from .core import collector, timestamps
from .core.options import ReadOptions
from .core.schema import NAMES, event_rows
from .core.stats import RunStats
from .diagnosis import analyze_events
from .engines.choose import EngineError, choose_engine
from .result import Rows
from .rules import config as rule_config
from .rules.config import AnalysisConfig
from .timeline.clusters import keyed_names, named_ids, settle as settle_clusters

__all__ = ["Analysis", "AnalysisError", "NothingMatched", "Rows", "analyze"]

Status = Callable[[str], None]


class AnalysisError(ValueError):
    """The analysis cannot be done as asked (the CLI: a usage error)."""


class NothingMatched(AnalysisError):
    """A filter (groups, --since/--until) matched none of the events that were read.

    ``available`` says what the input does hold: its groups and its time span.
    """

    def __init__(self, message: str, available: dict, stats: RunStats | None = None):
        super().__init__(message)
        self.available = available
        self.stats = stats


class Analysis(result.Analysis):
    """What ``analyze`` found (``result.Analysis``: groups, findings, rebalances, events, answer), with its
    renderings: JSON, Markdown and HTML (report/), and the accounting per file."""

    @cached_property
    def files(self):
        """The accounting per file (``pyarrow.Table``): what was read from each, and what was not."""
        from .report.accounting import files_table

        return files_table(self.stats)

    def to_dict(self) -> dict:
        """The JSON document of ``analyze --format json`` (docs/schema/analyze.json)."""
        from .report.json import document

        return document(self)

    def to_json(self, indent: int | None = 2) -> str:
        if indent == 2:   # the report's own form, encoded faster than json.dumps does with an indent
            from .report import jsontext
            from .report.json import document

            return jsontext.dumps(document(self, lazy=True))
        return json.dumps(self.to_dict(), indent=indent)

    def write_json(self, stream: IO[str]) -> None:
        """Write ``to_json()`` to ``stream`` a group and a rebalance at a time, never holding the
        whole document (``analyze --format json``)."""
        from .report.json import write

        write(self, stream)

    def to_markdown(self) -> str:
        """The Markdown report (``--format markdown``), for a ticket or an issue."""
        from .report.markdown import render

        return render(self)

    def to_html(self) -> str:
        """The self-contained HTML report (``--html FILE``) as a string."""
        from .report.html import render

        return render(self)

    def write_html(self, path: str | os.PathLike) -> None:
        """Write the HTML report to ``path`` (atomically: a complete file or none)."""
        from .report.html import write

        write(self, Path(path))

    def _repr_html_(self) -> str:  # Jupyter
        from .report.html import summary_fragment

        return summary_fragment(self)


def analyze(
    paths: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    *,
    events=None,
    groups: Iterable[str] | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    config: AnalysisConfig | str | os.PathLike | None = None,
    tz: str = "UTC",
    host_tz: dict[str, str] | None = None,
    host: str | None = None,
    clusters: dict[str, str] | None = None,
    layout: str | None = None,
    packs: Iterable[str | os.PathLike] | None = None,
    kafka_version: str | None = None,
    jobs: int = 1,
    date: str | _date | None = None,
    engine: str = "auto",
    master: str | None = None,
    conf: dict[str, str] | Iterable[str] | None = None,
    status: Status | None = None,
    remote: str | None = None,
    redact: bool = False,
    redact_key: str | bytes | None = None,
) -> Analysis:
    """Read the logs at ``paths`` (files, directories, bundles, ``"-"`` for stdin; Hadoop URLs
    with Spark) and diagnose every group in them.

    Or give ``events``, an events table already read (a ``pyarrow.Table`` with the
    ``core/schema.py`` columns, e.g. ``pyarrow.parquet.read_table("events.parquet")``, or a list
    of event dicts), instead of ``paths``.

    ``groups``, ``since`` and ``until`` restrict the diagnosis (times: ``datetime`` or ISO 8601
    text, read in ``tz`` when they carry no zone); a filter that matches nothing raises
    ``NothingMatched``. ``config``: an ``AnalysisConfig``, or a TOML file of threshold
    overrides; by default the shipped thresholds with the ``[tool.rebalance-doctor]`` tables of
    ``./pyproject.toml`` on top (``Analysis.config.sources`` says which were used). The other
    options are those of ``rebalance-doctor analyze`` (``--tz``, ``--host-tz``, ``--host``,
    ``--layout``, ``--packs``, ``--kafka-version``, ``--jobs``, ``--date``, ``--engine``,
    ``--master``, ``--conf``, ``--remote``); ``clusters``: ``--cluster NAME=PATH`` as {PATH: NAME}. ``status`` receives one-line progress notes (engine
    chosen).

    ``redact=True`` (or a ``redact_key``) replaces every host, IP address, group, topic, member,
    client, instance and transactional id in the result by a stable placeholder before anything can
    render it (``report/redact.py``; with a key, placeholders are keyed hashes, so two reports
    redacted with one key line up); ``Analysis.redaction.mapping()`` gives the mapping.
    """
    if (paths is None) == (events is None):
        raise AnalysisError("give either paths or events")
    with collector.paused():   # what the run builds lives until it ends (core/collector.py)
        return _analyze(paths, events, groups, since, until, config, tz, host_tz, host, clusters, layout, packs,
                        kafka_version, jobs, date, engine, master, conf, status, remote, redact, redact_key)


def _analyze(paths, events, groups, since, until, config, tz, host_tz, host, clusters, layout, packs,
             kafka_version, jobs, date, engine, master, conf, status, remote, redact, redact_key) -> Analysis:
    # The caller's AnalysisConfig is not edited: this run's groups and window go into a copy, and its thresholds
    # are copied too (the copy is the analysis's own: Analysis.config, which a caller may change later).
    base = config if isinstance(config, AnalysisConfig) else rule_config.load(Path(config) if config is not None else None)
    analysis_config = replace(base, thresholds=copy.deepcopy(base.thresholds), groups=list(groups or []),
                              since=parse_time(since, tz, "since"), until=parse_time(until, tz, "until"),
                              sources=list(base.sources))
    if events is not None:
        rows = _event_rows(events)
        stats = RunStats(inputs=["<events>"], engine="events")
        inputs = ["<events>"]
    else:
        inputs = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
        options = ReadOptions(tz=tz, host_tz=dict(host_tz or {}), host=host, layout=layout,
                              packs=[Path(p) for p in packs or []], kafka_version=kafka_version, jobs=jobs,
                              base_date=str(date) if date is not None else None, clusters=dict(clusters or {}))
        rows, stats = read_events(inputs, options, engine, master, conf, status, remote)
    found = diagnose(inputs, rows, stats, analysis_config)
    if redact or redact_key is not None:
        from .report.redact import redact as redact_analysis

        found.redaction = redact_analysis(found, key=redact_key)
    return found


def diagnose(inputs: list[str], rows: list[dict], stats: RunStats, config: AnalysisConfig,
             folded: dict | None = None, growing: bool = False) -> Analysis:
    """The diagnosis step of ``analyze`` over events already read (sorted by time). ``folded``: what was
    folded before these events, per group (``analyze --follow``: fold.py; ``timeline.model.Folded``); ``growing``:
    the logs are still being written (no log's end is taken for its process's stop). Groups are keyed by cluster
    when the events name several (``timeline/clusters.py``)."""
    clusters = settle_clusters(rows, named_ids(stats.files))
    if len(clusters) > 1 and config.groups:
        config = replace(config, groups=keyed_names(config.groups, clusters))
    diagnosis = analyze_events(rows, config, folded, growing)
    if not diagnosis.groups and (config.groups or config.since or config.until) and rows:
        raise NothingMatched(*_nothing_matched(rows, config), stats=stats)
    kept = [e for e in rows if (not config.groups or e.get("group") in config.groups)
            and (e.get("ts") is None or ((config.since is None or e["ts"] >= config.since)
                                         and (config.until is None or e["ts"] <= config.until)))]
    return Analysis(inputs=list(inputs), groups=diagnosis.groups, stats=stats, config=config, event_rows=kept,
                    ungrouped_clients=diagnosis.ungrouped_clients, handle_findings=diagnosis.handle_findings)


def read_events(inputs: list[str], options: ReadOptions, engine: str = "auto", master: str | None = None,
                conf: dict[str, str] | Iterable[str] | None = None, status: Status | None = None,
                remote: str | None = None) -> tuple[list[dict], RunStats]:
    """Every event of the inputs sorted by time, from the engine ``engine`` chooses, and the
    run's accounting. Raises ``engines.choose.EngineError`` on a usage error and
    ``engines.choose.SparkUnavailable`` when Spark is needed and cannot run here. ``remote``: a
    Spark Connect server (``sc://host:port``)."""
    choice = choose_engine(engine, inputs, master, remote=remote)
    if choice.engine == "local":
        if engine == "auto" and status and "above" in choice.reason:
            status(f"engine: local ({choice.reason})")
        from .engines import local

        return local.read_events(inputs, options)
    from .engines import spark as spark_engine

    settings = conf if isinstance(conf, dict) else spark_engine.parse_conf(list(conf or []))
    if status:
        status(f"engine: spark ({choice.reason}); starting a Spark session...")
    with spark_engine.session(master, settings, remote=remote) as spark:
        return spark_engine.collect_events(spark, inputs, options, order="time")


def parse_time(value: datetime | str | None, tz: str, option: str) -> datetime | None:
    """A ``since``/``until`` bound as an aware datetime (naive ones are read in ``tz``)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        from dateutil import parser as dateparser

        try:
            value = dateparser.isoparse(value) if "T" in value or len(value) == 10 else dateparser.parse(value)
        except (ValueError, OverflowError) as exc:
            raise AnalysisError(f"{option}: cannot read {value!r} as a time ({exc}); "
                                f"use e.g. 2024-03-05T10:00:00") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timestamps.zone(tz))
    return value


def _event_rows(events) -> list[dict]:
    from .engines.local import sort_key

    if isinstance(events, list):
        rows = [dict(dict.fromkeys(NAMES), **e) for e in events]
    else:
        import pyarrow as pa

        table = events
        missing = [n for n in NAMES if n not in table.column_names]
        if missing:
            raise AnalysisError(f"the events table lacks the column(s) {', '.join(missing)} "
                                f"(it must have the columns of `rebalance-doctor schema`)")
        table = table.select(list(NAMES))
        columns = {}
        for name in NAMES:
            column = table.column(name)
            if name == "ts":
                column = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
            columns[name] = column.to_pylist()
        rows = event_rows(columns)
    rows.sort(key=sort_key)
    return rows


def _nothing_matched(rows: list[dict], config: AnalysisConfig) -> tuple[str, dict]:
    groups: dict[str, int] = {}
    for e in rows:
        if e.get("group"):
            groups[e["group"]] = groups.get(e["group"], 0) + 1
    times = [e["ts"] for e in rows if e.get("ts") is not None]
    span = (min(times), max(times)) if times else (None, None)
    asked = []
    if config.groups:
        asked.append(f"group {', '.join(config.groups)}")
    if config.since or config.until:
        asked.append(f"time {_at(config.since) or '...'} .. {_at(config.until) or '...'}")
    held = ", ".join(f"{name} ({n} events)" for name, n in sorted(groups.items(), key=lambda kv: -kv[1])[:20])
    more = f" and {len(groups) - 20} more" if len(groups) > 20 else ""
    message = (f"no events of {' and '.join(asked)} in the input; it holds "
               f"{'groups ' + held + more if groups else 'no group'}"
               + (f", from {_at(span[0])} to {_at(span[1])}" if span[0] else ""))
    return message, {"groups": groups, "start": span[0], "end": span[1]}


def _at(ts: datetime | None) -> str | None:
    return ts.isoformat(timespec="seconds").replace("+00:00", "Z") if ts else None
