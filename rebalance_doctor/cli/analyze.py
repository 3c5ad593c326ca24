"""`rebalance-doctor analyze`: each group's rebalance timeline and its diagnosis."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Annotated, Optional

import typer
from dateutil import parser as dateparser
from rich.console import Console
from rich.text import Text

from ..analysis import analyze_events
from ..core import timestamps
from ..report import human
from ..report.json import document
from ..rules import config as rule_config
from ..rules.finding import SEVERITIES, rank
from .engine import ConfOpt, EngineOpt, MasterOpt, read_sorted_with_engine
from . import common
from .common import EXIT_FINDINGS, stderr


def _time(text: str | None, tz: str, option: str) -> datetime | None:
    if not text:
        return None
    try:
        value = dateparser.isoparse(text) if "T" in text or len(text) == 10 else dateparser.parse(text)
    except (ValueError, OverflowError) as exc:
        raise common.fail(f"{option}: cannot read {text!r} as a time ({exc}); use e.g. 2024-03-05T10:00:00")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timestamps.zone(tz))
    return value


def analyze(
    paths: common.PathsArg,
    fmt: Annotated[str, typer.Option("--format", "-f", help="human (default) or json (only JSON on stdout).")] = "human",
    fail_on: Annotated[str, typer.Option("--fail-on", help="Exit 1 when a finding is at least this severe: critical, warning, info, or never.")] = "warning",
    group: Annotated[Optional[list[str]], typer.Option("--group", "-g", help="Only this group (repeatable).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Ignore lines before this time (ISO 8601; --tz when no zone).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Ignore lines after this time.")] = None,
    config_file: common.ConfigOpt = None,
    rows: Annotated[int, typer.Option("--rows", min=2, help="Timeline rows shown per group (human format).")] = 40,
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
    quiet: common.QuietOpt = False,
) -> None:
    """Rebuild each group's rebalance timeline and name the root causes, with evidence.

    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage error or nothing to read,
    3 input was lost (corrupt, truncated, unreadable) and nothing at or above --fail-on was
    found, 4 internal error, 5 something missing (an extra, Java, Spark). First of 4, 2, 5, 1, 3.
    """
    if fmt not in ("human", "json"):
        raise common.fail(f"--format must be human or json, not {fmt!r}")
    if fail_on not in SEVERITIES + ("never",):
        raise common.fail(f"--fail-on must be one of {', '.join(SEVERITIES)} or never, not {fail_on!r}")
    options = common.read_options(tz, host_tz, host, layout, packs, kafka_version, jobs, base_date)
    with common.errors():
        config = rule_config.load(config_file)
        config.groups = list(group or [])
        config.since = _time(since, tz, "--since")
        config.until = _time(until, tz, "--until")
        events, stats = read_sorted_with_engine(paths, options, engine, master, conf, quiet=quiet)
    common.print_accounting(stats, verbose_files=not quiet)
    codes = common.input_codes(stats)
    if stats.files_read == 0:
        raise typer.Exit(common.worst(codes))
    analysis = analyze_events(events, config)
    if group and not analysis.groups:
        stderr.print(Text(f"warning: no lines of group(s) {', '.join(group)} in the input"))
    if fmt == "json":
        sys.stdout.write(json.dumps(document(analysis, list(paths)), indent=2) + "\n")
    else:
        console = Console(highlight=False)
        if not console.is_terminal:
            console = Console(highlight=False, width=200)
        human.render(analysis, console, rows)
    if fail_on != "never" and any(rank(f.severity) >= rank(fail_on) for f in analysis.findings):
        codes.append(EXIT_FINDINGS)
    raise typer.Exit(common.worst(codes))
