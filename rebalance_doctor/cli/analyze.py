"""`rebalance-doctor analyze`: each group's rebalance timeline and its diagnosis (over api.analyze)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import common, redaction
from .choices import FailOn, Format, value
from .common import EXIT_FINDINGS, Text, stderr
from .engine import ConfOpt, EngineOpt, MasterOpt, RemoteOpt
from .output import payload, report_console


def analyze(
    paths: common.PathsArg,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="What goes to stdout: the terminal report, "
                                        "JSON (only JSON; docs/schema/analyze.json) or Markdown for a ticket.")] = Format.human,
    html: Annotated[Optional[Path], typer.Option("--html", metavar="FILE", help="Also write the self-contained HTML "
                                                 "report (swimlane timeline, findings, accounting) to FILE.")] = None,
    brief: Annotated[bool, typer.Option("--brief", help="Only the answer: root cause, culprit, window, groups hurt "
                                        "(human and markdown; refused with --format json).")] = False,
    details: Annotated[bool, typer.Option("--details", help="Every finding, evidence line and rebalance, "
                                          "not a screen per group (human).")] = False,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a finding is at least this severe.")] = FailOn.warning,
    group: Annotated[Optional[list[str]], typer.Option("--group", "-g", help="Only this group (repeatable). With one --group, client "
                                                                      "lines that name no group (librdkafka, KafkaJS at their default "
                                                                      "levels) are taken as this group's.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Ignore lines before this time (ISO 8601; --tz when no zone).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Ignore lines after this time.")] = None,
    config_file: common.ConfigOpt = None,
    rows: Annotated[Optional[int], typer.Option("--rows", min=2, help="Timeline rows shown per group (human; "
                                                "default 12, every row with --details).")] = None,
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
    follow: Annotated[bool, typer.Option("--follow", help="Read what is there, then follow the inputs as they grow "
                                         "(files, directories, - for a stream such as kubectl logs -f): rotation "
                                         "and new files included. Findings are shown as they appear (a live screen "
                                         "on a terminal, else one line per new or changed finding; JSON lines with "
                                         "--format json); Ctrl-C or SIGTERM prints the final report and exits with "
                                         "its code.")] = False,
) -> None:
    """Rebuild each group's rebalance timeline and name the root causes, with evidence.

    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage error (a --group or time window
    that matches nothing, an --html or --redact-map path that cannot be written, read-only included) or nothing
    to read, 3 input was lost (corrupt, truncated, unreadable) and nothing at or above --fail-on
    was found, 4 internal error, 5 something missing (an extra, Java, Spark) or a full disk. When
    several hold, the first of 4, 2, 5, 1, 3. With --follow, Ctrl-C or SIGTERM ends with the code
    of the final report.
    """
    # The diagnosis (timeline, classification, rules) is imported by the commands that run it,
    # not by every start of the CLI: `events` starts ~0.1 CPU-s sooner without it.
    from .. import api
    from ..core import collector
    from ..core.packs import PackError
    from ..core.toml import DataFileError
    from ..core.writers import check_target, one_run
    from ..rules.finding import rank

    if (redact or redact_map is not None) and redact_key is None:
        redact_key = os.environ.get("REBALANCE_DOCTOR_REDACT_KEY") or None
    if brief and value(fmt) == "json":
        raise common.fail("--brief is for the terminal and Markdown reports; --format json always prints the whole "
                          "report (its answer alone: jq .answer)")
    options = common.read_options(tz, host_tz, host, layout, packs, kafka_version, jobs, base_date, clusters=cluster)
    if redact_map is not None and str(redact_map) in ("-", "/dev/stdout"):
        raise common.fail("--redact-map: the mapping holds the original names; give a file, not standard output")
    for target in (html, redact_map):
        if target is not None:
            with common.errors():
                check_target(target)   # refused before anything is read
    if follow:
        _follow(paths, options, config_file, group, since, until, value(fmt), brief, details, rows, html,
                value(fail_on), value(engine), master, remote, quiet,
                redaction.redactor(redact, redact_key, redact_map), redact_map)
    common.say_when_waiting_for_stdin(paths)
    try:
        with common.errors():
            result = api.analyze(
                paths, groups=group, since=since, until=until, config=config_file, tz=options.tz,
                host_tz=options.host_tz, host=options.host, clusters=options.clusters, layout=options.layout, packs=options.packs,
                kafka_version=options.kafka_version, jobs=options.jobs, date=options.base_date,
                engine=value(engine), master=master, conf=conf, remote=remote,
                status=None if quiet else (lambda text: stderr.print(Text(text))),
                redact=redact or redact_map is not None, redact_key=redact_key)
    except api.NothingMatched as exc:
        common.print_accounting(exc.stats, verbose_files=not quiet)
        raise common.fail(str(exc))
    except (PackError, DataFileError, ValueError) as exc:
        raise common.fail(str(exc))
    common.print_accounting(result.stats, verbose_files=not quiet)
    codes = common.input_codes(result.stats)
    if result.stats.files_read == 0:
        raise typer.Exit(common.worst(codes))
    if common.withhold_outputs(result.stats):
        html = None   # a missing input: no report that looks complete
    with common.errors(), one_run(), collector.paused():   # the HTML renamed into place once the report is out
        if html is not None:
            result.write_html(html)
        if redact_map is not None:
            result.redaction.write_mapping(redact_map)
        _print_report(result, value(fmt), brief, details, rows, html)
    if not quiet:
        for target in (html, redact_map):
            if target is not None:
                stderr.print(Text(f"wrote {target}"))
    threshold = value(fail_on)
    if threshold != "never" and any(rank(f.severity) >= rank(threshold) for f in result.findings):
        codes.append(EXIT_FINDINGS)
    raise typer.Exit(common.worst(codes))


def _follow(paths, options, config_file, group, since, until, fmt, brief, details, rows, html, fail_on,
            engine, master, remote, quiet, redactor=None, redact_map=None) -> None:
    from . import follow
    from ..core.writers import one_run
    from ..rules.finding import rank

    if engine == "spark" or master or remote or options.jobs > 1:
        raise common.fail("--follow reads in this process: --engine spark, --master, --remote and --jobs "
                          "are not used with it")

    def final_report(result) -> None:
        with common.errors(), one_run():
            if html is not None and not common.withhold_outputs(result.stats):
                result.write_html(html)
            if redact_map is not None:
                result.redaction.write_mapping(redact_map)
            if fmt == "json":   # after the JSON lines: the analyze document, on one line of its own
                with payload():
                    print(result.to_json(indent=None))
            else:
                _print_report(result, fmt, brief, details, rows, html)

    result, codes = follow.run(paths, options, config_file, group, since, until, fmt, final_report, quiet,
                               redactor)
    if html is not None and not quiet and not common.withhold_outputs(result.stats):
        stderr.print(Text(f"wrote {html}"))
    if redact_map is not None and not quiet and result.stats.files_read:
        stderr.print(Text(f"wrote {redact_map}"))
    if fail_on != "never" and any(rank(f.severity) >= rank(fail_on) for f in result.findings):
        codes.append(EXIT_FINDINGS)
    raise typer.Exit(common.worst(codes))


def _print_report(result, fmt: str, brief: bool, details: bool, rows, html) -> None:
    with payload():
        if fmt == "json":
            result.write_json(sys.stdout)
            print()
        elif fmt == "markdown":
            from ..report import markdown

            print(markdown.render(result, brief=brief), end="")
        else:
            from ..report import human

            human.render(result, report_console(), brief=brief, details=details, rows=rows,
                         html=str(html) if html else None)
