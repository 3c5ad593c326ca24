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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import regex

from .paths import patterns_dir
from .regex_cache import compiled_regexes
from .regex_guard import REGEX_TIMEOUT_S  # re-exported: a pathological record must not hang a regex
from .schema import CAPTURE_COLUMNS
from .toml import DataFileError, load_toml

_GROUP_NAME = regex.compile(r"\(\?P<(\w+)>")
_ID = regex.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$")
_EVENT = regex.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$")
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
    priority: int = 0         # tried before patterns of lower priority whose gates the body also holds
    _compiled: "regex.Pattern[str] | None" = field(repr=False, default=None)

    @property
    def compiled(self) -> "regex.Pattern[str]":
        # The shipped packs hold ~900 regexes and most are never tried on a given input:
        # compiling on first use keeps start-up cheap (CI compiles them all: patterns check).
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

    def variants(self) -> list[Variant]:
        return [v for p in self.patterns.values() for v in p.variants]


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
    for file in files:
        try:
            data = load_toml(file)
        except DataFileError as exc:
            errors.append(str(exc))
            continue
        eager = compile_all or str(file.parent) not in shipped
        _read_pack(file, data, patterns, versions, scan, errors, eager)
    scan_keys = tuple(dict.fromkeys(scan))
    if errors:
        raise PackError("invalid pattern packs:\n  " + "\n  ".join(errors))
    packs = PackSet(patterns, versions, scan_keys, [str(f) for f in files])
    lazy = [v for v in packs.variants() if v._compiled is None]
    if lazy and (compiled := compiled_regexes(v.regex_source for v in lazy)):
        for variant in lazy:
            variant._compiled = compiled.get(variant.regex_source)
    return packs


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
            _read_pattern(at, pattern_id, body, patterns, name, version, component, where, errors, eager)
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            # A value of the wrong type (a number for a table, a string for a list): the
            # pack is wrong, not the tool; say where.
            errors.append(f"{at}: a value has the wrong type ({type(exc).__name__}: {exc})")


def _read_pattern(at: str, pattern_id: str, body, patterns: dict, name: str, version: str, component: str,
                  where: str, errors: list[str], eager: bool) -> None:
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
    constants = {str(k): str(v) for k, v in (body.get("set") or {}).items()}
    variants = []
    for index, raw in enumerate(body.get("variants") or []):
        variant = _read_variant(at, pattern_id, index, raw, event, gate, name, version,
                                body.get("component", component), constants, where, errors, eager)
        if variant is not None:
            variant.dump = bool(body.get("dump", False))
            variant.priority = int(body.get("priority", 0))
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
        if name not in CAPTURE_COLUMNS and not regex.match(r"^[a-z][a-z0-9_]*$", name):
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
