"""Pattern packs: versioned TOML data that turns a Kafka message into an event.

A pack holds patterns under stable dotted ids. Each pattern names the event it yields, a cheap
literal ``gate`` that every line of the pattern contains, and one or more regex ``variants``
keyed by logger and Kafka version range (wording that changed between versions is a variant of
the same id). ``scan`` lists the literals the chunk scanner looks for in raw bytes (message,
log-context prefix or logger name): a record no scan literal hits is never looked at, so every
line a pattern is meant for must hold one of them (``patterns check`` verifies it on the samples).
Among the patterns whose gates a line holds, higher ``priority`` (default 0) and then longer
gates are tried first.
Scan literals cost one pass over every chunk each: keep them few and shared.

A pattern reads the first line of a record's message and its match begins there, so no line that
follows a record can unmake or make its event. A pattern whose regex spans lines (it holds a
newline, a tab, the s flag or "any character including newlines" before the optional "anything
on later lines" tail the generated packs end with) also reads the record's continuation lines
(``Variant.spans``), and its gate may be on one of them. The fixed words a spanning regex puts at
the start of an unindented line (2.4's "revoked partitions: ") or at the end of the line before
a listing of its arguments ("to clients as:") tell the reader which lines continue a record
(``PackSet.line_openers``, ``PackSet.listing_heads``). ``whole = true`` says the gate is the
message's whole first line: a line that only holds it ("[ReplicaFetcher ...] Starting" holds
"Starting") is no candidate, so no near miss. ``reads = "exception"`` lets a pattern
read the exception lines of the record's stack trace too, for an event Kafka states there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Callable
from pathlib import Path

import regex

from .paths import patterns_dir
from .regex_cache import compiled_regexes
from .regex_guard import REGEX_TIMEOUT_S  # re-exported: a pathological record must not hang a regex
from .schema import CAPTURE_COLUMNS
from .toml import DataFileError, load_toml

_GROUP_NAME = regex.compile(r"\(\?P<(\w+)>")
_ATTR_NAME = regex.compile(r"^[a-z][a-z0-9_]*$")   # compiled once: ~1,500 capture names per load
_ID = regex.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$")
_EVENT = regex.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$")
# The tail the generated packs end with: whatever follows the first line is allowed, not read.
ANY_TAIL = r"\s*(?:\n[\s\S]*)?$"
_SPANS = regex.compile(r"\\n|\n|\\t|\t|\(\?[a-zA-Z]*s[a-zA-Z]*[):]|\[\\s\\S\]")
# A negated class that names the newline ([^\n], a tempered id capture's) never reads past the first line.
_NEGATED_CLASS = regex.compile(r"\[\^(?:\\.|[^\]\\])*\]")
MIN_OPENER = 4
MIN_HEAD, MAX_HEAD = 12, 60
# What a pattern reads besides the first line of the message: "exception" for an event that Kafka
# states in the exception a record carries ("StreamsException: ... Failed to rebalance.").
READS = ("message", "exception")
_VERSION_RANGE = regex.compile(r"^\s*(?:[<>]=?|==)\s*\d+(?:\.\d+){0,2}\s*(?:,\s*(?:[<>]=?|==)\s*\d+(?:\.\d+){0,2}\s*)*$")


class PackError(DataFileError):
    pass


@dataclass
class Sample:
    line: str
    expect: dict[str, object] = field(default_factory=dict)


@dataclass
class Variant:
    pattern_id: str
    index: int
    event: str
    gate: str
    regex_source: str
    loggers: tuple[str, ...]
    kafka: str
    level: str | None
    pack: str
    pack_version: str
    component: str
    constants: dict[str, str]
    samples: list[Sample]
    source_file: str
    dump: bool = False        # the record is a key = value dump (ConsumerConfig values:)
    library: str | None = None  # the non-Java client library whose lines the pack reads (pack key `library`)
    priority: int = 0         # tried before patterns of lower priority whose gates the body also holds
    reads: str = "message"    # "exception": also reads the exception lines of the record's stack trace
    whole: bool = False       # the gate is the message's whole first line (a StreamThread's bare "Starting")
    _compiled: "regex.Pattern[str] | None" = field(repr=False, default=None)
    # Fills this load's regexes from the regex cache, all at once (``_from_cache``); None once done.
    _cached: "Callable[[], None] | None" = field(repr=False, default=None, compare=False)

    @property
    def compiled(self) -> "regex.Pattern[str]":
        # The shipped packs hold ~900 regexes and most are never tried on a given input:
        # compiling on first use keeps start-up cheap (CI compiles them all: patterns check).
        if self._compiled is None:
            if self._cached is not None:
                self._cached()
            if self._compiled is None:
                self._compiled = regex.compile(self.regex_source)
        return self._compiled

    @cached_property
    def specificity(self) -> tuple:
        """Sort key among variants whose gates a line holds: higher priority, then longer gate."""
        return (-self.priority, -len(self.gate), self.pattern_id, self.index)

    @cached_property
    def logger_classes(self) -> frozenset[str]:
        return frozenset(l.rsplit(".", 1)[-1] for l in self.loggers)

    @cached_property
    def informative_range(self) -> bool:
        """Whether the variant's Kafka range says more than "any version we read"."""
        return "<" in self.kafka or not regex.fullmatch(r"\s*>=\s*(?:0|1|2\.[0-4])(?:\.\d+)*\s*", self.kafka)

    @cached_property
    def reads_exception(self) -> bool:
        return self.reads == "exception"

    @cached_property
    def reads_first_line_only(self) -> bool:
        """Whether the regex reads the message's first line and nothing else."""
        return not self.spans and not self.reads_exception

    @cached_property
    def spans(self) -> bool:
        """Whether the regex reads past the first line of the message (a template that spans lines)."""
        return bool(_SPANS.search(_NEGATED_CLASS.sub("_", _without_tail(self.regex_source))))

    @cached_property
    def line_openers(self) -> tuple[str, ...]:
        """The fixed words that start the unindented lines of a spanning template
        (``now assigned partitions: `` in 2.4's "Updating assignment with"), so that the reader
        keeps those lines in the record; indented lines are kept anyway."""
        return self._around_newlines[0]

    @cached_property
    def listing_heads(self) -> tuple[str, ...]:
        """The fixed words that end a spanning template's line after which a line of its own
        arguments follows (``Final assignment of partitions to consumers:`` then ``{c1=[t-0]}``):
        the reader keeps the line after such a line in the record, whatever it looks like."""
        return self._around_newlines[1]

    @cached_property
    def _around_newlines(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if not self.spans:
            return (), ()
        tokens = _regex_tokens(_without_tail(self.regex_source))
        openers, heads = [], []
        for i, (kind, _) in enumerate(tokens):
            if kind != "newline":
                continue
            after = _literal_run(tokens[i + 1:])
            if after and len(after) >= MIN_OPENER and not after[0].isspace():
                openers.append(after)
            elif not after and i + 1 < len(tokens):
                before = _literal_run(tokens[:i][::-1])[::-1].strip()[-MAX_HEAD:]
                if len(before) >= MIN_HEAD:
                    heads.append(before)
        return tuple(dict.fromkeys(openers)), tuple(dict.fromkeys(heads))

    @property
    def label(self) -> str:
        return f"{self.pattern_id}[{self.index}]"


@dataclass
class Pattern:
    id: str
    event: str
    gate: str
    doc: str
    variants: list[Variant]
    pack: str
    source_file: str


@dataclass
class PackSet:
    """All loaded packs, compiled for matching."""

    patterns: dict[str, Pattern]
    versions: dict[str, str]              # pack name -> version
    scan_keys: tuple[str, ...]
    files: list[str]
    problems: list[str] = field(default_factory=list)  # non-fatal findings of validation
    # The scan literals of the packs without a `library` (Kafka's Java clients, broker, Connect,
    # Streams): what a unit read with Java layouts only is scanned for.
    java_scan_keys: tuple[str, ...] = ()
    # (logger name prefix, library) of the client packs that state their loggers (pack key `loggers`): the
    # library of a line another library's pack also reads (the same template in both) is the logger's.
    library_loggers: tuple[tuple[str, str], ...] = ()

    def variants(self) -> list[Variant]:
        return [v for p in self.patterns.values() for v in p.variants]

    def compile_cached(self) -> None:
        """Every regex the cache holds compiled, now (the reading's toolkit: before ``--jobs`` workers fork)."""
        for variant in self.variants():
            if variant._cached is not None:
                variant._cached()
                return

    def line_openers(self) -> tuple[str, ...]:
        """Every spanning template's fixed line openers (``Variant.line_openers``), sorted."""
        return tuple(sorted({o for v in self.variants() for o in v.line_openers}))

    def listing_heads(self) -> tuple[str, ...]:
        """Every spanning template's listing heads (``Variant.listing_heads``), sorted."""
        return tuple(sorted({h for v in self.variants() for h in v.listing_heads}))


def _without_tail(source: str) -> str:
    return source[:-len(ANY_TAIL)] if source.endswith(ANY_TAIL) else source


_META = set("()|.*+?{}^$")


def _regex_tokens(source: str) -> list[tuple[str, str]]:
    """A regex source as ("newline" | "literal" | "meta", text) tokens: a literal is a character
    the regex requires as it is; a character class, escape class, group or quantified character
    is meta (a quantifier turns the literal before it into meta)."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source):
            escaped = source[i + 1]
            i += 2
            if escaped == "n":
                tokens.append(("newline", "\n"))
            elif escaped == "t":
                tokens.append(("literal", "\t"))
            elif escaped.isalnum():
                tokens.append(("meta", escaped))
            else:
                tokens.append(("literal", escaped))
            continue
        if char == "[":  # a character class, up to its closing bracket
            j = i + 1
            if j < len(source) and source[j] == "^":
                j += 1
            if j < len(source) and source[j] == "]":
                j += 1
            while j < len(source) and source[j] != "]":
                j += 2 if source[j] == "\\" else 1
            tokens.append(("meta", source[i:j + 1]))
            i = j + 1
            continue
        i += 1
        if char in "*+?{" and tokens and tokens[-1][0] != "meta":
            tokens[-1] = ("meta", tokens[-1][1])
        if char == "\n":
            tokens.append(("newline", char))
        elif char in _META:
            tokens.append(("meta", char))
        else:
            tokens.append(("literal", char))
    return tokens


def _literal_run(tokens: list[tuple[str, str]]) -> str:
    run = []
    for kind, text in tokens:
        if kind != "literal":
            break
        run.append(text)
    return "".join(run)


def default_pack_dirs() -> list[Path]:
    return [patterns_dir() / "packs"]


def load_packs(extra_dirs: list[Path] | None = None, include_default: bool = True,
               compile_all: bool = False) -> PackSet:
    """Load and validate every pack; raise PackError listing each problem with file and id.

    The regexes of the shipped packs come compiled from the cache (``regex_cache``), or are
    compiled on first use when there is none, unless ``compile_all``; those of extra packs (a
    user's own) are always compiled here, so a broken one is reported at once."""
    shipped = {str(d) for d in default_pack_dirs()} if include_default else set()
    dirs = (default_pack_dirs() if include_default else []) + list(extra_dirs or [])
    files: list[Path] = []
    for directory in dirs:
        directory = Path(directory)
        if directory.is_file():
            files.append(directory)
        elif directory.is_dir():
            files.extend(sorted(directory.glob("*.toml")))
        else:
            raise PackError(f"{directory}: no such pack file or directory")
    errors: list[str] = []
    patterns: dict[str, Pattern] = {}
    versions: dict[str, str] = {}
    scan: list[str] = []
    java_scan: list[str] = []
    library_loggers: list[tuple[str, str]] = []
    for file in files:
        try:
            data = load_toml(file)
        except DataFileError as exc:
            errors.append(str(exc))
            continue
        eager = compile_all or str(file.parent) not in shipped
        _read_pack(file, data, patterns, versions, scan, errors, eager)
        if not data.get("library") and isinstance(data.get("scan"), list):
            java_scan.extend(k for k in data["scan"] if isinstance(k, str))
        if isinstance(data.get("library"), str) and isinstance(data.get("loggers"), list):
            library_loggers.extend((str(prefix), data["library"]) for prefix in data["loggers"])
    scan_keys = tuple(dict.fromkeys(scan))
    if errors:
        raise PackError("invalid pattern packs:\n  " + "\n  ".join(errors))
    packs = PackSet(patterns, versions, scan_keys, [str(f) for f in files],
                    java_scan_keys=tuple(k for k in dict.fromkeys(java_scan) if k in scan_keys),
                    library_loggers=tuple(sorted(library_loggers, key=lambda p: -len(p[0]))))
    lazy = [v for v in packs.variants() if v._compiled is None]
    if lazy:
        fill = _from_cache(lazy)
        for variant in lazy:
            variant._cached = fill
    return packs


def _from_cache(variants: list[Variant]) -> Callable[[], None]:
    """What gives the variants their regexes compiled from the cache (``regex_cache``), called by the first
    one asked for its regex (``Variant.compiled``) or by ``PackSet.compile_cached``: unpickling them all
    takes ~25 ms, which a run that reads nothing (an empty file) or only checks its options does not need."""
    def fill() -> None:
        for variant in variants:
            variant._cached = None
        compiled = compiled_regexes(v.regex_source for v in variants)
        for variant in variants if compiled else ():
            if variant._compiled is None:
                variant._compiled = compiled.get(variant.regex_source)
    return fill


def _read_pack(file: Path, data: dict, patterns: dict[str, Pattern], versions: dict[str, str],
               scan: list[str], errors: list[str], eager: bool = True) -> None:
    where = str(file)
    name, version = data.get("pack"), data.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        errors.append(f"{where}: a pack needs string keys 'pack' and 'version'")
        return
    if name in versions:
        errors.append(f"{where}: pack name {name!r} is used by another pack file")
    versions[name] = version
    component = data.get("component", "client")
    keys = data.get("scan", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and len(k) >= 4 for k in keys):
        errors.append(f"{where}: 'scan' must be a list of literals of 4 or more characters")
    else:
        scan.extend(keys)
    patterns_table = data.get("patterns") or {}
    if not isinstance(patterns_table, dict):
        errors.append(f"{where}: 'patterns' must be a table of patterns")
        return
    for pattern_id, body in patterns_table.items():
        at = f"{where}: {pattern_id}"
        try:
            _read_pattern(at, pattern_id, body, patterns, name, version, component, where, errors, eager,
                          data.get("library"))
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            # A value of the wrong type (a number for a table, a string for a list): the
            # pack is wrong, not the tool; say where.
            errors.append(f"{at}: a value has the wrong type ({type(exc).__name__}: {exc})")


def _read_pattern(at: str, pattern_id: str, body, patterns: dict, name: str, version: str, component: str,
                  where: str, errors: list[str], eager: bool, library: str | None) -> None:
    if not isinstance(body, dict):
        errors.append(f"{at}: a pattern is a table")
        return
    if not _ID.match(pattern_id):
        errors.append(f"{at}: pattern ids are lower-case dotted names (like broker.rebalance.prepare)")
        return
    if pattern_id in patterns:
        errors.append(f"{at}: duplicate pattern id (also in {patterns[pattern_id].source_file})")
        return
    event, gate = body.get("event"), body.get("gate")
    if not isinstance(event, str) or not _EVENT.match(event):
        errors.append(f"{at}: 'event' must be a dotted event name")
        return
    if not isinstance(gate, str) or len(gate) < 4:
        errors.append(f"{at}: 'gate' must be a literal of 4 or more characters")
        return
    if body.get("reads", "message") not in READS:
        errors.append(f"{at}: 'reads' is one of {', '.join(map(repr, READS))}")
        return
    if not isinstance(body.get("whole", False), bool):
        errors.append(f"{at}: 'whole' is true or false")
        return
    constants = {str(k): str(v) for k, v in (body.get("set") or {}).items()}
    variants = []
    for index, raw in enumerate(body.get("variants") or []):
        variant = _read_variant(at, pattern_id, index, raw, event, gate, name, version,
                                body.get("component", component), constants, where, errors, eager)
        if variant is not None:
            variant.dump = bool(body.get("dump", False))
            variant.library = library
            variant.priority = int(body.get("priority", 0))
            variant.reads = body.get("reads", "message")
            variant.whole = body.get("whole", False)
            variants.append(variant)
    if not variants:
        errors.append(f"{at}: a pattern needs at least one valid variant")
        return
    patterns[pattern_id] = Pattern(pattern_id, event, gate, body.get("doc", ""), variants, name, where)


def _read_variant(at: str, pattern_id: str, index: int, raw: dict, event: str, gate: str, pack: str,
                  version: str, component: str, constants: dict[str, str], where: str,
                  errors: list[str], eager: bool = True) -> Variant | None:
    at = f"{at} variant {index}"
    source = raw.get("regex")
    if not isinstance(source, str):
        errors.append(f"{at}: 'regex' is missing")
        return None
    compiled = None
    if eager:
        try:
            compiled = regex.compile(source)
        except regex.error as exc:
            errors.append(f"{at}: regex does not compile: {exc}")
            return None
    for name in (compiled.groupindex if compiled is not None else _GROUP_NAME.findall(source)):
        if name.startswith("_"):
            continue
        if name not in CAPTURE_COLUMNS and not _ATTR_NAME.match(name):
            errors.append(f"{at}: capture name {name!r} is neither an events column nor a lower-case attr name")
    kafka = raw.get("kafka", ">=0.10")
    if not _VERSION_RANGE.match(kafka):
        errors.append(f"{at}: kafka range {kafka!r} is not like '>=2.4,<3.0'")
    loggers = raw.get("logger", [])
    loggers = (loggers,) if isinstance(loggers, str) else tuple(loggers)
    samples = []
    for sample in raw.get("samples", []):
        if isinstance(sample, str):
            samples.append(Sample(sample))
        elif isinstance(sample, dict) and isinstance(sample.get("line"), str):
            samples.append(Sample(sample["line"], dict(sample.get("expect") or {})))
        else:
            errors.append(f"{at}: a sample is a string or a table with 'line' and optional 'expect'")
    return Variant(pattern_id, index, event, gate, source, loggers, kafka, raw.get("level"), pack,
                   version, component, constants, samples, where, _compiled=compiled)


@lru_cache(maxsize=8192)
def version_in_range(version: str | None, spec: str) -> bool:
    """Whether a Kafka version like 3.6.0 satisfies a range like '>=3.0,<3.6'.

    Cached: every work unit asks it again for the releases and ranges of the patterns it met."""
    if not version:
        return True
    have = _version_tuple(version)
    for clause in spec.split(","):
        clause = clause.strip()
        op = regex.match(r"[<>]=?|==", clause)
        if not op:
            continue
        want = _version_tuple(clause[op.end():])
        ok = {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want,
              "==": have == want}[op.group()]
        if not ok:
            return False
    return True


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = regex.findall(r"\d+", text)[:3]
    return tuple(int(p) for p in parts) + (0,) * (3 - len(parts))
