"""`rebalance-doctor patterns`: check, list, show and try the pattern packs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..report.safe_text import visible
from . import common
from .common import EXIT_FINDINGS, EXIT_OK, Text, stderr
from .output import payload

app = typer.Typer(help="Check, list, show and try the pattern packs.", no_args_is_help=True,
                  rich_markup_mode=None, add_completion=False)

CheckPacksOpt = Annotated[Optional[list[Path]], typer.Option(
    "--packs", help="Pack file or directory to check (repeatable; default: the shipped patterns/).")]


def _load(packs: list[Path] | None):
    from ..core.packcheck import pack_dirs_of
    from ..core.packs import PackError, load_packs
    from ..core.toml import DataFileError

    try:
        return load_packs([pack_dirs_of(p) for p in packs or []])
    except (PackError, DataFileError) as exc:
        raise common.fail(str(exc))


@app.command("check")
def check(
    packs: CheckPacksOpt = None,
    fixtures: Annotated[Optional[Path], typer.Option(
        "--fixtures", help="Directory (or file) of annotated fixture logs (default: the repository's fixtures/).")] = None,
    coverage: Annotated[bool, typer.Option(
        "--coverage", help="Also measure the shipped packs' coverage of Kafka's rebalance templates (2.4-4.4) as "
                           "the realistic renderer prints them, per component and release; findings below 99%. "
                           "Needs the template inventory (patterns/kafka/templates.jsonl, which packgen.sources extracts from "
                           "the releases' -sources jars, or REBALANCE_DOCTOR_TEMPLATES); exit 5 without it.")] = False,
) -> None:
    """Validate packs against their samples and the annotated fixtures, and the client packs against
    the client template inventories both ways (for CI): exit 0 ok, 1 findings."""
    if fixtures is not None and not fixtures.exists():
        raise common.fail(f"{fixtures}: no such fixtures file or directory")
    for path in packs or []:
        if not path.exists():
            raise common.fail(f"{path}: no such pack file or directory")
    # packcheck reads lines the way `events` does (the reader, numpy): imported by the commands that read.
    from ..core.packcheck import check as run_check

    report = run_check(packs, fixtures)
    if not packs and fixtures is None:
        # The shipped client packs against the client template inventories, both ways: the generator
        # rebuilds them to say whether they are current, so packgen is imported here only (the
        # repository's check; --packs/--fixtures checks and the other commands never import it).
        from ..packgen.clientgen import check_inventories

        for where, message in check_inventories():
            report.add(where, message)
    if coverage:
        report.findings.extend(_coverage())
    for finding in report.findings:
        stderr.print(Text(f"error: {visible(str(finding))}"))
    summary = (f"patterns check: {report.patterns} patterns, {report.samples} samples, "
               f"{report.annotations} fixture annotations in {report.fixture_files} files")
    if report.ok:
        typer.echo(summary + ": ok")
        raise typer.Exit(EXIT_OK)
    stderr.print(Text(f"{summary}: {len(report.findings)} problem(s)"))
    raise typer.Exit(EXIT_FINDINGS)


def _coverage() -> list[str]:
    """Print the coverage tables; the shares below the target as findings."""
    from ..packgen import coverage as measured  # the renderer and the inventory: only on request
    from ..packgen.inventory import missing

    why = missing()
    if why:
        raise common.fail(f"cannot measure the coverage: {why}", code=common.EXIT_ENVIRONMENT)
    result = measured.measure()
    for tier, title in (("reported", "INFO, WARN and ERROR templates"), ("debug", "DEBUG templates a diagnosis uses")):
        typer.echo(f"coverage of {title}:")
        typer.echo(measured.table(result, tier))
    typer.echo("records read right in a log file with foreign lines, per layout:")
    typer.echo("  " + ", ".join(f"{layout} {right / total:.1%}" for layout, (total, right, _) in sorted(result.files.items())))
    typer.echo("hard-wrapped at 80 or 200 columns:")
    typer.echo("  " + ", ".join(f"{layout} {wrapped / total:.1%}"
                                for layout, (total, _, wrapped) in sorted(result.files.items())))
    findings = [f"coverage of {component} {version} ({tier}) is {share:.1%}, below {measured.TARGET:.0%}"
                for component, version, tier, share in measured.below(result)]
    findings += [f"records of the {layout} layout among foreign lines: {right / total:.1%} read right, below "
                 f"{measured.TARGET:.0%}" for layout, (total, right, _) in sorted(result.files.items())
                 if right / total < measured.TARGET]
    return findings


@app.command("list")
def list_patterns(packs: common.PacksOpt = None) -> None:
    """Every pattern: id, event, pack, Kafka versions of its variants."""
    loaded = _load(packs)
    with payload():
        for pattern_id in sorted(loaded.patterns):
            pattern = loaded.patterns[pattern_id]
            kafka = " | ".join(dict.fromkeys(v.kafka for v in pattern.variants))
            typer.echo(f"{pattern_id:72} {pattern.event:34} {pattern.pack:20} {kafka}")


@app.command("show")
def show(pattern_id: Annotated[str, typer.Argument(help="A pattern id from `patterns list`.")],
         packs: common.PacksOpt = None) -> None:
    """A pattern's event, gate, documentation and every variant (Kafka range, loggers, regex, samples)."""
    loaded = _load(packs)
    pattern = loaded.patterns.get(pattern_id)
    if pattern is None:
        near = [p for p in loaded.patterns if pattern_id in p][:10]
        raise common.fail(f"unknown pattern {pattern_id!r}" + (f"; did you mean: {', '.join(near)}" if near else ""))
    typer.echo(f"{pattern.id}\n  event: {pattern.event}\n  pack:  {pattern.pack} ({pattern.source_file})\n"
               f"  gate:  {pattern.gate!r}")
    if pattern.doc:
        typer.echo(f"  doc:   {pattern.doc}")
    for variant in pattern.variants:
        typer.echo(f"\n  variant {variant.index}: kafka {variant.kafka}; priority {variant.priority}")
        for logger in variant.loggers:
            typer.echo(f"    logger: {logger}")
        typer.echo(f"    regex:  {variant.regex_source}")
        for sample in variant.samples:
            typer.echo(f"    sample: {visible(sample.line)}")


