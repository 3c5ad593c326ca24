"""Layouts (envelopes): recognise a file's layout and split a record into ts, level, thread,
logger and message. The layouts are data (patterns/layouts.toml); conversion patterns are
compiled by ``conversion.compile_conversion``, the same code ``--layout`` uses. Layouts that no
conversion pattern can describe (librdkafka's ``%7|epoch|FAC|handle| ...``, Ruby's Logger,
Erlang's lager) give their two regexes themselves (``start``, ``full``), with a table that
names their levels (``%7`` is DEBUG, lager's ``I`` is INFO).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import regex

from . import conversion, regex_guard
from .conversion import LEVEL, LOGGER, TS_ISO
from .paths import patterns_dir
from .regex_cache import compiled_regexes
from .toml import load_toml

# A pathological record must not hang the envelope regex; it then reads as unparsed (counted).
SPLIT_TIMEOUT_S = regex_guard.REGEX_TIMEOUT_S

CUSTOM_PREFIX = "custom:"  # the name of a layout given with --layout
SAMPLE_LINES = 400
MIN_SHARE = 0.2
FULL_PROBE = 50  # continuation lines and noise lower the share of record-start lines
# A probe line a layout's regex takes longer than this on reads as not fitting; a layout whose
# regex does so on DETECT_SLOW probes is probed no further (a file of padded lines made
# detection alone take a minute).
DETECT_TIMEOUT_S = 0.02
DETECT_SLOW = 3


@dataclass
class Envelope:
    ts: str | None
    level: str | None
    thread: str | None
    logger: str | None
    msg: str
    mdc: str | None = None
    client: str | None = None   # the writer's client or handle name, when the layout states it


@dataclass
class Layout:
    name: str
    description: str
    pattern: str | None = None
    json_keys: dict[str, list[str]] | None = None
    start_source: str = ""
    full_source: str = ""
    time_only: bool = False
    # Level as written -> level name (regex layouts: "7" -> "DEBUG"); None: the level as written.
    levels: dict[str, str] | None = None
    # JSON layouts: keys beside the named ones (KafkaJS puts groupId, memberId... there) are
    # appended to the message as one JSON object, so patterns can read them.
    json_extra: bool = False
    # Only Java's logging writes this layout: the non-Java client packs' scan literals are not
    # looked for in a unit read with such layouts only (layouts.toml, `java`).
    java: bool = False
    _full: "regex.Pattern[str] | None" = field(default=None, repr=False, compare=False)
    # Start regexes by container regex ("" for none), when the cache had them (_attach_compiled).
    _starts: "dict[str, regex.Pattern[bytes]]" = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_json(self) -> bool:
        return self.json_keys is not None

    @property
    def multiline(self) -> bool:
        return not self.is_json

    def start_regex(self, container: "Container | None" = None) -> "regex.Pattern[bytes]":
        """Bytes regex telling whether a raw line starts a record (container prefix included);
        with a timeout when it could backtrack on a long line (``regex_guard``)."""
        prefix = container.regex_source if container else ""
        rx = self._starts.get(prefix) or _start_regex(self.start_source, prefix)
        # The shipped layouts are linted by `patterns check`; a --layout of the user's is not.
        return _guarded(rx) if self.name.startswith(CUSTOM_PREFIX) else rx

    def split(self, text: str, timeout: float = SPLIT_TIMEOUT_S, budget: bool = True) -> Envelope | None:
        """The record's envelope (time, level, thread, logger, message); None when the layout does
        not read it. ``budget``: the time counts in the regex time budget (``regex_guard``) and the
        record is not examined once it is spent (layout detection samples lines: bounded on its own)."""
        if self.json_keys is not None:
            return self._split_json(text)
        if self._full is None:
            self._full = regex.compile(self.full_source, regex.DOTALL)
        if not budget:
            return self._envelope(self._matched(text, timeout))
        if regex_guard.exhausted():   # the regex time budget is spent (regex_guard): not examined
            regex_guard.skip()
            return None
        began = regex_guard.clock()
        m = self._matched(text, timeout)
        regex_guard.spend(regex_guard.clock() - began)
        return self._envelope(m)

    def _matched(self, text: str, timeout: float):
        try:
            return self._full.match(text, timeout=timeout)
        except TimeoutError:
            regex_guard.timed_out()
            return None

    def _envelope(self, m) -> Envelope | None:
        if m is None:
            return None
        groups = m.groupdict()
        msg = groups.get("msg") or ""
        rest = groups.get("rest")
        if rest:
            msg = msg + rest
        logger = groups.get("logger")
        level = groups.get("level")
        if self.levels is not None and level is not None:
            level = self.levels.get(level, level)
        return Envelope(groups.get("ts"), level, _strip(groups.get("thread")),
                        logger, msg, groups.get("mdc"), groups.get("client"))

    def fit(self, text: str, not_thread: "regex.Pattern[str] | None" = None,
            timeout: float = SPLIT_TIMEOUT_S) -> float:
        """How well this layout reads a record: 0 when it cannot, up to 1 when every field is found."""
        envelope = self.split(text, timeout, budget=False)
        if envelope is None:
            return 0.0
        if envelope.thread and not_thread is not None and not_thread.match(envelope.thread):
            return 0.25
        found = [envelope.ts, envelope.level, envelope.logger, envelope.thread]
        return 0.5 + 0.5 * sum(1 for f in found if f) / len(found)

    def _split_json(self, text: str) -> Envelope | None:
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        keys = self.json_keys or {}
        msg = _lookup(doc, keys.get("message", []))
        if msg is None:
            return None
        stack = _lookup(doc, keys.get("stack", []))
        if stack:
            msg = f"{msg}\n{stack}"
        ts = _lookup(doc, keys.get("ts", []))
        if isinstance(ts, dict):  # log4j2 JsonLayout "instant": {epochSecond, nanoOfSecond}
            seconds = ts.get("epochSecond", 0) + ts.get("nanoOfSecond", 0) / 1e9
            ts = f"{seconds * 1000:.3f}"
        if self.json_extra:
            named = {name.split(".")[0] for names in keys.values() for name in names}
            extra = {k: v for k, v in doc.items() if k not in named}
            if extra:
                msg = f"{msg} {json.dumps(extra, ensure_ascii=False, separators=(',', ':'))}"
        return Envelope(None if ts is None else str(ts), _str(_lookup(doc, keys.get("level", []))),
                        _str(_lookup(doc, keys.get("thread", []))),
                        _str(_lookup(doc, keys.get("logger", []))), str(msg))


@dataclass(frozen=True)
class Container:
    name: str
    description: str
    regex_source: str

    def compiled(self) -> "regex.Pattern[str]":
        return _compiled_str(self.regex_source)

    def compiled_bytes(self) -> "regex.Pattern[bytes]":
        return _compiled_bytes(self.regex_source)


GENERIC = Layout(
    name="generic",
    description="no known layout: the whole line is the message; a leading timestamp and level are picked up",
    start_source=r"^",
    full_source=(r"^\W{0,3}(?P<ts>" + TS_ISO + r")?[\]\s|:-]{0,3}(?:(?P<level>" + LEVEL + r")\b[\s:-]{0,3})?"
                 r"(?P<msg>.*?)(?: \((?P<logger>" + LOGGER + r"(?::\d+)?)\)(?: \[[^\]\n]*\])?)?[ \t]*(?=\n|\Z)(?P<rest>\n.*)?\Z"),
)


def _lookup(doc: dict, names: list[str]):
    for name in names:
        if name in doc:
            return doc[name]
        node = doc
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                node = None
                break
            node = node[part]
        if node is not None:
            return node
    return None


def _str(value) -> str | None:
    return None if value is None else str(value)


def _strip(value: str | None) -> str | None:
    return value.strip() if value else value


@lru_cache(maxsize=256)
def _guarded(compiled: "regex.Pattern[bytes]"):
    return regex_guard.guarded(compiled, compiled.pattern.decode("utf-8", "replace"))


@lru_cache(maxsize=256)
def _start_regex(start: str, container: str) -> "regex.Pattern[bytes]":
    return regex.compile(_start_source(start, container), regex.MULTILINE)


def _start_source(start: str, container: str) -> bytes:
    source = start[1:] if start.startswith("^") else start
    prefix = container[1:] if container.startswith("^") else container
    return ("^" + prefix + source).encode()


@lru_cache(maxsize=64)
def _compiled_str(source: str) -> "regex.Pattern[str]":
    return regex.compile(source)


@lru_cache(maxsize=64)
def _compiled_bytes(source: str) -> "regex.Pattern[bytes]":
    return regex.compile(source.encode(), regex.MULTILINE)


@dataclass
class LayoutSet:
    layouts: list[Layout]
    containers: list[Container]
    version: str
    # What a [%t] field may hold when the layout is wrong: Kafka's log-context prefixes.
    not_thread: "regex.Pattern[str] | None" = None
    # The shapes of lines that continue a record (regex sources, matched at the line start after
    # the container prefix); see layouts.toml [continuation].
    continuation_shapes: tuple[str, ...] = ()

    def by_name(self, name: str) -> Layout | None:
        return next((l for l in self.layouts if l.name == name), None)


def layout_from_pattern(pattern: str, name: str | None = None, description: str = "",
                        check: bool = True) -> Layout:
    compiled = conversion.compile_conversion(pattern, check)
    return Layout(name=name or f"{CUSTOM_PREFIX}{pattern}", description=description or "given with --layout",
                  pattern=pattern, start_source=compiled.start, full_source=compiled.full,
                  time_only=compiled.time_only)


def load_layouts(path: Path | None = None) -> LayoutSet:
    path = path or patterns_dir() / "layouts.toml"
    return _load_layouts_cached(str(path))


@lru_cache(maxsize=8)
def _load_layouts_cached(path: str) -> LayoutSet:
    data = load_toml(Path(path))
    layouts = []
    for entry in data.get("layout", []):
        if entry.get("json"):
            keys = {k: list(entry.get(k, [])) for k in ("ts", "level", "logger", "thread", "message", "stack")}
            layouts.append(Layout(name=entry["name"], description=entry.get("description", ""),
                                  json_keys=keys, start_source=r"^\s*\{\s*\"", json_extra=bool(entry.get("extra"))))
        elif "full" in entry:
            layouts.append(Layout(name=entry["name"], description=entry.get("description", ""),
                                  start_source=entry["start"], full_source=entry["full"],
                                  time_only=bool(entry.get("time_only")),
                                  levels={str(k): str(v) for k, v in entry["levels"].items()}
                                  if entry.get("levels") else None))
        else:
            layouts.append(layout_from_pattern(entry["pattern"], entry["name"], entry.get("description", ""),
                                               check=False))
    for layout, entry in zip(layouts, data.get("layout", [])):
        layout.java = bool(entry.get("java"))
    containers = [Container(c["name"], c.get("description", ""), c["regex"]) for c in data.get("container", [])]
    _attach_compiled(layouts, containers)
    detection = data.get("detection", {})
    alternatives = [regex.escape(p) for p in detection.get("not_thread_prefixes", [])]
    if detection.get("not_thread_regex"):
        alternatives.append(f"(?:{detection['not_thread_regex']})")
    not_thread = regex.compile("|".join(alternatives)) if alternatives else None
    shapes = tuple(data.get("continuation", {}).get("shapes", []))
    for shape in shapes:
        conversion.checked_compile(f"continuation shape {shape!r}", shape.encode(), regex.MULTILINE)
    return LayoutSet(layouts, containers, str(data.get("version", "0")), not_thread, shapes)


def _attach_compiled(layouts: list[Layout], containers: list[Container]) -> None:
    """Give the layouts their regexes from the cache (``regex_cache``), checking the ones it
    lacks, so a broken layout is reported when the layouts load, whether or not it is cached."""
    prefixes = [""] + [c.regex_source for c in containers]
    text = [l for l in layouts if not l.is_json]
    fulls = compiled_regexes((l.full_source for l in text), regex.DOTALL) or {}
    starts = compiled_regexes((_start_source(l.start_source, p) for l in layouts for p in prefixes),
                              regex.MULTILINE) or {}
    for layout in layouts:
        sources = {p: _start_source(layout.start_source, p) for p in prefixes}
        layout._starts = {p: starts[source] for p, source in sources.items() if source in starts}
        if "" not in layout._starts and layout.pattern is not None:
            layout._starts[""] = conversion.checked_compile(layout.pattern, sources[""], regex.MULTILINE)
        if not layout.is_json:
            layout._full = fulls.get(layout.full_source) or conversion.checked_compile(
                layout.pattern or layout.name, layout.full_source, regex.DOTALL)


@dataclass
class Detection:
    layout: Layout
    container: Container | None
    share: float          # share of sampled lines that start a record (of any of the readers)
    sampled: int
    # Further (layout, container) readers for the lines the first one does not start (a stream
    # that mixes sources); tried in order after it.
    extra: list[tuple[Layout, Container | None]] = field(default_factory=list)
    colours: bool = False   # the lines carry ANSI colour codes (removed before reading)
    wrap: int = 0           # the lines were hard-wrapped at this width (joined before reading)
    cluster_id: str | None = None   # the Kafka cluster id the head states (core/clusterid.py)
    clients: object | None = None   # a MirrorMaker 2 log: the cluster of each client (core/mirror.Clients)

    @property
    def known(self) -> bool:
        return self.layout is not GENERIC

    @property
    def readers(self) -> list[tuple[Layout, Container | None]]:
        return [(self.layout, self.container)] + self.extra


def detect(sample: list[bytes], layouts: LayoutSet, forced: Layout | None = None) -> Detection:
    """Pick the layout (and container prefix) that reads the sampled lines best, then, for a
    stream that mixes sources, further readers for the lines it does not start.

    A layout scores the share of lines that start a record (of the lines that start one or do
    not continue one: indented lines and stack traces do not count against it) plus how well it
    reads the first ones whole (``Layout.fit``), so of two layouts sharing a record-start prefix
    the one that also finds the logger, thread or JSON keys wins; ties go to the layout listed
    first. The lines no chosen reader starts and that do not continue a record are read the same
    way, until fewer than ``MIN_EXTRA_LINES`` are left.
    """
    lines = [l for l in sample[:SAMPLE_LINES] if l.strip() and not l.startswith(b"#expect:")]
    if not lines:
        return Detection(forced or GENERIC, None, 0.0, 0)
    options = [forced] if forced else layouts.layouts
    continues = _continuation_regex(layouts)
    shaped = [continues.match(l) is not None for l in lines]
    best = _best_reader(lines, shaped, options, layouts, MIN_SHARE_CONTAINER)
    if best is None:
        return Detection(forced or GENERIC, None, 0.0, len(lines))
    detection = Detection(best.layout, best.container, best.share, len(lines))
    start = best.layout.start_regex(best.container)
    remaining = [l for l, s in zip(lines, shaped) if not s and not start.match(l)]
    covered = best.starts
    while len(remaining) >= MIN_EXTRA_LINES and len(detection.extra) < MAX_EXTRA_READERS:
        extra = _best_reader(remaining, [False] * len(remaining), options, layouts, 0.0)
        if extra is None or extra.starts < MIN_EXTRA_LINES or extra.starts < MIN_EXTRA_SHARE * best.considered:
            break
        detection.extra.append((extra.layout, extra.container))
        covered += extra.starts
        start = extra.layout.start_regex(extra.container)
        remaining = [l for l in remaining if not start.match(l)]
    detection.share = covered / best.considered
    if detection.share < MIN_SHARE and not forced:   # the readers together start too few lines
        return Detection(GENERIC, None, detection.share, len(lines))
    return detection


# A stream that mixes sources: readers after the first are kept for at least this many sampled
# lines (and this share of them) that no earlier reader starts.
MIN_EXTRA_LINES = 2
MIN_EXTRA_SHARE = 0.01
MAX_EXTRA_READERS = 4
MIN_SHARE_CONTAINER = 0.5


@dataclass
class _Candidate:
    score: float
    layout: Layout
    container: Container | None
    starts: int          # lines it starts
    considered: int      # lines it starts or that continue no record

    @property
    def share(self) -> float:
        return self.starts / self.considered


def _best_reader(lines: list[bytes], shaped: list[bool], options: list[Layout], layouts: LayoutSet,
                 container_share: float) -> _Candidate | None:
    """The reader that reads ``lines`` best (``shaped``: which of them have a continuation
    shape); container prefixes are tried when at least ``container_share`` of the lines carry
    them (and at least one does)."""
    containers: list[Container | None] = [None]
    for candidate in layouts.containers:
        rx = candidate.compiled_bytes()
        carrying = sum(1 for l in lines if rx.match(l))
        if carrying and carrying >= container_share * len(lines):
            containers.append(candidate)
    unshaped = len(lines) - sum(shaped)
    best: _Candidate | None = None
    for container in containers:
        strip = container.compiled() if container else None
        for layout in options:
            flags = _start_flags(layout.start_regex(container), lines, shaped, best.score if best else None)
            if flags is None:
                continue
            starts = [l for l, f in zip(lines, flags) if f]
            if not starts:
                continue
            # Lines that start a record although they look like continuations (a layout that
            # begins with a right-padded level, " INFO") count once.
            considered = unshaped + sum(1 for f, s in zip(flags, shaped) if f and s)
            share = len(starts) / considered
            probe = [l.decode("utf-8", "replace") for l in starts[:FULL_PROBE]]
            if strip is not None:
                probe = [strip.sub("", l, count=1) for l in probe]
            score = share + _fits(layout, probe, layouts.not_thread) / len(probe)
            if best is None or score > best.score + 1e-9:
                best = _Candidate(score, layout, container, len(starts), considered)
    return best


DETECT_BLOCK = 50  # sampled lines matched between two looks at whether a layout can still win


def _start_flags(rx: "regex.Pattern[bytes]", lines: list[bytes], shaped: list[bool],
                 to_beat: float | None) -> list[bool] | None:
    """Which lines the start regex matches; None as soon as the layout cannot score above
    ``to_beat`` (a score is a share of lines started plus a fit of at most 1): most of the shipped
    layouts start none of a file's lines, and 42 layouts x 400 lines was most of detection."""
    flags: list[bool] = []
    started = missed = 0
    for at in range(0, len(lines), DETECT_BLOCK):
        block = [rx.match(l) is not None for l in lines[at:at + DETECT_BLOCK]]
        flags += block
        started += sum(block)
        # A line that starts no record and has no continuation shape counts against the share.
        missed += sum(1 for f, s in zip(block, shaped[at:at + DETECT_BLOCK]) if not f and not s)
        if to_beat is not None and missed:
            best_started = started + len(lines) - len(flags)
            if best_started / (best_started + missed) + 1.0 <= to_beat + 1e-9:
                return None
    return flags


