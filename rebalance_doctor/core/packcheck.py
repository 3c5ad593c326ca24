"""Check pattern packs against their samples and the annotated fixture logs (`patterns check`).

Every finding says where (file and line, or pattern id) and what to do. Checked:

* the packs load and validate (regexes compile, ids are unique, names are events columns);
* every pattern has a sample, and every sample holds a scan literal (or the scanner never
  looks at such a line), is read by its own variant with the fields it expects, and is not
  read by another pattern tried at the same or an earlier rank;
* every pattern has at least one annotated fixture record (``#expect: pattern.id`` on the
  line before it), and every annotation holds; for a record that no pattern reads, how far
  the closest pattern's regex matched;
* no pattern regex, and no layout regex (shipped layouts and their record-start lines), can
  backtrack catastrophically (``regex_lint``): nested or adjacent repeats of the same characters, and
  (pattern regexes) free repeats stacked on one path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from . import timestamps
from .context import load_context_reader
from .layouts import GENERIC, detect, load_layouts
from .matcher import Matcher, MessageText, _longest_prefix_match
from .options import ReadOptions
from .packs import PackError, PackSet, Variant, default_pack_dirs, load_packs
from .parse import FileContext, RecordParser, read_message
from .reader import bounds_of
from .paths import patterns_dir
from .regex_lint import lint
from .schema import CAPTURE_COLUMNS

ANNOTATION = "#expect:"
FIXTURE_DATE = "2024-05-01"   # for fixtures written in time-of-day-only layouts


@dataclass
class Finding:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)
    patterns: int = 0
    samples: int = 0
    annotations: int = 0
    fixture_files: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    def add(self, where: str, message: str) -> None:
        self.findings.append(Finding(where, message))


def pack_dirs_of(path: Path) -> Path:
    """A directory holding packs: DIR itself, or DIR/packs (so `--packs patterns/` works)."""
    return path / "packs" if (path / "packs").is_dir() else path


def check(packs: list[Path] | None = None, fixtures: Path | None = None) -> CheckReport:
    """Check the given pack files/directories (default: the shipped packs) and fixtures."""
    report = CheckReport()
    own = [pack_dirs_of(Path(p)) for p in packs] if packs else default_pack_dirs()
    shipped = {str(p.resolve()) for p in default_pack_dirs()}
    extra = [p for p in own if str(p.resolve()) not in shipped]
    try:
        world = load_packs(extra, include_default=True, compile_all=True)
        checked = load_packs(own, include_default=False, compile_all=True)
    except PackError as exc:
        for line in str(exc).splitlines()[1:] or [str(exc)]:
            report.add("pack", line.strip())
        return report
    ids = set(checked.patterns)
    report.patterns = len(ids)
    _check_backtracking(checked, report)
    tools = _Tools(world)
    for pattern_id in sorted(ids):
        _check_samples(world.patterns[pattern_id].variants, tools, report)
    fixtures = fixtures if fixtures is not None else patterns_dir().parent / "fixtures"
    annotated = _check_fixtures(fixtures, world, tools, report)
    for pattern_id in sorted(ids - annotated):
        pattern = world.patterns[pattern_id]
        report.add(f"{pattern.source_file}: {pattern_id}",
                   f"no fixture line: add a record to a log under {fixtures} with '{ANNOTATION} {pattern_id}' "
                   f"on the line before it")
    return report


def _check_backtracking(packs: PackSet, report: CheckReport) -> None:
    for variant in packs.variants():
        found = lint(variant.regex_source)
        if found is not None:
            report.add(f"{variant.source_file}: {variant.label}", f"{found}; write the repeat once, or make it "
                                                                  f"possessive (x++) or atomic ((?>...))")
    layouts = load_layouts()
    for layout in layouts.layouts:
        if layout.is_json:
            continue
        for what, source, dotall in (("record start", layout.start_source, False),
                                     ("record", layout.full_source, True)):
            # Not yet for stacked free repeats: the record regexes of kafka-connect, kafka-thread,
            # strimzi and bracket stack them (slow on a line of many records, bounded by the
            # timeout, which counts); record assembly owns them.
            found = lint(source, dotall, stacked=False)
            if found is not None:
                report.add(f"layouts.toml: {layout.name} ({what} regex)", str(found))


class _Tools:
    def __init__(self, packs: PackSet):
        self.packs = packs
        self.matcher = Matcher(packs)
        self.context = load_context_reader()
        self.parser = RecordParser(self.matcher, self.context)
        self.layouts = load_layouts()

    def file_for(self, line: str) -> FileContext:
        detection = detect([line.encode("utf-8", "replace")], self.layouts)
        return FileContext("sample", "sample", detection.layout, detection.container, timestamps.zone("UTC"),
                           date.fromisoformat(FIXTURE_DATE))

    def body(self, line: str, file: FileContext) -> tuple[MessageText, str | None]:
        """What the patterns read of a record, and its logger."""
        text = line
        if file.container is not None:
            strip = file.container.compiled()
            text = "\n".join(strip.sub("", l, count=1) for l in text.split("\n"))
        envelope = file.layout.split(text) or GENERIC.split(text)
        msg = envelope.msg if envelope else text
        return read_message(msg, self.context)[1], (envelope.logger if envelope else None)

    def split_lines(self, line: str, file: FileContext) -> list[int]:
        """The 1-based numbers of the sample's lines after the first that the reader would read as
        records of their own (neither indented nor of a continuation shape)."""
        bounds = bounds_of([(file.layout, file.container)], self.layouts, self.packs)
        data = line.encode("utf-8")
        starts, pos = [], 0
        for number, part in enumerate(data.split(b"\n"), start=1):
            if number > 1 and bounds.is_start(data, pos):
                starts.append(number)
            pos += len(part) + 1
        return starts


def _check_samples(variants: list[Variant], tools: _Tools, report: CheckReport) -> None:
    if not any(v.samples for v in variants):
        v = variants[0]
        report.add(f"{v.source_file}: {v.pattern_id}", "no sample: add samples = [...] with a real log line to a variant")
        return
    scan = tools.packs.scan_keys
    for variant in variants:
        where = f"{variant.source_file}: {variant.label}"
        for sample in variant.samples:
            report.samples += 1
            line = sample.line
            if not any(key in line for key in scan):
                report.add(where, f"sample holds none of the scan literals, so the scanner would never look at "
                                  f"it: add a literal it holds to the pack's scan list: {line[:120]!r}")
                continue
            file = tools.file_for(line)
            split = tools.split_lines(line, file)
            if split:
                report.add(where, f"line {split[0]} of the sample would be read as a record of its own (it is not "
                                  f"indented and has none of the continuation shapes of layouts.toml, nor a fixed "
                                  f"line opener of the pattern's regex): {line.split(chr(10))[split[0] - 1][:80]!r}")
                continue
            text, logger = tools.body(line, file)
            own = tools.matcher.search(variant, text)
            if own is None:
                body = text.full if variant.spans else text.head
                got = _longest_prefix_match(variant.regex_source, body)
                report.add(where, f"sample does not match its own variant: the regex stops after {got} of "
                                  f"{len(body)} characters, at {body[got:got + 40]!r}")
                continue
            rivals = _rivals(variant, text, tools)
            if rivals:
                report.add(where, f"sample is also read by {', '.join(rivals)}, tried at the same or an earlier rank: "
                                  f"make one regex stricter or give the more specific pattern a higher priority")
                continue
            found = tools.parser.parse(line, 1, file)
            if not isinstance(found, dict) or found["pattern"] != variant.pattern_id:
                got = found["pattern"] if isinstance(found, dict) else "nothing"
                report.add(where, f"sample is read as {got}, not as {variant.pattern_id} "
                                  f"(check the gate {variant.gate!r} and the logger)")
                continue
            for problem in _field_problems(found, sample.expect):
                report.add(where, f"sample field {problem}")


def _rivals(variant: Variant, text: MessageText, tools: _Tools) -> list[str]:
    rank = (variant.priority, len(variant.gate))
    rivals = []
    others = tools.matcher.candidates(text.head) + [v for v in tools.matcher.candidates(text.full) if v.spans]
    for other in others:
        if other.pattern_id == variant.pattern_id or (other.priority, len(other.gate)) < rank:
            continue
        try:
            if tools.matcher.search(other, text) is not None:
                rivals.append(other.label)
        except Exception:  # a broken rival is reported on its own samples
            continue
    return sorted(set(rivals))


def _field_problems(event: dict, expect: dict) -> list[str]:
    problems = []
    attrs = event.get("attrs") or {}
    for name, want in expect.items():
        have = event.get(name) if name in CAPTURE_COLUMNS else attrs.get(name)
        if have != want and not (isinstance(want, (int, float)) and str(have) == str(want)):
            problems.append(f"{name}: expected {want!r}, got {have!r}")
    return problems


def _check_fixtures(root: Path, world: PackSet, tools: _Tools, report: CheckReport) -> set[str]:
    from ..engines.local import read_events  # the whole reading path, as `events` runs it

    annotated: set[str] = set()
    files = sorted(root.rglob("*.log")) if root.is_dir() else ([root] if root.is_file() else [])
    if not files:
        report.add(str(root), "no fixture logs (*.log) found")
        return annotated
    extra = [Path(f) for f in world.files if str(Path(f).parent.resolve()) not in
             {str(p.resolve()) for p in default_pack_dirs()}]
    for path in files:
        expected = expectations(path)
        if not expected:
            continue
        report.fixture_files += 1
        report.annotations += len(expected)
        annotated.update(expected.values())
        events, _ = read_events([str(path)], ReadOptions(packs=extra, base_date=FIXTURE_DATE))
        found = {}
        for event in events:
            found.setdefault(event["line"], event["pattern"])
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for line_no, pattern_id in sorted(expected.items()):
            got = found.get(line_no)
            if got == pattern_id:
                continue
            where = f"{path}:{line_no}"
            record = lines[line_no - 1] if line_no <= len(lines) else ""
            if pattern_id not in world.patterns:
                report.add(where, f"annotation names {pattern_id}, which no loaded pack defines")
            elif got is not None:
                report.add(where, f"expected {pattern_id}, read as {got}")
            else:
                report.add(where, f"expected {pattern_id}, no pattern read the record; {_closest(record, pattern_id, tools)}")
    return annotated


def _closest(record: str, pattern_id: str, tools: _Tools) -> str:
    if not any(key in record for key in tools.packs.scan_keys):
        return "the line holds none of the scan literals"
    file = tools.file_for(record)
    text, _ = tools.body(record, file)
    body = text.head
    best = None
    for variant in tools.packs.patterns[pattern_id].variants:
        got = _longest_prefix_match(variant.regex_source, body)
        if best is None or got > best[1]:
            best = (variant.label, got)
    gate = tools.packs.patterns[pattern_id].gate
    hint = "" if gate in body else f" (its gate {gate!r} is not in the line)"
    return "closest: " + _describe_closest(best[0], best[1], len(body), body) + hint


def _describe_closest(label: str, got: int, total: int, body: str) -> str:
    if got >= total:
        return f"{label} matches all {total} characters as a start, but the line ends before the pattern does"
    return f"{label} matched {got} of {total} characters, stopping at {body[got:got + 40]!r}"


def expectations(path: Path) -> dict[int, str]:
    """`#expect: pattern.id` annotations: line number of the annotated record -> pattern id."""
    expected = {}
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith(ANNOTATION):
            expected[number + 1] = line.split(":", 1)[1].strip()
    return expected


@dataclass
class LineReading:
    """What the parsing path makes of one line (`patterns test`)."""

    layout: str
    container: str | None
    logger: str | None
    body: str
    event: dict | None
    closest: str | None = None
    scanned: bool = True


def read_line(line: str, packs: list[Path] | None = None, layout: str | None = None) -> LineReading:
    """Detect the line's layout, read its prefix and match it; on a miss, say how far the closest got."""
    world = load_packs([pack_dirs_of(Path(p)) for p in packs or []], include_default=True)
    tools = _Tools(world)
    file = tools.file_for(line)
    if layout:
        from .reader import resolve_layout

        file.layout = resolve_layout(layout, tools.layouts)
    text, logger = tools.body(line, file)
    body = text.head
    scanned = any(key in line for key in world.scan_keys)
    found = tools.parser.parse(line, 1, file)
    reading = LineReading(file.layout.name, file.container.name if file.container else None, logger, body,
                          found if isinstance(found, dict) else None, scanned=scanned)
    if reading.event is None:
        best = tools.matcher.closest(body)
        if best is not None:
            reading.closest = _describe_closest(*best, body)
    return reading