@app.command("test")
def test(line: Annotated[str, typer.Argument(help="One log record (quote it; use $'...' for multi-line), "
                                                "or - to read it from standard input.")],
         packs: common.PacksOpt = None, layout: common.LayoutOpt = None) -> None:
    """Which layout reads LINE, which pattern matches it and which fields it yields (exit 1: none).

    `-` reads the record from standard input (all of it: one record, continuation lines included),
    e.g. `grep -m1 'poll timeout' server.log | rebalance-doctor patterns test -`.
    """
    if line == "-":
        common.say_when_waiting_for_stdin(["-"])
        line = sys.stdin.read().rstrip("\r\n")
        if not line.strip():
            raise common.fail("patterns test -: standard input was empty; give one log record")
    with common.errors():
        from ..core.packcheck import read_line

        reading = read_line(line, packs, layout)
    typer.echo(f"layout:  {reading.layout}" + (f" in {reading.container}" if reading.container else ""))
    typer.echo(f"logger:  {visible(reading.logger or '-', False)}")
    event = reading.event
    if event is None:
        typer.echo("pattern: none")
        if not reading.scanned:
            typer.echo("  the line holds none of the scan literals: the scanner would not look at it")
        if reading.closest:
            typer.echo(f"  closest: {visible(str(reading.closest), False)}")
        raise typer.Exit(EXIT_FINDINGS)
    typer.echo(f"pattern: {event['pattern']}\nevent:   {event['event']}")
    from ..core.schema import CAPTURE_COLUMNS, COLUMNS

    for name in [c.name for c in COLUMNS if c.name in CAPTURE_COLUMNS]:
        value = event.get(name)
        if value not in (None, [], "") and name not in ("attrs",):
            typer.echo(f"  {name}: {visible(str(value), False)}")
    for name, value in sorted((event.get("attrs") or {}).items()):
        typer.echo(f"  attrs.{name}: {visible(str(value), False)}")
    raise typer.Exit(EXIT_OK)