@lru_cache(maxsize=8)
def _continuation_regex_cached(shapes: tuple[str, ...], prefixes: tuple[str, ...]) -> "regex.Pattern[bytes]":
    prefix = ("(?:" + "|".join(p[1:] if p.startswith("^") else p for p in prefixes) + ")?") if prefixes else ""
    return regex.compile(("^" + prefix + "(?:" + "|".join(shapes) + ")").encode(), regex.MULTILINE)


def _continuation_regex(layouts: LayoutSet) -> "regex.Pattern[bytes]":
    """Lines that continue a record (layouts.toml [continuation]), behind any container prefix."""
    if not layouts.continuation_shapes:
        return regex.compile(rb"(?!)")
    return _continuation_regex_cached(layouts.continuation_shapes, tuple(c.regex_source for c in layouts.containers))


def identify_line(line: bytes, layouts: LayoutSet) -> tuple[Layout, Container | None] | None:
    """The shipped layout (and container prefix) that reads one line best: for a record that none
    of its file's readers starts. None when no layout reads it."""
    best = _best_reader([line], [False], layouts.layouts, layouts, 1.0)
    return (best.layout, best.container) if best is not None else None


def _fits(layout: Layout, probe: list[str], not_thread) -> float:
    """The layout's fit summed over the probe lines, within a time bound (``DETECT_SLOW``)."""
    total, slow = 0.0, 0
    for line in probe:
        before = regex_guard.timeouts()
        total += layout.fit(line, not_thread, DETECT_TIMEOUT_S)
        if regex_guard.timeouts() != before:
            slow += 1
            if slow >= DETECT_SLOW:
                break
    return total
